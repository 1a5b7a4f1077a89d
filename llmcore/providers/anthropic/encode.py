"""Anthropic Messages: the request body encoder (SPEC P1–P3).

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
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from typing import Any, Final, assert_never

from llmcore import jsonbytes
from llmcore.errors import InvalidRequestError
from llmcore.messages import Image, Message, MessageContent, Text, ToolCall, ToolResult
from llmcore.models import model_info
from llmcore.providers import _import_common as imp
from llmcore.providers.base import (
    Carry,
    EncodeCache,
    NativePieces,
    arguments_json,
    base64_text,
    breakpoint_options,
    check_request,
    history_array,
    result_text,
    rewrite_id,
)
from llmcore.request import CacheTtl, Request, ToolChoiceName

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
        case Image(mime_type=mime):
            source = {"type": "base64", "media_type": mime, "data": base64_text(part)}
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
                block["content"] = result_text(part)
            if is_error:
                block["is_error"] = True
            return block
        case _:
            assert_never(part)


def _message_values(index: int, message: Message, option: Hashable) -> list[dict[str, Any]]:
    ttl, carried = option if isinstance(option, tuple) else (option, ())
    blocks: list[Any] = [block for part in message.content if (block := _block(part)) is not None]
    if ttl is not None:
        blocks[-1]["cache_control"] = breakpoint_dict(ttl)
    role = "user" if message.role == "tool" else message.role
    if carried:
        blocks[:0] = [jsonbytes.Raw(text) for text in carried]
    return [{"role": role, "content": blocks}]


_NATIVE: Final = NativePieces(
    "anthropic_pieces",
    (Text, Image, ToolCall, ToolResult, wire_id, arguments_json, _ID_MAX, True, None),
)
""":func:`_message_values` written in C (:class:`~llmcore.providers.history.NativePieces`)."""


def breakpoint_dict(ttl: Hashable) -> dict[str, str]:
    """Return ``cache_control`` for a TTL carried as a message option."""
    return cache_control("1h" if ttl == "1h" else "5m")


def _message_options(request: Request, carry: Carry | None) -> dict[int, Hashable]:
    options = breakpoint_options(request) if request.params.cache_mode == "breakpoints" else {}
    for index, texts in (carry or {}).items():
        if 0 <= index < len(request.messages) and texts:
            options[index] = (options.get(index), tuple(texts))
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


def build_body(
    request: Request, *, cache: EncodeCache | None = None, carry: Carry | None = None
) -> bytes:
    """Return the body bytes for ``request`` (the provider class documents it)."""
    check_request(request, cache)
    body = _head(request)
    options = _message_options(request, carry)
    body["messages"] = history_array(
        request.messages, options, _message_values, cache, native=_NATIVE
    )
    _tail(request, body)
    return jsonbytes.dumps(body)
