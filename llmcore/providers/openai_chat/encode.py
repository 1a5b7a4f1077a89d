"""OpenAI Chat Completions: the request body encoder (SPEC P1–P3).

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

Source: https://platform.openai.com/docs/api-reference/chat/create and
https://platform.openai.com/docs/guides/prompt-caching.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, Final, assert_never

from llmcore import jsonbytes
from llmcore.errors import InvalidRequestError
from llmcore.messages import Image, Message, Text, ToolCall, ToolResult
from llmcore.providers import _import_common as imp
from llmcore.providers.base import (
    Carry,
    EncodeCache,
    NativePieces,
    arguments_json,
    check_request,
    data_url,
    history_array,
    result_text,
    rewrite_id,
)
from llmcore.providers.history import MessageValues
from llmcore.request import Request, ToolChoiceName

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


def _text_part(text: str | jsonbytes.Utf8) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _content_part(part: Text | Image) -> dict[str, Any] | None:
    if isinstance(part, Text):
        return _text_part(part.text) if part.text else None
    return {"type": "image_url", "image_url": {"url": data_url(part)}}


def _tool_call(call: ToolCall) -> dict[str, Any]:
    function = {"name": call.name, "arguments": tool_arguments(call.arguments)}
    return {"id": wire_id(call.id), "type": "function", "function": function}


def _tool_message(result: ToolResult) -> dict[str, Any]:
    parts = [_text_part(TOOL_ERROR_TEXT)] if result.is_error else []
    if result.content:
        parts.append(_text_part(result_text(result)))
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


def _message_values(index: int, message: Message, option: Hashable) -> list[dict[str, Any]]:
    return wire_messages(message)


_NATIVE: Final = NativePieces(
    "chat_pieces",
    (
        Text,
        Image,
        ToolCall,
        ToolResult,
        wire_id,
        arguments_json,
        _ID_MAX,
        False,
        jsonbytes.dumps(_text_part(TOOL_ERROR_TEXT)),
    ),
)
"""Chat's own :func:`_message_values` written in C; OpenRouter's messages without a cache marker
too (:func:`messages_array`)."""


def system_message(request: Request) -> dict[str, Any] | None:
    """Return the leading ``system`` message (one text part per non-empty block), or ``None``."""
    parts = [_text_part(text) for text in request.system if text]
    return {"role": "system", "content": parts} if parts else None


def messages_array(
    request: Request,
    options: Mapping[int, Hashable],
    values: MessageValues,
    cache: EncodeCache | None,
    system: dict[str, Any] | None = None,
    *,
    unmarked_as_chat: bool = False,
) -> jsonbytes.RawArray:
    """Return the ``messages`` array: ``system`` (default :func:`system_message`), then history.

    Args:
        request: The neutral request.
        options: The messages' encoding options, by index (OpenRouter's breakpoints).
        values: Returns a message's wire messages (:func:`wire_messages`, or OpenRouter's).
        cache: The conversation's encode cache, or ``None``.
        system: The system message to send in place of :func:`system_message`'s.
        unmarked_as_chat: ``values`` writes a message without an option exactly as
            :func:`wire_messages` does (OpenRouter's adds only cache markers), so the C writer
            writes those messages and ``values`` the marked ones.
    """
    if system is None:
        system = system_message(request)
    head = [system] if system is not None else []
    native = _NATIVE if values is _message_values or unmarked_as_chat else None
    return history_array(request.messages, options, values, cache, head, native)


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


def body_fields(request: Request, messages: jsonbytes.RawArray) -> dict[str, Any]:
    """Return the body's modeled fields in key order, ``params.extra`` not yet appended.

    Args:
        request: The neutral request.
        messages: The ``messages`` array, system message first
            (:func:`~llmcore.providers.history.history_array`).
    """
    params = request.params
    body: dict[str, Any] = {"model": request.model}
    if params.max_tokens is not None:
        body["max_completion_tokens"] = params.max_tokens
    body["messages"] = messages
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


def build_body(
    request: Request, *, cache: EncodeCache | None = None, carry: Carry | None = None
) -> bytes:
    """Return the body bytes for ``request`` (the provider class documents it)."""
    check_request(request, cache)
    body = body_fields(request, messages_array(request, {}, _message_values, cache))
    imp.put_extra(body, request.params)
    return jsonbytes.dumps(body)
