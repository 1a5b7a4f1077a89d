"""Anthropic Messages API: request bodies and the import of recorded bodies (SPEC P1–P3).

Key order (pinned by golden files in ``tests/providers/golden/``; never changes once released):

=====================  ================================================================
object                 keys, in order (absent keys are skipped, never sent as ``null``)
=====================  ================================================================
body                   ``model, max_tokens, system, messages, tools, tool_choice,
                       temperature, top_p, stop_sequences, stream, cache_control``, then
                       ``params.extra`` in its own order
system block           ``type, text, cache_control``
tool                   ``name, description, input_schema, cache_control``
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
API reference. Response parsing is not in this module yet.
"""

from __future__ import annotations

import base64
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
    ImportResult,
    breakpoint_messages,
    check_request,
    encode_messages,
    rewrite_id,
)
from llmcore.request import CacheTtl, Params, Request, ToolChoiceName

__all__ = ["PROVIDER", "AnthropicProvider"]

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


def tool_input(arguments: bytes) -> jsonbytes.Raw | dict[str, str]:
    """Return the ``input`` value for stored argument bytes (the module's documented rule)."""
    if jsonbytes.is_json_object(arguments):
        return jsonbytes.Raw(arguments.decode("utf-8"))
    if not arguments.strip():
        return jsonbytes.Raw("{}")
    return {"raw_arguments": arguments.decode("utf-8", "replace")}


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


def _encode_message(index: int, message: Message, option: Hashable) -> str:
    ttl, carried = option if isinstance(option, tuple) else (option, ())
    blocks: list[Any] = [b for b in (_block(part) for part in message.content) if b is not None]
    if ttl is not None:
        blocks[-1]["cache_control"] = breakpoint_dict(ttl)
    role = "user" if message.role == "tool" else message.role
    head = [jsonbytes.Raw(text) for text in carried]
    return jsonbytes.dumps_text({"role": role, "content": head + blocks})


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


class AnthropicProvider:
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
        body["messages"] = jsonbytes.Raw("[" + ",".join(texts) + "]")
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
            arguments = jsonbytes.dumps(imp.need_obj(obj.get("input", {}), f"{at}.input"))
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
            content=content.encode("utf-8"),
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
            unknown = set(tool) - {"name", "description", "input_schema", "cache_control", "type"}
            if unknown:
                raise imp.unsupported(f"tool field {sorted(unknown)[0]!r}", where)
            schema = tool.get("input_schema")
            tools.append(imp.make_tool(tool.get("name"), tool.get("description"), schema, where))
        return tuple(tools)

    def params(self, body: dict[str, Any], at: str) -> Params:
        choice = body.get("tool_choice")
        tool_choice = _import_choice(choice)
        extra = imp.extra_fields(body, _MODELED, at)
        if choice is not None and tool_choice is None:
            extra.append(("tool_choice", jsonbytes.dumps_text(choice)))
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


PROVIDER: Final = AnthropicProvider()
"""The registered instance."""
