"""OpenAI Chat Completions: request bodies and the import of recorded bodies (SPEC P1–P3, P7).

Key order (pinned by golden files in ``tests/providers/golden/openai-chat/``; never changes once
released):

=====================  ================================================================
object                 keys, in order (absent keys are skipped, never sent as ``null``)
=====================  ================================================================
body                   ``model, max_completion_tokens, messages, tools, tool_choice,
                       temperature, top_p, stop, stream, stream_options``, then
                       ``params.extra`` in its own order
system message         ``role, content`` (``role`` is ``system``)
user message           ``role, content``
assistant message      ``role, content, tool_calls``
tool message           ``role, tool_call_id, content``
text part              ``type, text``
image part             ``type, image_url``; image_url ``url``
tool call              ``id, type, function``; function ``name, arguments``
tool                   ``type, function``; function ``name, description, parameters,
                       strict``
tool_choice            ``type, function``; function ``name`` (or a bare string)
stream_options         ``include_usage``
=====================  ================================================================

Encoding rules:

* The system prompt is the first message, ``role: "system"``, one text part per non-empty
  system block; an all-empty system sends no system message.
* ``content`` is always an array of parts (system, user, assistant and tool messages), so a
  cache marker added by OpenRouter (:mod:`llmcore.providers.openrouter`) never changes a
  message's shape (P3). Empty text parts are never sent. An assistant message with only tool
  calls omits ``content`` (never ``null``). The one string form: a tool result that is empty and
  not an error sends ``"content": ""`` (Chat requires ``content`` on tool messages and forbids
  empty arrays); it can carry no marker, so its shape never changes either.
* Images are ``image_url`` parts holding a ``data:<mime>;base64,…`` URL, no ``detail``.
* Each tool result is one ``role: "tool"`` message, in the order of the stored results.
  Result bytes that are not UTF-8 are decoded with U+FFFD replacements.
* ``is_error`` results (Chat has no error flag): the content parts start with the fixed text
  part :data:`TOOL_ERROR_TEXT`, followed by the result's text part when it is non-empty. Import
  reads that leading part back as ``is_error``.
* Tool-call arguments (P2) are a JSON string made from the stored bytes, never parsed and
  re-dumped: bytes that are a UTF-8 JSON object are decoded and written as the string verbatim;
  empty (or all-whitespace) bytes become ``"{}"``; anything else (invalid JSON, a JSON value
  that is not an object, invalid UTF-8) becomes the string of
  ``{"raw_arguments":"<the bytes as text, U+FFFD for invalid UTF-8>"}``, the same treatment as
  the Anthropic module, so every upstream (OpenRouter included) receives a JSON object.
* Tool-call ids longer than 40 characters (or empty) are rewritten by
  :func:`~llmcore.providers.base.rewrite_id`, identically in ``tool_calls[].id`` and
  ``tool_call_id``; the history keeps the original ids.
* ``params``: ``maxTokens`` → ``max_completion_tokens`` (sent only when given; Chat does not
  require it); ``stopSequences`` → ``stop`` (an array); ``toolChoice`` ``auto``/``none`` → the
  same string, ``any`` → ``"required"``, ``{name}`` → ``{"type":"function","function":{"name"}}``;
  ``stream`` → ``"stream": true`` plus ``"stream_options": {"include_usage": true}``.
* Prompt caching is automatic on OpenAI (no breakpoints): ``cacheMode`` and ``cacheTtl`` are
  ignored without a warning; ``carry`` is accepted and ignored (Chat has no provider-only data
  to send back).

Import (:meth:`OpenAIChatProvider.import_body`) is the inverse, with these normalizations:
string content becomes one text part; empty text parts and messages left with no content are
dropped (said); leading ``system`` and ``developer`` messages become the system prompt
(``developer`` is said in the notes and rebuilt as ``system``); consecutive tool messages become
one ``tool`` message; ``cache_control`` / ``prompt_cache_breakpoint`` markers, image
``detail: "auto"`` and a ``null`` ``refusal`` are dropped (said); a tool's ``strict`` is kept;
``reasoning_content``, ``reasoning`` and ``reasoning_details`` are dropped (said, M4); ``stop``
as one string becomes a one-element array. Refused with
:class:`~llmcore.errors.UnsupportedContentError`: ``file`` and ``input_audio`` parts, image
URLs that are not base64 data URLs, other image ``detail`` values, ``refusal`` text, assistant
``audio``, legacy ``function_call`` / ``function`` messages, message ``name``, custom tools and
custom tool calls, and a system message after the conversation started. Unmodeled top-level
fields (``n``, ``response_format``, the legacy ``max_tokens``, …) go to ``params.extra`` in
body order;
``stream`` / ``stream_options`` stay there too unless they are exactly ``true`` /
``{"include_usage": true}``.

Source: https://platform.openai.com/docs/api-reference/chat/create and
https://platform.openai.com/docs/guides/prompt-caching.

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

import base64
import dataclasses
from collections.abc import Hashable, Mapping
from typing import Any, Final, assert_never

from llmcore import jsonbytes
from llmcore.errors import APIStatusError, InvalidRequestError, ResponseParseError
from llmcore.messages import Image, Message, MessageContent, Text, ToolCall, ToolResult, clean_text
from llmcore.providers import _import_common as imp
from llmcore.providers import _parse_common as pc
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
    check_request,
    encode_messages,
    rewrite_id,
)
from llmcore.request import Params, Request, ToolChoiceName
from llmcore.usage import Usage

__all__ = [
    "ENDPOINT",
    "PROVIDER",
    "ChatStreamParser",
    "error_from_body",
    "map_finish_reason",
    "parse_completion",
    "parse_usage",
    "TOOL_ERROR_TEXT",
    "OpenAIChatProvider",
    "body_fields",
    "join_wire",
    "system_message",
    "tool_arguments",
    "wire_id",
    "wire_messages",
]

TOOL_ERROR_TEXT: Final = "[tool error]"
"""The text part that opens an ``is_error`` tool result's content (Chat has no error flag)."""

_ID_MAX: Final = 40
_STREAM_OPTIONS: Final = {"include_usage": True}
_MODELED: Final = frozenset(
    {
        "model",
        "max_completion_tokens",
        "messages",
        "tools",
        "tool_choice",
        "temperature",
        "top_p",
        "stop",
        "stream",
        "stream_options",
    }
)


def wire_id(call_id: str) -> str:
    """Return the id sent for ``call_id`` (at most 40 characters, never empty)."""
    return rewrite_id(call_id, max_length=_ID_MAX)


def tool_arguments(arguments: bytes) -> str:
    """Return the ``arguments`` string for stored argument bytes (:func:`base.arguments_json`)."""
    return arguments_json(arguments)


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _content_part(part: Text | Image) -> dict[str, Any] | None:
    if isinstance(part, Text):
        return _text_part(part.text) if part.text else None
    url = f"data:{part.mime_type};base64,{base64.b64encode(part.data).decode('ascii')}"
    return {"type": "image_url", "image_url": {"url": url}}


def _tool_call(call: ToolCall) -> dict[str, Any]:
    function = {"name": call.name, "arguments": tool_arguments(call.arguments)}
    return {"id": wire_id(call.id), "type": "function", "function": function}


def _tool_message(result: ToolResult) -> dict[str, Any]:
    text = result.content.decode("utf-8", "replace")
    parts = [_text_part(TOOL_ERROR_TEXT)] if result.is_error else []
    if text:
        parts.append(_text_part(text))
    content: list[dict[str, Any]] | str = parts if parts else ""
    return {"role": "tool", "tool_call_id": wire_id(result.call_id), "content": content}


def _parts_message(message: Message) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for part in message.content:
        match part:
            case Text() | Image():
                wire = _content_part(part)
                if wire is not None:
                    parts.append(wire)
            case ToolCall():
                calls.append(_tool_call(part))
            case ToolResult():
                raise InvalidRequestError("a tool result outside a tool message")
            case _:
                assert_never(part)
    out: dict[str, Any] = {"role": message.role}
    if parts:
        out["content"] = parts
    if calls:
        out["tool_calls"] = calls
    return out


def wire_messages(message: Message) -> list[dict[str, Any]]:
    """Return the Chat wire messages for one history message (key order in the module doc).

    A ``tool`` message becomes one ``role: "tool"`` message per result; any other message
    becomes one wire message. The dicts are fresh, so a caller may add keys (OpenRouter adds
    ``cache_control`` to a content part).
    """
    if message.role == "tool":
        return [_tool_message(p) for p in message.content if isinstance(p, ToolResult)]
    return [_parts_message(message)]


def join_wire(wire: list[dict[str, Any]]) -> bytes:
    """Return wire messages as the comma-joined JSON bytes that go inside ``messages``."""
    return b",".join(jsonbytes.dumps(item) for item in wire)


def _encode_message(index: int, message: Message, option: Hashable) -> bytes:
    return join_wire(wire_messages(message))


def system_message(request: Request) -> dict[str, Any] | None:
    """Return the leading ``system`` message (one text part per non-empty block), or ``None``."""
    parts = [_text_part(text) for text in request.system if text]
    return {"role": "system", "content": parts} if parts else None


def _tool_choice(choice: object) -> str | dict[str, Any]:
    if isinstance(choice, ToolChoiceName):
        return {"type": "function", "function": {"name": choice.name}}
    if choice in ("auto", "none"):
        return str(choice)
    if choice == "any":
        return "required"
    raise InvalidRequestError(f"unknown tool choice {choice!r}", location="params.toolChoice")


def _tools(request: Request) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    for tool in request.tools:
        function: dict[str, Any] = {"name": tool.name}
        if tool.description:
            function["description"] = tool.description
        function["parameters"] = jsonbytes.Raw(tool.input_schema)
        if tool.strict is not None:
            function["strict"] = tool.strict
        tools.append({"type": "function", "function": function})
    return tools


def body_fields(
    request: Request, system: dict[str, Any] | None, texts: list[bytes]
) -> dict[str, Any]:
    """Return the body's modeled fields in key order, ``params.extra`` not yet appended.

    Args:
        request: The neutral request.
        system: The leading system message (see :func:`system_message`), or ``None``.
        texts: Each history message's wire bytes (see :func:`join_wire`), in order.
    """
    params = request.params
    body: dict[str, Any] = {"model": request.model}
    if params.max_tokens is not None:
        body["max_completion_tokens"] = params.max_tokens
    head = [jsonbytes.dumps(system)] if system is not None else []
    body["messages"] = jsonbytes.RawArray(head + texts)
    tools = _tools(request)
    if tools:
        body["tools"] = tools
    if params.tool_choice is not None:
        body["tool_choice"] = _tool_choice(params.tool_choice)
    imp.put_sampling(body, params, stop_key="stop")
    if params.stream:
        body["stream"] = True
        body["stream_options"] = dict(_STREAM_OPTIONS)
    return body


class OpenAIChatProvider(ResponseMethods):
    """The OpenAI Chat Completions provider (``openai-chat``)."""

    name: Final = "openai-chat"

    def build_body(
        self, request: Request, *, cache: EncodeCache | None = None, carry: Carry | None = None
    ) -> bytes:
        """Return the Chat Completions body bytes for ``request`` (key order in the module doc).

        ``cache_mode``, ``cache_ttl`` and ``carry`` are ignored: OpenAI caches prefixes
        automatically and Chat has no provider-only data to send back.

        Raises:
            InvalidRequestError: Unpaired tool calls/results, an unknown tool choice, or a
                ``params.extra`` key that collides with a key this body writes.
            EncodingError: A value cannot be written as JSON.
        """
        check_request(request)
        options: list[Hashable] = [None] * len(request.messages)
        texts = encode_messages(request.messages, options, _encode_message, cache)
        body = body_fields(request, system_message(request), texts)
        imp.put_extra(body, request.params)
        return jsonbytes.dumps(body)

    def import_body(self, body: Any, *, location: str = "$") -> ImportResult:
        """Return the neutral request a recorded Chat Completions body stands for.

        The normalizations, drops (said in the notes) and refusals are listed in the module
        docstring.

        Raises:
            RequestFileError: The body is malformed (the error names the JSON path).
            UnsupportedContentError: File or audio parts, URL images, legacy function calling,
                custom tools, and other content outside the four cases.
        """
        return _Importer().run(body, location)


_SYSTEM_ROLES: Final = ("system", "developer")
_DROPPED_FIELDS: Final = ("reasoning_content", "reasoning", "reasoning_details")
_REFUSED_FIELDS: Final = {
    "name": "message name",
    "function_call": "legacy function_call",
    "audio": "assistant audio",
}
_MESSAGE_KEYS: Final = {
    "user": frozenset({"role", "content"}),
    "assistant": frozenset({"role", "content", "tool_calls", "refusal"}),
    "tool": frozenset({"role", "content", "tool_call_id"}),
}


class _Importer(imp.Importer):
    def __init__(self) -> None:
        super().__init__()
        self.skip = 0

    def system(self, body: dict[str, Any], at: str) -> tuple[str, ...]:
        raw = imp.need_list(body, "messages", at)
        texts: list[str] = []
        for index, item in enumerate(raw):
            where = f"{at}.messages[{index}]"
            obj = imp.need_obj(item, where)
            role = obj.get("role")
            if role not in _SYSTEM_ROLES:
                break
            if role == "developer":
                self.note(f"{where}: developer message read as the system prompt")
            self.check_keys(obj, frozenset({"role", "content"}), where)
            texts.extend(self.texts(obj.get("content"), f"{where}.content"))
            self.skip = index + 1
        return tuple(texts)

    def texts(self, content: Any, at: str) -> list[str]:
        if isinstance(content, str):
            return [content]
        if not isinstance(content, list):
            raise imp.bad("expected a string or an array of parts", at)
        out = []
        for index, part in enumerate(content):
            text = self.part(part, f"{at}[{index}]")
            if not isinstance(text, Text):
                raise imp.unsupported("image in a system or tool message", f"{at}[{index}]")
            out.append(text.text)
        return out

    def check_keys(self, obj: dict[str, Any], allowed: frozenset[str], at: str) -> None:
        for key in obj:
            if key in allowed:
                continue
            if key in _DROPPED_FIELDS:
                self.note(f"{at}: dropped {key} (provider-only data, M4)")
            elif key in _REFUSED_FIELDS:
                raise imp.unsupported(_REFUSED_FIELDS[key], f"{at}.{key}")
            else:
                raise imp.unsupported(f"message field {key!r}", f"{at}.{key}")

    def messages(self, body: dict[str, Any], at: str) -> list[Message]:
        raw = imp.need_list(body, "messages", at)
        out: list[Message] = []
        results: list[ToolResult] = []
        for index in range(self.skip, len(raw)):
            where = f"{at}.messages[{index}]"
            obj = imp.need_obj(raw[index], where)
            role = imp.need_str(obj, "role", where)
            if role == "tool":
                results.append(self.tool_result(obj, where))
                continue
            if results:
                out.append(imp.make_message("tool", tuple(results), where))
                results = []
            message = self.message(role, obj, where)
            if message is not None:
                out.append(message)
        if results:
            out.append(imp.make_message("tool", tuple(results), f"{at}.messages"))
        return out

    def message(self, role: str, obj: dict[str, Any], at: str) -> Message | None:
        if role in _SYSTEM_ROLES:
            raise imp.unsupported("system message after the conversation started", at)
        if role == "function":
            raise imp.unsupported("legacy function message", at)
        if role not in ("user", "assistant"):
            raise imp.bad(f"unknown role {role!r}", f"{at}.role")
        self.check_keys(obj, _MESSAGE_KEYS[role], at)
        refusal = obj.get("refusal")
        if refusal is not None:
            raise imp.unsupported("refusal", f"{at}.refusal")
        if "refusal" in obj:
            self.note(f"{at}: dropped a null refusal")
        parts = self.content(obj.get("content"), f"{at}.content")
        if role == "assistant":
            parts.extend(self.tool_calls(obj.get("tool_calls"), f"{at}.tool_calls"))
        if not parts:
            self.note(f"{at}: dropped an empty {role} message")
            return None
        return imp.make_message(role, tuple(parts), at)

    def content(self, content: Any, at: str) -> list[MessageContent]:
        if content is None:
            return []
        if isinstance(content, str):
            return [Text(text=content)] if content else []
        if not isinstance(content, list):
            raise imp.bad("expected a string, an array of parts or null", at)
        parts = [self.part(part, f"{at}[{index}]") for index, part in enumerate(content)]
        return [p for p in parts if not (isinstance(p, Text) and not p.text)]

    def part(self, part: Any, at: str) -> Text | Image:
        obj = imp.need_obj(part, at)
        kind = imp.need_str(obj, "type", at)
        for marker in ("cache_control", "prompt_cache_breakpoint"):
            if marker in obj:
                self.note(f"{at}: dropped {marker} (Chat caching is automatic)")
        if kind == "text":
            self.part_keys(obj, {"type", "text"}, at)
            return Text(text=imp.need_str(obj, "text", at))
        if kind == "image_url":
            self.part_keys(obj, {"type", "image_url"}, at)
            return self.image(obj.get("image_url"), f"{at}.image_url")
        raise imp.unsupported(f"{kind} part", at)

    def part_keys(self, obj: dict[str, Any], allowed: set[str], at: str) -> None:
        extra = set(obj) - allowed - {"cache_control", "prompt_cache_breakpoint"}
        if extra:
            raise imp.unsupported(f"part field {sorted(extra)[0]!r}", at)

    def image(self, value: Any, at: str) -> Image:
        if not isinstance(value, dict):
            raise imp.unsupported("image URL", at)
        url = imp.need_str(value, "url", at)
        detail = value.get("detail", "auto")
        if detail != "auto" or set(value) - {"url", "detail"}:
            raise imp.unsupported(f"image detail {detail!r}", at)
        if "detail" in value:
            self.note(f"{at}: dropped detail 'auto' (the default)")
        head, sep, data = url.partition(",")
        if not (sep and head.startswith("data:") and head.endswith(";base64")):
            raise imp.unsupported("image URL", f"{at}.url")
        mime = head[len("data:") : -len(";base64")]
        return self.make_image(imp.b64decode(data, f"{at}.url"), mime, at)

    def tool_calls(self, value: Any, at: str) -> list[ToolCall]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise imp.bad("expected an array", at)
        return [self.tool_call(item, f"{at}[{index}]") for index, item in enumerate(value)]

    def tool_call(self, item: Any, at: str) -> ToolCall:
        obj = imp.need_obj(item, at)
        if obj.get("type", "function") != "function":
            raise imp.unsupported(f"{obj.get('type')} tool call", at)
        unknown = sorted(set(obj) - {"id", "type", "function"})
        if unknown:
            raise imp.unsupported(f"tool call field {unknown[0]!r}", at)
        function = imp.need_obj(obj.get("function"), f"{at}.function")
        call_id = imp.need_str(obj, "id", at)
        name = imp.need_str(function, "name", f"{at}.function")
        arguments = imp.need_str(function, "arguments", f"{at}.function")
        self.call_names[call_id] = name
        return ToolCall(id=call_id, name=name, arguments=clean_text(arguments).encode("utf-8"))

    def tool_result(self, obj: dict[str, Any], at: str) -> ToolResult:
        self.check_keys(obj, _MESSAGE_KEYS["tool"], at)
        call_id = imp.need_str(obj, "tool_call_id", at)
        content = obj.get("content")
        is_error = False
        if isinstance(content, list):
            texts = self.texts(content, f"{at}.content")
            is_error = bool(texts) and texts[0] == TOOL_ERROR_TEXT
            text = "".join(texts[1:] if is_error else texts)
        elif isinstance(content, str):
            text = content
        else:
            raise imp.bad("expected a string or an array of text parts", f"{at}.content")
        return ToolResult(
            call_id=call_id,
            tool_name=self.call_names.get(call_id, ""),
            content=clean_text(text).encode("utf-8"),
            is_error=is_error,
        )

    def tools(self, body: dict[str, Any], at: str) -> tuple[imp.Tool, ...]:
        raw = body.get("tools")
        if raw is None:
            return ()
        if not isinstance(raw, list):
            raise imp.bad("expected an array", f"{at}.tools")
        return tuple(self.tool(item, f"{at}.tools[{index}]") for index, item in enumerate(raw))

    def tool(self, item: Any, at: str) -> imp.Tool:
        obj = imp.need_obj(item, at)
        if obj.get("type") != "function" or set(obj) - {"type", "function"}:
            raise imp.unsupported(f"{obj.get('type')} tool", at)
        function = imp.need_obj(obj.get("function"), f"{at}.function")
        unknown = set(function) - {"name", "description", "parameters", "strict"}
        if unknown:
            raise imp.unsupported(f"tool field {sorted(unknown)[0]!r}", f"{at}.function")
        name, description = function.get("name"), function.get("description")
        schema, strict = function.get("parameters"), function.get("strict")
        return imp.make_tool(name, description, schema, at, strict)

    def params(self, body: dict[str, Any], at: str) -> Params:
        choice = _import_choice(body.get("tool_choice"))
        modeled = set(_MODELED)
        if choice is None:
            modeled.discard("tool_choice")
        if not (body.get("stream") is True and body.get("stream_options") == _STREAM_OPTIONS):
            modeled -= {"stream", "stream_options"}
        extra = imp.extra_fields(body, modeled, at)
        if isinstance(body.get("stop"), str):
            self.note(f"{at}.stop: one string read as a one-element array")
        params = imp.make_params(
            body,
            at,
            max_tokens_key="max_completion_tokens",
            stop_key="stop",
            tool_choice=choice,
            cache=("breakpoints", "5m"),
            extra=extra,
        )
        if "stream" not in modeled and params.stream:
            return dataclasses.replace(params, stream=False)
        return params


def _import_choice(choice: Any) -> imp.ToolChoice | None:
    if choice in ("auto", "none"):
        return choice  # type: ignore[no-any-return]
    if choice == "required":
        return "any"
    if isinstance(choice, dict) and set(choice) == {"type", "function"}:
        function = choice["function"]
        if (
            choice["type"] == "function"
            and isinstance(function, dict)
            and set(function) == {"name"}
        ):
            name = function["name"]
            return ToolChoiceName(name=name) if isinstance(name, str) else None
    return None


# --- Response side: JSON and event-stream decoding, usage, stop reason, errors -----------------
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
    return pc.api_error(
        provider=provider,
        status=status,
        body=jsonbytes.dumps(obj),
        headers={},
        error_type=kind,
        message=f"error in a 200 response: {message or '(no message)'}",
        request_id=None,
    )


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


PROVIDER: Final = OpenAIChatProvider(
    ResponseSide(
        endpoint=ENDPOINT,
        parse=parse_completion,
        stream=ChatStreamParser,
        error=error_from_body,
    )
)
"""The registered instance."""
