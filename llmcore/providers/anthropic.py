"""Anthropic Messages API: request bodies and the import of recorded bodies (SPEC P1–P3).

Key order (pinned by golden files in ``tests/providers/golden/``; never changes once released):

=====================  ================================================================
object                 keys, in order (absent keys are skipped, never sent as ``null``)
=====================  ================================================================
body                   ``model, max_tokens, system, messages, tools, tool_choice,
                       temperature, top_p, stop_sequences, stream, cache_control``, then
                       ``params.extra`` in its own order
system block           ``type, text, cache_control``
tool                   ``name, description, input_schema, strict, cache_control``
tool_choice            ``type, name``
message                ``role, content``
text block             ``type, text, cache_control``
image block            ``type, source, cache_control``; source ``type, media_type, data``
tool_use block         ``type, id, name, input, cache_control``
tool_result block      ``type, tool_use_id, content, is_error, cache_control``
cache_control          ``type, ttl`` (``ttl`` only for ``1h``)
=====================  ================================================================

Encoding rules:

* ``system`` and every message ``content`` are always block arrays, so a breakpoint moving never
  changes a message's shape (P3). Empty text blocks are never sent; an all-empty system is
  omitted.
* ``tool`` messages become ``user`` messages of ``tool_result`` blocks. ``is_error`` is sent only
  when true; an empty result omits ``content``. Result bytes that are not UTF-8 are decoded with
  U+FFFD replacements.
* Tool-call arguments (P2): bytes that are a UTF-8 JSON object are spliced into ``input``
  verbatim; empty (or all-whitespace) bytes become ``{}``; anything else becomes
  ``{"raw_arguments": "<the bytes as text, U+FFFD for invalid UTF-8>"}``.
* Tool-call ids outside ``^[a-zA-Z0-9_-]+$`` (or over 256 characters) are rewritten by
  :func:`~llmcore.providers.base.rewrite_id`, identically in ``tool_use`` and ``tool_result``.
* Breakpoints (P3, mode ``breakpoints``): last tool, last system block, last block of the newest
  message, last block of the message before the last assistant message — at most 4. Mode
  ``automatic`` sends one top-level ``cache_control``; ``off`` sends none.

Source: https://platform.claude.com/docs/en/build-with-claude/prompt-caching and the Messages
API reference.

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

import base64
import re
from collections.abc import Hashable, Mapping
from typing import Any, Final, assert_never

from llmcore import jsonbytes
from llmcore.errors import APIStatusError, InvalidRequestError, ResponseParseError
from llmcore.messages import Image, Message, MessageContent, Text, ToolCall, ToolResult, clean_text
from llmcore.models import model_info
from llmcore.providers import _import_common as imp
from llmcore.providers import _parse_common as pc
from llmcore.providers._jsonspan import find_span
from llmcore.providers._sse import SSEEvent
from llmcore.providers.base import (
    Carry,
    EncodeCache,
    Endpoint,
    ImportResult,
    ParsedResponse,
    ResponseMethods,
    ResponseSide,
    StopReason,
    arguments_json,
    breakpoint_messages,
    check_request,
    encode_messages,
    rewrite_id,
)
from llmcore.request import CacheTtl, Params, Request, ToolChoiceName
from llmcore.usage import Usage

__all__ = [
    "ENDPOINT",
    "PROVIDER",
    "AnthropicProvider",
    "AnthropicStreamParser",
    "error_from_body",
    "map_stop_reason",
    "parse_message",
    "parse_usage",
]

_ID_PATTERN: Final = re.compile(r"[a-zA-Z0-9_-]+")
_ID_MAX: Final = 256
_MODELED: Final = frozenset(
    {
        "model",
        "max_tokens",
        "system",
        "messages",
        "tools",
        "tool_choice",
        "temperature",
        "top_p",
        "stop_sequences",
        "stream",
        "cache_control",
    }
)


def wire_id(call_id: str) -> str:
    """Return the id sent for ``call_id`` (``^[a-zA-Z0-9_-]+$``, at most 256 characters)."""
    return rewrite_id(call_id, max_length=_ID_MAX, safe=_ID_PATTERN)


def cache_control(ttl: CacheTtl) -> dict[str, str]:
    """Return the ``cache_control`` object for a breakpoint of the given TTL."""
    return {"type": "ephemeral", "ttl": "1h"} if ttl == "1h" else {"type": "ephemeral"}


def tool_input(arguments: bytes) -> jsonbytes.Raw:
    """Return the ``input`` value for stored argument bytes (:func:`base.arguments_json`)."""
    return jsonbytes.Raw(arguments_json(arguments))


def _block(part: MessageContent) -> dict[str, Any] | None:
    match part:
        case Text(text=text):
            return {"type": "text", "text": text} if text else None
        case Image(data=data, mime_type=mime):
            source = {"type": "base64", "media_type": mime, "data": _b64(data)}
            return {"type": "image", "source": source}
        case ToolCall(id=call_id, name=name, arguments=arguments):
            return {
                "type": "tool_use",
                "id": wire_id(call_id),
                "name": name,
                "input": tool_input(arguments),
            }
        case ToolResult(call_id=call_id, content=content, is_error=is_error):
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": wire_id(call_id)}
            if content:
                block["content"] = content.decode("utf-8", "replace")
            if is_error:
                block["is_error"] = True
            return block
        case _:
            assert_never(part)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _encode_message(index: int, message: Message, option: Hashable) -> bytes:
    ttl, carried = option if isinstance(option, tuple) else (option, ())
    blocks: list[Any] = [b for b in (_block(part) for part in message.content) if b is not None]
    if ttl is not None:
        blocks[-1]["cache_control"] = breakpoint_dict(ttl)
    role = "user" if message.role == "tool" else message.role
    head = [jsonbytes.Raw(text) for text in carried]
    return jsonbytes.dumps({"role": role, "content": head + blocks})


def breakpoint_dict(ttl: Hashable) -> dict[str, str]:
    """Return ``cache_control`` for a TTL carried as a message option."""
    return cache_control("1h" if ttl == "1h" else "5m")


def _message_options(request: Request, carry: Carry | None) -> list[Hashable]:
    options: list[Hashable] = [None] * len(request.messages)
    if request.params.cache_mode == "breakpoints":
        newest, previous = breakpoint_messages(request.messages)
        for index in (newest, previous):
            if index is not None:
                options[index] = request.params.cache_ttl
    for index, texts in (carry or {}).items():
        if 0 <= index < len(options) and texts:
            options[index] = (options[index], tuple(texts))
    return options


def _tool_choice(choice: object) -> dict[str, str]:
    if isinstance(choice, ToolChoiceName):
        return {"type": "tool", "name": choice.name}
    if choice in ("auto", "any", "none"):
        return {"type": str(choice)}
    raise InvalidRequestError(f"unknown tool choice {choice!r}", location="params.toolChoice")


def _system(request: Request, bp: bool) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": s} for s in request.system if s]
    if blocks and bp:
        blocks[-1]["cache_control"] = cache_control(request.params.cache_ttl)
    return blocks


def _tools(request: Request, bp: bool) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    for tool in request.tools:
        entry: dict[str, Any] = {"name": tool.name}
        if tool.description:
            entry["description"] = tool.description
        entry["input_schema"] = jsonbytes.Raw(tool.input_schema)
        if tool.strict is not None:
            entry["strict"] = tool.strict
        tools.append(entry)
    if tools and bp:
        tools[-1]["cache_control"] = cache_control(request.params.cache_ttl)
    return tools


def _head(request: Request) -> dict[str, Any]:
    params = request.params
    bp = params.cache_mode == "breakpoints"
    max_tokens = params.max_tokens
    body: dict[str, Any] = {
        "model": request.model,
        "max_tokens": max_tokens
        if max_tokens is not None
        else model_info(request.model).max_tokens,
    }
    system = _system(request, bp)
    if system:
        body["system"] = system
    return body


def _tail(request: Request, body: dict[str, Any]) -> None:
    params = request.params
    tools = _tools(request, params.cache_mode == "breakpoints")
    if tools:
        body["tools"] = tools
    if params.tool_choice is not None:
        body["tool_choice"] = _tool_choice(params.tool_choice)
    imp.put_sampling(body, params, stop_key="stop_sequences")
    if params.stream:
        body["stream"] = True
    if params.cache_mode == "automatic":
        body["cache_control"] = cache_control(params.cache_ttl)
    imp.put_extra(body, params)


class AnthropicProvider(ResponseMethods):
    """The Anthropic Messages provider (``anthropic``)."""

    name: Final = "anthropic"

    def build_body(
        self, request: Request, *, cache: EncodeCache | None = None, carry: Carry | None = None
    ) -> bytes:
        """Return the Messages API body bytes for ``request`` (key order in the module doc).

        ``carry`` holds the running turn's thinking blocks by message index (M4); they open
        that assistant message's ``content`` unchanged and never carry a breakpoint.

        Raises:
            InvalidRequestError: Unpaired tool calls/results, an unknown tool choice, or a
                ``params.extra`` key that collides with a key this body writes.
            EncodingError: A value cannot be written as JSON.
        """
        check_request(request)
        body = _head(request)
        options = _message_options(request, carry)
        texts = encode_messages(request.messages, options, _encode_message, cache)
        body["messages"] = jsonbytes.RawArray(texts)
        _tail(request, body)
        return jsonbytes.dumps(body)

    def import_body(self, body: Any, *, location: str = "$") -> ImportResult:
        """Return the neutral request a recorded Messages body stands for.

        Thinking and redacted-thinking blocks are dropped (M4) and said in the notes;
        ``cache_control`` markers are dropped (llmcore places its own, P3); unmodeled top-level
        fields go to ``params.extra`` in body order.

        Raises:
            RequestFileError: The body is malformed (the error names the JSON path).
            UnsupportedContentError: Documents, server tools, URL images, and other content
                outside the four cases.
        """
        return _Importer().run(body, location)


class _Importer(imp.Importer):
    def messages(self, body: dict[str, Any], at: str) -> list[Message]:
        raw = imp.need_list(body, "messages", at)
        out: list[Message] = []
        for index, item in enumerate(raw):
            out.extend(self.message(item, f"{at}.messages[{index}]"))
        return out

    def message(self, item: Any, at: str) -> list[Message]:
        obj = imp.need_obj(item, at)
        role = imp.need_str(obj, "role", at)
        if role == "system":
            raise imp.unsupported("system message inside the conversation", f"{at}.role")
        content = obj.get("content")
        if isinstance(content, str):
            return [imp.make_message(role, (Text(text=content),), at)] if content else []
        blocks = imp.need_list(obj, "content", at)
        parts: list[MessageContent] = []
        for index, block in enumerate(blocks):
            part = self.block(block, f"{at}.content[{index}]")
            if part is not None:
                parts.append(part)
        return imp.split_parts(role, parts, at)

    def block(self, block: Any, at: str) -> MessageContent | None:
        obj = imp.need_obj(block, at)
        kind = imp.need_str(obj, "type", at)
        if kind == "text":
            return Text(text=imp.need_str(obj, "text", at))
        if kind == "image":
            return self.image(obj, at)
        if kind == "tool_use":
            value = imp.need_obj(obj.get("input", {}), f"{at}.input")
            arguments = imp.json_text(value, f"{at}.input").encode("utf-8")
            call_id, name = imp.need_str(obj, "id", at), imp.need_str(obj, "name", at)
            self.call_names[call_id] = name
            return ToolCall(id=call_id, name=name, arguments=arguments)
        if kind == "tool_result":
            return self.tool_result(obj, at)
        if kind in ("thinking", "redacted_thinking"):
            self.note(f"{at}: dropped a {kind} block (provider-only data, M4)")
            return None
        raise imp.unsupported(kind, at)

    def image(self, obj: dict[str, Any], at: str) -> Image:
        source = imp.need_obj(obj.get("source"), f"{at}.source")
        if source.get("type") != "base64":
            raise imp.unsupported(f"image source {source.get('type')!r}", f"{at}.source")
        data = imp.b64decode(imp.need_str(source, "data", f"{at}.source"), f"{at}.source.data")
        return self.make_image(data, imp.need_str(source, "media_type", f"{at}.source"), at)

    def tool_result(self, obj: dict[str, Any], at: str) -> ToolResult:
        content = obj.get("content", "")
        if isinstance(content, list):
            content = imp.join_text_blocks(content, f"{at}.content")
        elif not isinstance(content, str):
            raise imp.bad("content must be a string or a list of text blocks", f"{at}.content")
        return ToolResult(
            call_id=imp.need_str(obj, "tool_use_id", at),
            tool_name=self.call_names.get(str(obj.get("tool_use_id")), ""),
            content=imp.text_bytes(content),
            is_error=obj.get("is_error") is True,
        )

    def system(self, body: dict[str, Any], at: str) -> tuple[str, ...]:
        system = body.get("system")
        if system is None:
            return ()
        if isinstance(system, str):
            return (system,)
        return tuple(imp.text_blocks(system, f"{at}.system"))

    def tools(self, body: dict[str, Any], at: str) -> tuple[imp.Tool, ...]:
        raw = body.get("tools")
        if raw is None:
            return ()
        if not isinstance(raw, list):
            raise imp.bad("expected an array", f"{at}.tools")
        tools = []
        for index, item in enumerate(raw):
            where = f"{at}.tools[{index}]"
            tool = imp.need_obj(item, where)
            if tool.get("type", "custom") != "custom":
                raise imp.unsupported(f"server tool {tool.get('type')!r}", where)
            known = {"name", "description", "input_schema", "cache_control", "type", "strict"}
            unknown = set(tool) - known
            if unknown:
                raise imp.unsupported(f"tool field {sorted(unknown)[0]!r}", where)
            schema = tool.get("input_schema")
            name, description = tool.get("name"), tool.get("description")
            tools.append(imp.make_tool(name, description, schema, where, tool.get("strict")))
        return tuple(tools)

    def params(self, body: dict[str, Any], at: str) -> Params:
        choice = body.get("tool_choice")
        tool_choice = _import_choice(choice)
        extra = imp.extra_fields(body, _MODELED, at)
        if choice is not None and tool_choice is None:
            extra.append(("tool_choice", imp.json_text(choice, f"{at}.tool_choice")))
        return imp.make_params(
            body,
            at,
            max_tokens_key="max_tokens",
            stop_key="stop_sequences",
            tool_choice=tool_choice,
            cache=_import_cache(body),
            extra=extra,
        )


def _import_choice(choice: Any) -> imp.ToolChoice | None:
    if not isinstance(choice, dict) or set(choice) - {"type", "name"}:
        return None
    kind = choice.get("type")
    if kind == "tool" and isinstance(choice.get("name"), str):
        return ToolChoiceName(name=choice["name"])
    if kind in ("auto", "any", "none") and "name" not in choice:
        return kind  # type: ignore[no-any-return]
    return None


def _import_cache(body: dict[str, Any]) -> tuple[imp.CacheMode, imp.CacheTtl]:
    top = body.get("cache_control")
    if isinstance(top, dict):
        return "automatic", "1h" if top.get("ttl") == "1h" else "5m"
    ttls = imp.find_cache_ttls(body)
    if not ttls:
        return "off", "5m"
    return "breakpoints", "1h" if ttls == {"1h"} else "5m"


# --- Response side: JSON and event-stream decoding, usage, stop reason, errors -----------------

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


PROVIDER: Final = AnthropicProvider(
    ResponseSide(
        endpoint=ENDPOINT,
        parse=parse_message,
        stream=AnthropicStreamParser,
        error=error_from_body,
    )
)
"""The registered instance."""
