"""Anthropic Messages: the import of recorded request bodies (SPEC R2 ``import``).

The inverse of :mod:`llmcore.providers.anthropic.encode`: string content becomes one text block;
``tool_result`` blocks become ``tool`` messages; thinking and redacted-thinking blocks are
dropped (M4) and said in the notes; ``cache_control`` markers are dropped (llmcore places its
own, P3); unmodeled top-level fields go to ``params.extra`` in body order. Documents, server
tools, URL images and other content outside the four cases are refused.
"""

from __future__ import annotations

from typing import Any

from llmcore.messages import Image, Message, MessageContent, Text, ToolCall, ToolResult
from llmcore.providers import _import_common as imp
from llmcore.providers.anthropic.encode import _MODELED
from llmcore.request import Params, ToolChoiceName


class _Importer(imp.Importer):
    def __init__(self, raw: bytes | None = None) -> None:
        super().__init__()
        self.raw = raw
        """The bytes the body was parsed from, when known (for the spans of ``input``)."""
        self.path: tuple[str | int, ...] = ()
        """Where the block being read sits in the body (``("messages", 2, "content", 0)``)."""

    def messages(self, body: dict[str, Any], at: str) -> list[Message]:
        raw = imp.need_list(body, "messages", at)
        out: list[Message] = []
        for index, item in enumerate(raw):
            self.path = ("messages", index)
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
        start = self.path
        for index, block in enumerate(blocks):
            self.path = (*start, "content", index)
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
            arguments = self.input_bytes(value, "input" in obj, at)
            call_id, name = imp.need_str(obj, "id", at), imp.need_str(obj, "name", at)
            self.call_names[call_id] = name
            return ToolCall(id=call_id, name=name, arguments=arguments)
        if kind == "tool_result":
            return self.tool_result(obj, at)
        if kind in ("thinking", "redacted_thinking"):
            self.note(f"{at}: dropped a {kind} block (provider-only data, M4)")
            return None
        raise imp.unsupported(kind, at)

    def input_bytes(self, value: dict[str, Any], present: bool, at: str) -> bytes:
        """Return a ``tool_use`` ``input``'s bytes: its exact span in the body (M2, P2)."""
        return imp.value_span(self.raw, (*self.path, "input"), value, present, f"{at}.input")

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
        raw = imp.tool_list(body, at)
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
        tool_choice, extra = imp.choice_and_extra(body, _MODELED, at, _import_choice)
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
