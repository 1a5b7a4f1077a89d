"""OpenAI Responses: the response parser, JSON bodies and server-sent events (SPEC P1, M2, M4, U1).

Response side (JSON and event stream):

* ``message`` items' ``output_text`` (and ``refusal``) parts become text; ``function_call``
  items become tool calls with ``id`` = ``call_id`` and ``arguments`` = the UTF-8 bytes of the
  decoded ``arguments`` string (M2; ``custom_tool_call`` ``input`` likewise). The item ``id``
  (``msg_``, ``fc_``) and ``status`` never enter the history (M4).
* When the response holds a ``reasoning`` item, ``ParsedResponse.carry`` is every output item
  exactly as received (each item's bytes in the body, or in its ``response.output_item.done``
  event); the runner sends them in place of that assistant message's items for the rest of the
  turn and drops them when it ends. Cache cost: the next turn's input differs from the carried
  request at that message, so the cached prefix ends there and the tail is read again uncached
  once per turn.
* Other items (``web_search_call``, ``file_search_call``, ``code_interpreter_call``, MCP, …)
  are left out and named in the notes; each ``web_search_call`` counts one web search.
* Usage (PROVIDER-RULES §2.2): ``input`` = ``input_tokens`` − ``cached_tokens`` −
  ``cache_write_tokens``; ``cache_read`` = ``cached_tokens``; ``cache_write`` =
  ``cache_write_tokens``; ``output`` = ``output_tokens``.
* Stop (:func:`map_status`): ``completed`` → ``tool_use`` with function calls, else
  ``end_turn``; ``incomplete`` → ``max_tokens`` / ``refusal``; ``failed`` raises
  :class:`~llmcore.errors.APIStatusError`; ``queued`` / ``in_progress`` → ``other``.
* Streams must end with ``response.completed`` / ``response.incomplete``; an ``error`` event or
  ``response.failed`` raises :class:`~llmcore.errors.APIStatusError`; an unknown event type
  raises :class:`~llmcore.errors.ResponseParseError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from llmcore import jsonbytes
from llmcore.errors import APIStatusError, ResponseParseError
from llmcore.messages import Text, ToolCall, clean_text
from llmcore.providers import _parse_common as pc
from llmcore.providers._jsonspan import find_span
from llmcore.providers._sse import SSEEvent
from llmcore.providers.base import (
    Endpoint,
    ParsedResponse,
    StopReason,
)
from llmcore.usage import Usage

# (https://platform.openai.com/docs/api-reference/responses/object,
# https://platform.openai.com/docs/api-reference/responses-streaming)

ENDPOINT: Final = Endpoint(
    base_url="https://api.openai.com",
    path="/v1/responses",
    api_key_env="OPENAI_API_KEY",
    auth="bearer",
)
"""The Responses endpoint."""

_NAME: Final = "openai-responses"


@dataclass(slots=True)
class _Output:
    """What the output items of one response give."""

    content: list[Text | ToolCall] = field(default_factory=list)
    raw_items: list[str] = field(default_factory=list)
    reasoning: bool = False
    notes: list[str] = field(default_factory=list)
    searches: int = 0


def _need_str(item: dict[str, Any], key: str, at: str) -> str:
    value = item.get(key)
    if not isinstance(value, str):
        raise ResponseParseError(f"{at}.{key} must be a string", provider=_NAME)
    return value


def _message_item(item: dict[str, Any], at: str, out: _Output) -> None:
    parts = item.get("content") or []
    if not isinstance(parts, list):
        raise ResponseParseError(f"{at}.content must be an array", provider=_NAME)
    for index, part in enumerate(parts):
        where = f"{at}.content[{index}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("output_text", "refusal"):
            text = _need_str(part, "text" if kind == "output_text" else "refusal", where)
            out.content.extend([Text(text=text)] if text else [])
        else:
            out.notes.append(f"{where}: left out a {kind!r} part")


def _output_item(item: Any, raw: str, at: str, out: _Output) -> None:
    """Add one output item: text, a tool call, a carried reasoning item, or a note."""
    if not isinstance(item, dict) or not isinstance(item.get("type"), str):
        raise ResponseParseError(f"{at} must be an object with a type", provider=_NAME)
    kind = item["type"]
    out.raw_items.append(raw)
    if kind == "message":
        _message_item(item, at, out)
    elif kind in ("function_call", "custom_tool_call"):
        raw_args = _need_str(item, "arguments" if kind == "function_call" else "input", at)
        call_id, name = _need_str(item, "call_id", at), _need_str(item, "name", at)
        arguments = clean_text(raw_args).encode("utf-8")
        out.content.append(ToolCall(id=call_id, name=name, arguments=arguments))
    elif kind == "reasoning":
        out.reasoning = True
    else:
        out.searches += kind == "web_search_call"
        out.notes.append(f"{at}: left out a {kind} item (provider-only, M4)")


def parse_response_body(body: bytes) -> ParsedResponse:
    """Parse a non-streamed Responses body (status 200).

    Raises:
        ResponseParseError: Not JSON, no ``output`` array, or malformed items.
        APIStatusError: A ``failed`` response, or an error object.
    """
    obj = pc.load_object(body, _NAME, "response body")
    if "output" not in obj and isinstance(obj.get("error"), dict):
        raise _error_event(obj, obj)
    out = _Output()
    for index, item in enumerate(pc.need_list(obj, "output", _NAME, "$")):
        begin, end = find_span(body, ("output", index))
        _output_item(item, body[begin:end].decode("utf-8"), f"$.output[{index}]", out)
    return _finish(obj, out)


def _finish(obj: dict[str, Any], out: _Output) -> ParsedResponse:
    status = obj.get("status")
    if status == "failed":
        raise _error_event(obj.get("error") or {}, obj)
    details = obj.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, dict) else None
    raw_stop = reason if status == "incomplete" and isinstance(reason, str) else status
    has_calls = any(isinstance(p, ToolCall) for p in out.content)
    usage = obj.get("usage")
    return ParsedResponse(
        content=tuple(out.content),
        carry=tuple(out.raw_items) if out.reasoning else (),
        stop_reason=map_status(status if isinstance(status, str) else None, reason, has_calls),
        raw_stop_reason=raw_stop if isinstance(raw_stop, str) else None,
        usage=parse_usage(usage if isinstance(usage, dict) else {}, out.searches),
        model=obj.get("model") if isinstance(obj.get("model"), str) else None,
        response_id=obj.get("id") if isinstance(obj.get("id"), str) else None,
        notes=tuple(out.notes),
    )


_TERMINAL: Final = frozenset({"response.completed", "response.incomplete", "response.failed"})
_STARTS: Final = frozenset({"response.created", "response.in_progress", "response.queued"})
_IGNORED: Final = (
    "response.output_item.added",
    "response.content_part.",
    "response.output_text.",
    "response.refusal.",
    "response.function_call_arguments.",
    "response.custom_tool_call_input.",
    "response.reasoning_summary_part.",
    "response.reasoning_summary_text.",
    "response.reasoning_text.",
    "response.web_search_call.",
    "response.file_search_call.",
    "response.code_interpreter_call",
    "response.image_generation_call.",
    "response.mcp_",
    "response.audio.",
)


class ResponsesStreamParser:
    """Builds a :class:`ParsedResponse` from Responses stream events.

    Items come from ``response.output_item.done`` (each complete; a carried reasoning item is
    the exact text of ``item`` in the event's data), status and usage from the terminal
    ``response.completed`` / ``response.incomplete`` event (``response.failed`` and ``error``
    raise). Delta events are checked for type and otherwise skipped: the done item holds the
    same text and arguments.
    """

    def __init__(self) -> None:
        self._items: dict[int, tuple[Any, str]] = {}
        self._final: dict[str, Any] | None = None
        self._final_raw = b""

    def feed(self, event: SSEEvent) -> None:
        """Take the next event.

        Raises:
            ResponseParseError: Invalid JSON, an unknown event type, or events after the end.
            APIStatusError: An ``error`` event or ``response.failed``.
        """
        data = pc.load_object(event.data, _NAME, f"event {event.event!r}")
        kind = data.get("type")
        if kind == "error":
            raise _error_event(data, data)
        if self._final is not None:
            raise ResponseParseError(f"event {kind!r} after the response ended", provider=_NAME)
        if kind in _TERMINAL:
            self._final = pc.need_obj(data, "response", _NAME, str(kind))
            self._final_raw = event.data.encode("utf-8")
        elif kind == "response.output_item.done":
            index = pc.need_int(data, "output_index", _NAME, kind)
            raw = event.data.encode("utf-8")
            begin, end = find_span(raw, ("item",))
            self._items[index] = (data.get("item"), raw[begin:end].decode("utf-8"))
        elif kind not in _STARTS and not str(kind).startswith(_IGNORED):
            raise ResponseParseError(f"unknown stream event type {kind!r}", provider=_NAME)

    def finish(self) -> ParsedResponse:
        """Return the response.

        Raises:
            ResponseParseError: The stream ended before its terminal event (truncated).
            APIStatusError: The response failed.
        """
        if self._final is None:
            raise ResponseParseError(
                "event stream ended before response.completed (truncated)", provider=_NAME
            )
        pairs = [self._items[i] for i in sorted(self._items)]
        if not pairs:
            output = self._final.get("output") or []
            for index, item in enumerate(output if isinstance(output, list) else []):
                begin, end = find_span(self._final_raw, ("response", "output", index))
                pairs.append((item, self._final_raw[begin:end].decode("utf-8")))
        out = _Output()
        for index, (item, raw) in enumerate(pairs):
            _output_item(item, raw, f"output[{index}]", out)
        return _finish(self._final, out)


def parse_usage(usage: dict[str, Any], web_searches: int = 0) -> Usage:
    """Normalize a Responses ``usage`` object (PROVIDER-RULES §2.2).

    ``input_tokens`` includes ``input_tokens_details.cached_tokens`` and, where reported,
    ``cache_write_tokens``; both are taken out so ``input`` is uncached input.
    ``web_searches`` is the number of ``web_search_call`` items (Responses usage has no count).

    Raises:
        ResponseParseError: A count is not a non-negative integer.
    """
    details = usage.get("input_tokens_details")
    details = details if isinstance(details, dict) else None
    total = pc.opt_int(usage, "input_tokens", _NAME, "usage")
    read = pc.opt_int(details, "cached_tokens", _NAME, "usage.input_tokens_details")
    write = pc.opt_int(details, "cache_write_tokens", _NAME, "usage.input_tokens_details")
    return Usage(
        input=max(0, total - read - write),
        output=pc.opt_int(usage, "output_tokens", _NAME, "usage"),
        cache_read=read,
        cache_write=write,
        web_search_requests=web_searches,
    )


def map_status(status: str | None, reason: str | None, has_calls: bool) -> StopReason:
    """Map a response ``status`` (and ``incomplete_details.reason``) to a :data:`StopReason`.

    ``completed`` → ``tool_use`` when it has function calls, else ``end_turn``;
    ``incomplete`` → ``max_tokens`` (``max_output_tokens``) or ``refusal``
    (``content_filter``); anything else (``queued``, ``in_progress``, ``cancelled``) → ``other``.
    """
    if status == "completed":
        return "tool_use" if has_calls else "end_turn"
    if status == "incomplete":
        return {"max_output_tokens": "max_tokens", "content_filter": "refusal"}.get(
            reason or "", "other"
        )  # type: ignore[return-value]
    return "other"


_CODE_STATUS: Final = {
    "rate_limit_exceeded": 429,
    "server_error": 500,
    "invalid_prompt": 400,
    "invalid_request_error": 400,
}


def _error_event(error: dict[str, Any], whole: dict[str, Any]) -> APIStatusError:
    """Return the error an ``error`` event, an error object or a failed response stands for."""
    inner = error.get("error") if isinstance(error.get("error"), dict) else error
    assert isinstance(inner, dict)
    code = inner.get("code") if isinstance(inner.get("code"), str) else inner.get("type")
    message = inner.get("message")
    return pc.api_error(
        provider=_NAME,
        status=_CODE_STATUS.get(code if isinstance(code, str) else "", 500),
        body=jsonbytes.dumps(whole),
        headers={},
        error_type=code if isinstance(code, str) else None,
        message=f"error in a 200 response: {message if isinstance(message, str) else '?'}",
        request_id=None,
    )


def error_from_body(status: int, body: bytes, headers: Mapping[str, str]) -> APIStatusError:
    """Return the typed error for an HTTP error status (the Chat error shape; never raises)."""
    try:
        obj: Mapping[str, Any] = pc.load_object(body, _NAME, "error body")
    except ResponseParseError:
        obj = {}
    error = obj.get("error")
    error = error if isinstance(error, dict) else {}
    kind = error.get("type") if isinstance(error.get("type"), str) else error.get("code")
    message = error.get("message")
    return pc.api_error(
        provider=_NAME,
        status=status,
        body=body,
        headers=headers,
        error_type=kind if isinstance(kind, str) else None,
        message=message if isinstance(message, str) else None,
        request_id=pc.header(headers, "x-request-id"),
    )
