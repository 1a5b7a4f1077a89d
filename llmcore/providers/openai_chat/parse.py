"""OpenAI Chat Completions: the response parser, JSON bodies and server-sent events (P1, M2).

Response side (JSON and chunk stream; shared with OpenRouter):

* The first choice is read: ``content`` and ``refusal`` become text, ``tool_calls`` become
  tool calls whose ``arguments`` are the UTF-8 bytes of the decoded ``arguments`` string
  (M2; a ``custom`` tool call's ``input`` likewise). Other choices, and ``reasoning`` /
  ``reasoning_content`` / ``reasoning_details`` (M4), are left out and named in the notes.
* Streams: ``data:`` chunks until ``data: [DONE]``; text, refusal and each tool call's
  ``arguments`` deltas are concatenated by ``index``. No ``[DONE]`` means truncated
  (:class:`~llmcore.errors.ResponseParseError`); an ``error`` object in a chunk raises
  :class:`~llmcore.errors.APIStatusError` (status from its numeric ``code`` or its type, else
  500); an SSE event name other than ``message`` / ``error`` is refused.
* Usage (PROVIDER-RULES §2.2): ``input`` = ``prompt_tokens`` − ``cached_tokens`` −
  ``cache_write_tokens``; ``cache_read`` = ``cached_tokens``; ``cache_write`` =
  ``cache_write_tokens``; ``output`` = ``completion_tokens`` (reasoning included); a numeric
  ``usage.cost`` (OpenRouter, §3) is ``reported_cost``.
* ``finish_reason``: ``stop`` → ``end_turn``, ``tool_calls`` → ``tool_use``, ``length`` →
  ``max_tokens``, ``content_filter`` → ``refusal``. Errors: ``{"error": {"message", "type",
  "param", "code"}}`` with the ``x-request-id`` header.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from llmcore.errors import APIStatusError, ResponseParseError
from llmcore.messages import Text, ToolCall, clean_text
from llmcore.providers import _parse_common as pc
from llmcore.providers._sse import SSEEvent
from llmcore.providers.base import (
    Endpoint,
    ParsedResponse,
    StopReason,
)
from llmcore.usage import Usage

# (https://platform.openai.com/docs/api-reference/chat/object,
# https://platform.openai.com/docs/api-reference/chat-streaming). Shared with OpenRouter, which
# passes its own provider name and endpoint.

ENDPOINT: Final = Endpoint(
    base_url="https://api.openai.com",
    path="/v1/chat/completions",
    api_key_env="OPENAI_API_KEY",
    auth="bearer",
)
"""The Chat Completions endpoint."""

_NAME: Final = "openai-chat"
_DROPPED_DELTAS: Final = ("reasoning", "reasoning_content", "reasoning_details")


def _call(item: Any, at: str, provider: str) -> ToolCall:
    """Return a ``tool_calls[]`` entry as a tool call (arguments: the UTF-8 of the string)."""
    if not isinstance(item, dict):
        raise ResponseParseError(f"{at} must be an object", provider=provider)
    kind = item.get("type", "function")
    inner = item.get("custom") if kind == "custom" else item.get("function")
    if not isinstance(inner, dict):
        raise ResponseParseError(f"{at}.{kind} must be an object", provider=provider)
    raw = inner.get("input") if kind == "custom" else inner.get("arguments")
    call_id, name = item.get("id"), inner.get("name")
    if not isinstance(call_id, str) or not isinstance(name, str) or not isinstance(raw, str):
        raise ResponseParseError(f"{at} needs string id, name and arguments", provider=provider)
    return ToolCall(id=call_id, name=name, arguments=clean_text(raw).encode("utf-8"))


def _message_content(message: dict[str, Any], at: str, provider: str) -> list[Text | ToolCall]:
    content: list[Text | ToolCall] = []
    for key in ("content", "refusal"):
        value = message.get(key)
        if isinstance(value, str) and value:
            content.append(Text(text=value))
        elif value is not None and not isinstance(value, str):
            raise ResponseParseError(f"{at}.{key} must be a string or null", provider=provider)
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise ResponseParseError(f"{at}.tool_calls must be an array", provider=provider)
    content.extend(_call(item, f"{at}.tool_calls[{i}]", provider) for i, item in enumerate(calls))
    return content


def parse_completion(body: bytes, provider: str = _NAME) -> ParsedResponse:
    """Parse a non-streamed ``chat.completion`` body (status 200); the first choice is used.

    Raises:
        ResponseParseError: Not JSON, no choices, or malformed fields.
        APIStatusError: The body is an error object (OpenRouter sends some with status 200).
    """
    obj = pc.load_object(body, provider, "response body")
    if "error" in obj:
        raise _stream_error(obj, provider)
    choices = pc.need_list(obj, "choices", provider, "$")
    if not choices or not isinstance(choices[0], dict):
        raise ResponseParseError("$.choices has no first choice", provider=provider)
    message = pc.need_obj(choices[0], "message", provider, "$.choices[0]")
    content = _message_content(message, "$.choices[0].message", provider)
    notes = [f"left out {len(choices) - 1} more choices"] if len(choices) > 1 else []
    notes += [
        f"left out message.{k} (provider-only, M4)" for k in _DROPPED_DELTAS if message.get(k)
    ]
    usage = obj.get("usage")
    return _finish(obj, content, choices[0].get("finish_reason"), usage, notes, provider)


def _finish(
    obj: dict[str, Any],
    content: list[Text | ToolCall],
    finish: Any,
    usage: Any,
    notes: list[str],
    provider: str,
) -> ParsedResponse:
    raw_stop = finish if isinstance(finish, str) else None
    return ParsedResponse(
        content=tuple(content),
        stop_reason=map_finish_reason(raw_stop),
        raw_stop_reason=raw_stop,
        usage=parse_usage(usage if isinstance(usage, dict) else {}, provider),
        model=obj.get("model") if isinstance(obj.get("model"), str) else None,
        response_id=obj.get("id") if isinstance(obj.get("id"), str) else None,
        notes=tuple(notes),
    )


class _CallBuilder:
    __slots__ = ("arguments", "id", "kind", "name")

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.kind = "function"
        self.arguments: list[str] = []


class ChatStreamParser:
    """Builds a :class:`ParsedResponse` from ``chat.completion.chunk`` events.

    Text and refusal deltas are concatenated; tool calls are assembled by ``index`` (id and
    name from the first delta that has them, ``arguments`` concatenated); usage comes from the
    chunk that carries it (``stream_options.include_usage``). The stream must end with
    ``data: [DONE]``.

    Args:
        provider: The provider name for errors (``openai-chat`` or ``openrouter``).
    """

    def __init__(self, provider: str = _NAME) -> None:
        self._provider = provider
        self._head: dict[str, Any] = {}
        self._text: list[str] = []
        self._refusal: list[str] = []
        self._calls: dict[int, _CallBuilder] = {}
        self._finish: Any = None
        self._usage: Any = None
        self._dropped = False
        self._done = False

    def feed(self, event: SSEEvent) -> None:
        """Take the next event.

        Raises:
            ResponseParseError: Invalid JSON, an unknown event name, or data after ``[DONE]``.
            APIStatusError: An error chunk.
        """
        if event.event not in ("message", "error"):
            raise ResponseParseError(
                f"unknown stream event type {event.event!r}", provider=self._provider
            )
        if self._done:
            raise ResponseParseError("data after [DONE]", provider=self._provider)
        if event.data.strip() == "[DONE]":
            self._done = True
            return
        chunk = pc.load_object(event.data, self._provider, "stream chunk")
        if "error" in chunk or event.event == "error":
            raise _stream_error(chunk, self._provider)
        self._head = self._head or chunk
        if chunk.get("usage") is not None:
            self._usage = chunk["usage"]
        choices = chunk.get("choices") or []
        if not isinstance(choices, list):
            raise ResponseParseError("chunk choices must be an array", provider=self._provider)
        for choice in choices:
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                self._choice(choice)

    def _choice(self, choice: dict[str, Any]) -> None:
        if choice.get("finish_reason") is not None:
            self._finish = choice["finish_reason"]
        delta = choice.get("delta") or {}
        if not isinstance(delta, dict):
            raise ResponseParseError("chunk delta must be an object", provider=self._provider)
        for key, target in (("content", self._text), ("refusal", self._refusal)):
            if isinstance(delta.get(key), str):
                target.append(delta[key])
        self._dropped = self._dropped or any(delta.get(k) for k in _DROPPED_DELTAS)
        for item in delta.get("tool_calls") or []:
            self._call_delta(item)

    def _call_delta(self, item: Any) -> None:
        if not isinstance(item, dict) or not isinstance(item.get("index", 0), int):
            raise ResponseParseError("tool call delta needs an index", provider=self._provider)
        builder = self._calls.setdefault(item.get("index", 0), _CallBuilder())
        builder.id = builder.id or str(item.get("id") or "")
        builder.kind = str(item.get("type") or builder.kind)
        inner = item.get("custom") if builder.kind == "custom" else item.get("function")
        if isinstance(inner, dict):
            builder.name = builder.name or str(inner.get("name") or "")
            piece = inner.get("input") if builder.kind == "custom" else inner.get("arguments")
            if isinstance(piece, str):
                builder.arguments.append(piece)

    def finish(self) -> ParsedResponse:
        """Return the response.

        Raises:
            ResponseParseError: The stream ended before ``[DONE]`` (truncated), or a tool call
                never got its id or name.
        """
        if not self._done:
            raise ResponseParseError(
                "event stream ended before [DONE] (truncated)", provider=self._provider
            )
        content: list[Text | ToolCall] = []
        for parts in (self._text, self._refusal):
            if "".join(parts):
                content.append(Text(text="".join(parts)))
        for index in sorted(self._calls):
            built = self._calls[index]
            if not built.id or not built.name:
                raise ResponseParseError(
                    f"streamed tool call {index} has no id or name", provider=self._provider
                )
            arguments = clean_text("".join(built.arguments)).encode("utf-8")
            content.append(ToolCall(id=built.id, name=built.name, arguments=arguments))
        notes = ["left out reasoning deltas (provider-only, M4)"] if self._dropped else []
        return _finish(self._head, content, self._finish, self._usage, notes, self._provider)


def parse_usage(usage: dict[str, Any], provider: str = _NAME) -> Usage:
    """Normalize a Chat ``usage`` object (PROVIDER-RULES §2.2, §3).

    ``prompt_tokens`` includes ``prompt_tokens_details.cached_tokens`` and, where reported,
    ``cache_write_tokens``; both are taken out so ``input`` is uncached input. A numeric
    ``usage.cost`` (OpenRouter, US dollars) becomes ``reported_cost``.

    Raises:
        ResponseParseError: A count is not a non-negative integer.
    """
    details = usage.get("prompt_tokens_details")
    details = details if isinstance(details, dict) else None
    prompt = pc.opt_int(usage, "prompt_tokens", provider, "usage")
    read = pc.opt_int(details, "cached_tokens", provider, "usage.prompt_tokens_details")
    write = pc.opt_int(details, "cache_write_tokens", provider, "usage.prompt_tokens_details")
    cost = usage.get("cost")
    reported = float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None
    return Usage(
        input=max(0, prompt - read - write),
        output=pc.opt_int(usage, "completion_tokens", provider, "usage"),
        cache_read=read,
        cache_write=write,
        reported_cost=reported,
    )


_FINISH: Final[dict[str, StopReason]] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


def map_finish_reason(finish: str | None) -> StopReason:
    """Map a Chat ``finish_reason`` to the neutral :data:`StopReason` (unknown → ``other``)."""
    return _FINISH.get(finish or "", "other")


_TYPE_STATUS: Final = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "rate_limit_exceeded": 429,
    "insufficient_quota": 429,
    "server_error": 500,
}


def _error_fields(obj: Mapping[str, Any]) -> tuple[str | None, str | None, int | None]:
    """Return (type or code, message, numeric code) of an OpenAI/OpenRouter error object."""
    error = obj.get("error")
    if not isinstance(error, dict):
        return None, None, None
    kind = error.get("type") if isinstance(error.get("type"), str) else None
    code = error.get("code")
    if kind is None and isinstance(code, str):
        kind = code
    message = error.get("message") if isinstance(error.get("message"), str) else None
    number = code if isinstance(code, int) and not isinstance(code, bool) else None
    return kind, message, number


def _stream_error(obj: dict[str, Any], provider: str) -> APIStatusError:
    """Return the error an error object inside a 200 body or stream stands for."""
    kind, message, number = _error_fields(obj)
    status = number if number is not None and number >= 400 else _TYPE_STATUS.get(kind or "", 500)
    return pc.error_in_body(provider, status, obj, kind, message)


def error_from_body(
    status: int, body: bytes, headers: Mapping[str, str], provider: str = _NAME
) -> APIStatusError:
    """Return the typed error for an HTTP error status and its body (never raises).

    ``{"error": {"message", "type", "param", "code"}}``; the request id comes from the
    ``x-request-id`` header.
    """
    try:
        obj: Mapping[str, Any] = pc.load_object(body, provider, "error body")
    except ResponseParseError:
        obj = {}
    kind, message, _ = _error_fields(obj)
    return pc.api_error(
        provider=provider,
        status=status,
        body=body,
        headers=headers,
        error_type=kind,
        message=message,
        request_id=pc.header(headers, "x-request-id"),
    )
