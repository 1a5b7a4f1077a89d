"""Amazon Bedrock Converse: the response parser, JSON bodies and the event stream (P1, M2, M4).

Response side (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html,
https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html):

* ``output.message.content`` blocks: ``text`` becomes :class:`~llmcore.messages.Text` (empty
  text is skipped); ``toolUse`` becomes :class:`~llmcore.messages.ToolCall` whose ``arguments``
  are the exact byte span of ``input`` in the body, or for a stream the concatenated
  ``contentBlockDelta.delta.toolUse.input`` strings (M2). ``reasoningContent`` (thinking and its
  signature), ``citationsContent`` and other provider-only blocks never enter the history
  (M4); each is named in ``ParsedResponse.notes``.
* The stream (``application/vnd.amazon.eventstream``, decoded by
  :mod:`llmcore.providers._eventstream`) is one :class:`~llmcore.providers._sse.SSEEvent`
  per message (:func:`llmcore.transport.aws_events`), ``event`` = the ``:event-type`` header
  (``messageStart``, ``contentBlockStart``, ``contentBlockDelta``, ``contentBlockStop``,
  ``messageStop``, ``metadata``) or, for an exception frame (``id`` ``exception`` or ``error``),
  its type (``throttlingException``, …); members other than the documented ones (the ``p`` padding)
  are ignored.
* Usage (PROVIDER-RULES §5): ``input`` = ``inputTokens`` (already uncached: Bedrock counts
  cache reads and writes apart), ``cache_read`` = ``cacheReadInputTokens``, ``cache_write`` =
  ``cacheWriteInputTokens``; ``output`` = ``outputTokens``. The 1-hour part of the writes
  (``cacheDetails[].ttl == "1h"``) is ``cache_write_1h``.
* Errors: an HTTP error body is ``{"message": …}`` with the type in the ``x-amzn-ErrorType``
  header (``ValidationException`` 400, ``AccessDeniedException`` 403, ``ThrottlingException``
  429, …, the part before any ``:``); an exception frame mid-stream is raised with the status its
  type stands for. Unknown events, invalid JSON, a bad frame and a stream without
  ``messageStop`` raise :class:`~llmcore.errors.ResponseParseError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from llmcore.errors import APIStatusError, ResponseParseError
from llmcore.messages import Text, ToolCall, clean_text
from llmcore.providers import _parse_common as pc
from llmcore.providers._jsonspan import find_span
from llmcore.providers._sse import SSEEvent
from llmcore.providers.base import Endpoint, ParsedResponse, StopReason
from llmcore.usage import Usage

__all__ = [
    "ENDPOINT",
    "ConverseStreamParser",
    "error_from_body",
    "map_stop_reason",
    "parse_response",
    "parse_usage",
]

ENDPOINT: Final = Endpoint(
    base_url="https://bedrock-runtime.{region}.amazonaws.com",
    path="/model/{model}/converse",
    stream_path="/model/{model}/converse-stream",
    api_key_env="AWS_BEARER_TOKEN_BEDROCK",
    auth="sigv4",
    headers=(("accept", "application/json"),),
    sigv4_service="bedrock",
)
"""The Converse endpoint (region from the AWS configuration; signed with SigV4, service
``bedrock``)."""

_NAME: Final = "bedrock-converse"
_PROVIDER_ONLY: Final = frozenset(
    {"reasoningContent", "citationsContent", "guardContent", "document", "video", "audio"}
)


def _content_block(
    block: Any, at: str, arguments: bytes | None
) -> tuple[Text | ToolCall | None, str | None]:
    """Return (content, note) for one response content block."""
    if not isinstance(block, dict) or len(block) != 1:
        raise ResponseParseError(f"{at} must be an object with one member", provider=_NAME)
    ((kind, value),) = block.items()
    if kind == "text":
        if not isinstance(value, str):
            raise ResponseParseError(f"{at}.text must be a string", provider=_NAME)
        return (Text(text=value) if value else None), None
    if kind == "toolUse":
        return _tool_call(value, arguments if arguments is not None else b"{}", at), None
    if kind in _PROVIDER_ONLY:
        return None, f"{at}: left out a {kind} block (provider-only, M4)"
    raise ResponseParseError(f"{at}: unknown content block {kind!r}", provider=_NAME)


def _tool_call(use: Any, arguments: bytes, at: str) -> ToolCall:
    if not isinstance(use, dict):
        raise ResponseParseError(f"{at}.toolUse must be an object", provider=_NAME)
    call_id, name = use.get("toolUseId"), use.get("name")
    if not isinstance(call_id, str) or not isinstance(name, str):
        raise ResponseParseError(f"{at}: toolUse needs string toolUseId and name", provider=_NAME)
    return ToolCall(id=call_id, name=name, arguments=arguments)


def parse_response(body: bytes) -> ParsedResponse:
    """Parse a non-streamed Converse response body (status 200).

    Raises:
        ResponseParseError: Not JSON, no ``output.message``, or an unknown content block.
    """
    obj = pc.load_object(body, _NAME, "response body")
    output = pc.need_obj(obj, "output", _NAME, "$")
    message = pc.need_obj(output, "message", _NAME, "$.output")
    blocks = pc.need_list(message, "content", _NAME, "$.output.message")
    content: list[Text | ToolCall] = []
    notes: list[str] = []
    for index, block in enumerate(blocks):
        at = f"$.output.message.content[{index}]"
        arguments = None
        if isinstance(block, dict) and "toolUse" in block:
            path = ("output", "message", "content", index, "toolUse", "input")
            begin, end = find_span(body, path)
            arguments = body[begin:end]
        part, note = _content_block(block, at, arguments)
        content.extend([part] if part is not None else [])
        notes.extend([note] if note is not None else [])
    usage = parse_usage(pc.need_obj(obj, "usage", _NAME, "$"), "$.usage")
    return _finish(content, notes, obj.get("stopReason"), usage)


def _finish(
    content: list[Text | ToolCall], notes: list[str], stop: Any, usage: Usage
) -> ParsedResponse:
    raw_stop = stop if isinstance(stop, str) else None
    return ParsedResponse(
        content=tuple(content),
        stop_reason=map_stop_reason(raw_stop),
        raw_stop_reason=raw_stop,
        usage=usage,
        notes=tuple(notes),
    )


class _Block:
    """One content block being assembled from stream events."""

    __slots__ = ("kind", "parts", "start")

    def __init__(self, kind: str, start: dict[str, Any]) -> None:
        self.kind = kind
        self.start = start
        self.parts: list[str] = []


_EVENTS: Final = frozenset(
    {
        "messageStart",
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
    }
)
_EXCEPTION_STATUS: Final = {
    "internalServerException": 500,
    "modelStreamErrorException": 424,
    "validationException": 400,
    "throttlingException": 429,
    "serviceUnavailableException": 503,
}
"""Exception frames of ``ConverseStreamOutput`` and the HTTP status each stands for."""


class ConverseStreamParser:
    """Builds a :class:`ParsedResponse` from ConverseStream events (see the module doc)."""

    def __init__(self) -> None:
        self._started = False
        self._blocks: dict[int, _Block] = {}
        self._notes: list[str] = []
        self._usage: Usage | None = None
        self._stop: Any = None
        self._done = False

    def feed(self, event: SSEEvent) -> None:
        """Take the next event (one event-stream frame).

        Raises:
            ResponseParseError: Invalid JSON, an unknown event, or events out of order.
            APIStatusError: An exception frame.
        """
        if event.id in ("exception", "error"):
            raise _exception_frame(event)
        if event.event not in _EVENTS:
            raise ResponseParseError(f"unknown stream event {event.event!r}", provider=_NAME)
        data = pc.load_object(event.data, _NAME, f"event {event.event!r}")
        if event.event == "messageStart":
            self._started = True
            return
        if not self._started:
            raise ResponseParseError(f"event {event.event!r} before messageStart", provider=_NAME)
        getattr(self, f"_on_{event.event}")(data)

    def _on_contentBlockStart(self, data: dict[str, Any]) -> None:  # noqa: N802 - event name
        index = pc.need_int(data, "contentBlockIndex", _NAME, "contentBlockStart")
        start = pc.need_obj(data, "start", _NAME, "contentBlockStart")
        if index in self._blocks:
            raise ResponseParseError(f"content block {index} started twice", provider=_NAME)
        kind = next(iter(start), "")
        self._blocks[index] = _Block(kind, start)

    def _on_contentBlockDelta(self, data: dict[str, Any]) -> None:  # noqa: N802 - event name
        index = pc.need_int(data, "contentBlockIndex", _NAME, "contentBlockDelta")
        delta = pc.need_obj(data, "delta", _NAME, "contentBlockDelta")
        if len(delta) != 1:
            raise ResponseParseError("contentBlockDelta.delta needs one member", provider=_NAME)
        ((kind, value),) = delta.items()
        block = self._blocks.setdefault(index, _Block(kind, {}))
        if kind == "text" and block.kind == "text":
            block.parts.append(_string(value, "delta.text"))
        elif kind == "toolUse" and block.kind == "toolUse":
            inner = value if isinstance(value, dict) else {}
            block.parts.append(_string(inner.get("input"), "delta.toolUse.input"))
        elif kind in _PROVIDER_ONLY and block.kind == kind:
            return
        else:
            raise ResponseParseError(
                f"delta {kind!r} for content block {index} of kind {block.kind!r}", provider=_NAME
            )

    def _on_contentBlockStop(self, data: dict[str, Any]) -> None:  # noqa: N802 - event name
        index = pc.need_int(data, "contentBlockIndex", _NAME, "contentBlockStop")
        if index not in self._blocks:
            raise ResponseParseError(f"contentBlockStop for unknown block {index}", provider=_NAME)

    def _on_messageStop(self, data: dict[str, Any]) -> None:  # noqa: N802 - event name
        self._stop = data.get("stopReason")
        self._done = True

    def _on_metadata(self, data: dict[str, Any]) -> None:
        self._usage = parse_usage(pc.need_obj(data, "usage", _NAME, "metadata"), "metadata.usage")

    def finish(self) -> ParsedResponse:
        """Return the response.

        Raises:
            ResponseParseError: The stream ended before ``messageStop`` (truncated).
        """
        if not self._done:
            raise ResponseParseError(
                "event stream ended before messageStop (truncated)", provider=_NAME
            )
        content: list[Text | ToolCall] = []
        notes: list[str] = []
        for index in sorted(self._blocks):
            block = self._blocks[index]
            at = f"content[{index}]"
            if block.kind == "toolUse":
                raw = clean_text("".join(block.parts)).encode("utf-8")
                content.append(_tool_call(block.start.get("toolUse"), raw, at))
            elif block.kind == "text":
                text = "".join(block.parts)
                content.extend([Text(text=text)] if text else [])
            else:
                notes.append(f"{at}: left out a {block.kind} block (provider-only, M4)")
        return _finish(content, notes, self._stop, self._usage or Usage())


def _string(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ResponseParseError(f"{what} must be a string", provider=_NAME)
    return value


def parse_usage(usage: Mapping[str, Any], at: str = "usage") -> Usage:
    """Normalize a Converse ``usage`` object (PROVIDER-RULES §5; see the module doc).

    Raises:
        ResponseParseError: A count is not a non-negative integer.
    """
    one_hour = 0
    details = usage.get("cacheDetails")
    for index, item in enumerate(details if isinstance(details, list) else []):
        if isinstance(item, dict) and item.get("ttl") == "1h":
            one_hour += pc.opt_int(item, "inputTokens", _NAME, f"{at}.cacheDetails[{index}]")
    return Usage(
        input=pc.opt_int(usage, "inputTokens", _NAME, at),
        output=pc.opt_int(usage, "outputTokens", _NAME, at),
        cache_read=pc.opt_int(usage, "cacheReadInputTokens", _NAME, at),
        cache_write=pc.opt_int(usage, "cacheWriteInputTokens", _NAME, at),
        cache_write_1h=one_hour or None,
    )


_STOP: Final[dict[str, StopReason]] = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
    "stop_sequence": "stop_sequence",
    "guardrail_intervened": "refusal",
    "content_filtered": "refusal",
}


def map_stop_reason(stop: str | None) -> StopReason:
    """Map a Converse ``stopReason`` to the neutral :data:`StopReason` (unknown → ``other``).

    Values from the service model's ``StopReason`` enum (``malformed_model_output`` and
    ``malformed_tool_use`` are ``other``).
    """
    return _STOP.get(stop or "", "other")


def _exception_frame(event: SSEEvent) -> APIStatusError:
    """Return the error an exception frame of the stream stands for."""
    try:
        obj: Mapping[str, Any] = pc.load_object(event.data, _NAME, f"event {event.event!r}")
    except ResponseParseError:
        obj = {}
    message = obj.get("message") if isinstance(obj.get("message"), str) else None
    return pc.api_error(
        provider=_NAME,
        status=_EXCEPTION_STATUS.get(event.event, 500),
        body=event.data.encode("utf-8"),
        headers={},
        error_type=event.event,
        message=f"exception in the event stream: {message or '(no message)'}",
        request_id=None,
    )


def error_from_body(status: int, body: bytes, headers: Mapping[str, str]) -> APIStatusError:
    """Return the typed error for an HTTP error status and its body (never raises).

    The type is the ``x-amzn-ErrorType`` header up to any ``:`` (else the body's ``__type``
    or ``code``); the message is the body's ``message`` (or ``Message``).
    """
    try:
        obj: Mapping[str, Any] = pc.load_object(body, _NAME, "error body")
    except ResponseParseError:
        obj = {}
    kind = pc.header(headers, "x-amzn-ErrorType") or obj.get("__type") or obj.get("code")
    kind = kind.split(":", 1)[0].rsplit("#", 1)[-1] if isinstance(kind, str) else None
    message = obj.get("message", obj.get("Message"))
    return pc.api_error(
        provider=_NAME,
        status=status,
        body=body,
        headers=headers,
        error_type=kind or None,
        message=message if isinstance(message, str) else None,
        request_id=pc.header(headers, "x-amzn-RequestId"),
    )
