"""Anthropic Messages: the response parser, JSON bodies and server-sent events (P1, M2, M4).

Response side (JSON and event stream; https://platform.claude.com/docs/en/api/messages,
https://platform.claude.com/docs/en/build-with-claude/streaming):

* ``text`` blocks become :class:`~llmcore.messages.Text` (citations are dropped, empty text is
  skipped); ``tool_use`` blocks become :class:`~llmcore.messages.ToolCall` whose ``arguments``
  are the exact byte span of ``input`` in the body, or for a stream the concatenated
  ``input_json_delta.partial_json`` strings (M2).
* ``thinking`` and ``redacted_thinking`` blocks go to ``ParsedResponse.carry`` (M4): the exact
  bytes of the block in a JSON body, or for a stream the block rebuilt from its deltas as
  ``{"type","thinking","signature"}``. The runner sends them back at the start of that
  assistant message for the rest of the turn (the API requires them with tool use,
  PROVIDER-RULES §1.8) and drops them when the turn ends. Cache cost: on models that keep
  prior-turn thinking (Opus 4.5+), the next turn's request differs at that assistant message,
  so the cached prefix ends just before it and everything after it is written again once.
* ``web_search_tool_result`` blocks enter as text (M4): ``Web search results:`` then one
  ``- title (url)`` line per result, or ``Web search failed: <error_code>``. Other server-tool
  blocks (``server_tool_use``, ``mcp_tool_use``, ``*_tool_result``, ``compaction``) never enter
  the history; each is named in ``ParsedResponse.notes``.
* Usage (PROVIDER-RULES §1.5): ``input`` = ``input_tokens`` (already uncached),
  ``cache_read`` = ``cache_read_input_tokens``, ``cache_write`` =
  ``cache_creation_input_tokens``, ``cache_write_1h`` =
  ``cache_creation.ephemeral_1h_input_tokens`` when reported and non-zero,
  ``web_search_requests`` = ``server_tool_use.web_search_requests``. In a stream,
  ``message_delta`` usage overrides the counts of ``message_start`` field by field.
* Errors (PROVIDER-RULES §1.10): ``{"type":"error","error":{"type","message"},"request_id"}``
  becomes :class:`~llmcore.errors.APIStatusError`; an ``error`` event mid-stream is raised the
  same way with the HTTP status its type stands for (``overloaded_error`` → 529, …). Unknown
  event, delta or block types, invalid JSON, and a stream without ``message_stop`` raise
  :class:`~llmcore.errors.ResponseParseError`.
"""

from __future__ import annotations

from collections.abc import Mapping
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

ENDPOINT: Final = Endpoint(
    base_url="https://api.anthropic.com",
    path="/v1/messages",
    api_key_env="ANTHROPIC_API_KEY",
    auth="x-api-key",
    headers=(("anthropic-version", "2023-06-01"),),
)
"""The Messages endpoint (https://platform.claude.com/docs/en/api/messages)."""

_NAME: Final = "anthropic"
_CARRIED: Final = frozenset({"thinking", "redacted_thinking"})


def _search_text(block: dict[str, Any]) -> Text:
    """Return a ``web_search_tool_result`` block as text (M4: search results enter as text)."""
    content = block.get("content")
    if isinstance(content, dict):
        return Text(text=f"Web search failed: {content.get('error_code', 'unknown error')}")
    lines = ["Web search results:"]
    for item in content if isinstance(content, list) else []:
        if isinstance(item, dict):
            lines.append(f"- {item.get('title') or ''} ({item.get('url') or ''})")
    return Text(text="\n".join(lines))


def _is_server_block(kind: str) -> bool:
    return kind in ("server_tool_use", "mcp_tool_use", "compaction") or kind.endswith(
        "_tool_result"
    )


def _simple_block(block: dict[str, Any], at: str) -> tuple[Text | None, str | None]:
    """Return (content, note) for a block that is neither a tool call nor carried."""
    kind = block.get("type")
    if not isinstance(kind, str):
        raise ResponseParseError(f"{at}.type must be a string", provider=_NAME)
    if kind == "text":
        text = block.get("text")
        if not isinstance(text, str):
            raise ResponseParseError(f"{at}.text must be a string", provider=_NAME)
        return (Text(text=text) if text else None), None
    if kind == "web_search_tool_result":
        return _search_text(block), None
    if _is_server_block(kind):
        return None, f"{at}: left out a {kind} block (provider-only, M4)"
    raise ResponseParseError(f"{at}: unknown content block type {kind!r}", provider=_NAME)


def _tool_call(block: dict[str, Any], arguments: bytes, at: str) -> ToolCall:
    call_id, name = block.get("id"), block.get("name")
    if not isinstance(call_id, str) or not isinstance(name, str):
        raise ResponseParseError(f"{at}: tool_use needs string id and name", provider=_NAME)
    return ToolCall(id=call_id, name=name, arguments=arguments)


def parse_message(body: bytes) -> ParsedResponse:
    """Parse a non-streamed Messages response body (status 200).

    Raises:
        ResponseParseError: Not JSON, not a message, or an unknown content block type.
        APIStatusError: The body is an error object.
    """
    obj = pc.load_object(body, _NAME, "response body")
    if obj.get("type") == "error":
        raise _error_event(obj)
    if obj.get("type") != "message":
        raise ResponseParseError(
            f"response body type is {obj.get('type')!r}, not 'message'", provider=_NAME
        )
    blocks = pc.need_list(obj, "content", _NAME, "$")
    content: list[Text | ToolCall] = []
    carry: list[str] = []
    notes: list[str] = []
    for index, block in enumerate(blocks):
        at = f"$.content[{index}]"
        if not isinstance(block, dict):
            raise ResponseParseError(f"{at} must be an object", provider=_NAME)
        if block.get("type") == "tool_use":
            begin, end = find_span(body, ("content", index, "input"))
            content.append(_tool_call(block, body[begin:end], at))
        elif block.get("type") in _CARRIED:
            begin, end = find_span(body, ("content", index))
            carry.append(body[begin:end].decode("utf-8"))
        else:
            part, note = _simple_block(block, at)
            content.extend([part] if part is not None else [])
            notes.extend([note] if note is not None else [])
    return _finish(obj, content, carry, notes, obj.get("stop_reason"), _usage_of(obj, "$"))


def _usage_of(obj: dict[str, Any], at: str) -> Usage:
    return parse_usage(pc.need_obj(obj, "usage", _NAME, at), f"{at}.usage")


def _finish(
    message: dict[str, Any],
    content: list[Text | ToolCall],
    carry: list[str],
    notes: list[str],
    stop: Any,
    usage: Usage,
) -> ParsedResponse:
    raw_stop = stop if isinstance(stop, str) else None
    return ParsedResponse(
        content=tuple(content),
        carry=tuple(carry),
        stop_reason=map_stop_reason(raw_stop),
        raw_stop_reason=raw_stop,
        usage=usage,
        model=message.get("model") if isinstance(message.get("model"), str) else None,
        response_id=message.get("id") if isinstance(message.get("id"), str) else None,
        notes=tuple(notes),
    )


class _Block:
    """One content block being assembled from stream events."""

    __slots__ = ("parts", "signature", "start")

    def __init__(self, start: dict[str, Any]) -> None:
        self.start = start
        self.parts: list[str] = []
        self.signature: list[str] = []
        initial = start.get("text") if start.get("type") == "text" else start.get("thinking")
        if isinstance(initial, str) and initial:
            self.parts.append(initial)


_DELTA_FIELDS: Final = {
    "text_delta": "text",
    "input_json_delta": "partial_json",
    "thinking_delta": "thinking",
    "signature_delta": "signature",
}
_IGNORED_DELTAS: Final = frozenset({"citations_delta", "compaction_delta"})
_EVENTS: Final = frozenset(
    {
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "ping",
        "error",
    }
)


class AnthropicStreamParser:
    """Builds a :class:`ParsedResponse` from Messages stream events (see the module doc)."""

    def __init__(self) -> None:
        self._message: dict[str, Any] | None = None
        self._blocks: dict[int, _Block] = {}
        self._usage: dict[str, Any] = {}
        self._stop: Any = None
        self._done = False

    def feed(self, event: SSEEvent) -> None:
        """Take the next event.

        Raises:
            ResponseParseError: Invalid JSON, an unknown event or delta type, events out of
                order, or events after ``message_stop``.
            APIStatusError: An ``error`` event.
        """
        data = pc.load_object(event.data, _NAME, f"event {event.event!r}")
        kind = data.get("type")
        if kind not in _EVENTS:
            raise ResponseParseError(f"unknown stream event type {kind!r}", provider=_NAME)
        if kind == "error":
            raise _error_event(data)
        if self._done:
            raise ResponseParseError(f"event {kind!r} after message_stop", provider=_NAME)
        if kind != "message_start" and kind != "ping" and self._message is None:
            raise ResponseParseError(f"event {kind!r} before message_start", provider=_NAME)
        getattr(self, f"_on_{kind}")(data)

    def _on_ping(self, data: dict[str, Any]) -> None:
        return None

    def _on_message_start(self, data: dict[str, Any]) -> None:
        self._message = pc.need_obj(data, "message", _NAME, "message_start")
        self._usage.update(self._message.get("usage") or {})

    def _on_content_block_start(self, data: dict[str, Any]) -> None:
        index = pc.need_int(data, "index", _NAME, "content_block_start")
        block = pc.need_obj(data, "content_block", _NAME, "content_block_start")
        if index in self._blocks:
            raise ResponseParseError(f"content block {index} started twice", provider=_NAME)
        self._blocks[index] = _Block(block)

    def _on_content_block_delta(self, data: dict[str, Any]) -> None:
        block = self._block(data, "content_block_delta")
        delta = pc.need_obj(data, "delta", _NAME, "content_block_delta")
        kind = delta.get("type")
        if kind in _IGNORED_DELTAS:
            return
        key = _DELTA_FIELDS.get(str(kind))
        if key is None:
            raise ResponseParseError(f"unknown delta type {kind!r}", provider=_NAME)
        value = delta.get(key)
        if not isinstance(value, str):
            raise ResponseParseError(f"{kind}.{key} must be a string", provider=_NAME)
        (block.signature if kind == "signature_delta" else block.parts).append(value)

    def _on_content_block_stop(self, data: dict[str, Any]) -> None:
        self._block(data, "content_block_stop")

    def _on_message_delta(self, data: dict[str, Any]) -> None:
        delta = data.get("delta")
        if isinstance(delta, dict) and "stop_reason" in delta:
            self._stop = delta["stop_reason"]
        usage = data.get("usage")
        if isinstance(usage, dict):
            self._usage.update({k: v for k, v in usage.items() if v is not None})

    def _on_message_stop(self, data: dict[str, Any]) -> None:
        self._done = True

    def _block(self, data: dict[str, Any], what: str) -> _Block:
        index = pc.need_int(data, "index", _NAME, what)
        block = self._blocks.get(index)
        if block is None:
            raise ResponseParseError(f"{what} for unstarted block {index}", provider=_NAME)
        return block

    def finish(self) -> ParsedResponse:
        """Return the response.

        Raises:
            ResponseParseError: The stream ended before ``message_stop`` (truncated).
        """
        if not self._done or self._message is None:
            raise ResponseParseError(
                "event stream ended before message_stop (truncated)", provider=_NAME
            )
        content: list[Text | ToolCall] = []
        carry: list[str] = []
        notes: list[str] = []
        for index in sorted(self._blocks):
            _assemble(self._blocks[index], f"content[{index}]", content, carry, notes)
        usage = parse_usage(self._usage, "usage")
        return _finish(self._message, content, carry, notes, self._stop, usage)


def _assemble(
    block: _Block, at: str, content: list[Text | ToolCall], carry: list[str], notes: list[str]
) -> None:
    kind = block.start.get("type")
    if kind == "tool_use":
        raw = clean_text("".join(block.parts)).encode("utf-8")
        content.append(_tool_call(block.start, raw, at))
    elif kind == "thinking":
        rebuilt = {"type": "thinking", "thinking": "".join(block.parts)}
        rebuilt["signature"] = "".join(block.signature)
        carry.append(jsonbytes.dumps_text(rebuilt))
    elif kind == "redacted_thinking":
        carry.append(jsonbytes.dumps_text(block.start))
    elif kind == "text":
        text = "".join(block.parts)
        content.extend([Text(text=text)] if text else [])
    else:
        part, note = _simple_block(block.start, at)
        content.extend([part] if part is not None else [])
        notes.extend([note] if note is not None else [])


def parse_usage(usage: Mapping[str, Any], at: str = "usage") -> Usage:
    """Normalize a Messages ``usage`` object (PROVIDER-RULES §1.5; see the module doc).

    Raises:
        ResponseParseError: A count is not a non-negative integer.
    """
    created = usage.get("cache_creation")
    one_hour = pc.opt_int(created, "ephemeral_1h_input_tokens", _NAME, f"{at}.cache_creation")
    server = usage.get("server_tool_use")
    return Usage(
        input=pc.opt_int(usage, "input_tokens", _NAME, at),
        output=pc.opt_int(usage, "output_tokens", _NAME, at),
        cache_read=pc.opt_int(usage, "cache_read_input_tokens", _NAME, at),
        cache_write=pc.opt_int(usage, "cache_creation_input_tokens", _NAME, at),
        web_search_requests=pc.opt_int(
            server if isinstance(server, dict) else None,
            "web_search_requests",
            _NAME,
            f"{at}.server_tool_use",
        ),
        cache_write_1h=one_hour or None,
    )


_STOP: Final[dict[str, StopReason]] = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
    "stop_sequence": "stop_sequence",
    "pause_turn": "pause_turn",
    "refusal": "refusal",
}


def map_stop_reason(stop: str | None) -> StopReason:
    """Map a Messages ``stop_reason`` to the neutral :data:`StopReason` (unknown → ``other``).

    See https://platform.claude.com/docs/en/build-with-claude/handling-stop-reasons.
    """
    return _STOP.get(stop or "", "other")


_ERROR_STATUS: Final = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


def _error_fields(obj: Mapping[str, Any]) -> tuple[str | None, str | None]:
    error = obj.get("error")
    if not isinstance(error, dict):
        return None, None
    kind, message = error.get("type"), error.get("message")
    return (kind if isinstance(kind, str) else None), (
        message if isinstance(message, str) else None
    )


def _error_event(obj: dict[str, Any]) -> APIStatusError:
    """Return the error an ``error`` object in a 200 body or stream stands for."""
    kind, message = _error_fields(obj)
    status = _ERROR_STATUS.get(kind or "", 500)
    rid = obj.get("request_id")
    return pc.api_error(
        provider=_NAME,
        status=status,
        body=jsonbytes.dumps(obj),
        headers={},
        error_type=kind,
        message=f"error event in a 200 response: {message or '(no message)'}",
        request_id=rid if isinstance(rid, str) else None,
    )


def error_from_body(status: int, body: bytes, headers: Mapping[str, str]) -> APIStatusError:
    """Return the typed error for an HTTP error status and its body (never raises).

    A body that is not the documented error object still gives an error, with its first
    characters as the message.
    """
    try:
        obj: Mapping[str, Any] = pc.load_object(body, _NAME, "error body")
    except ResponseParseError:
        obj = {}
    kind, message = _error_fields(obj)
    rid = obj.get("request_id")
    return pc.api_error(
        provider=_NAME,
        status=status,
        body=body,
        headers=headers,
        error_type=kind,
        message=message,
        request_id=rid if isinstance(rid, str) else pc.header(headers, "request-id"),
    )
