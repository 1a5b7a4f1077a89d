"""OpenAI Chat Completions: the import of recorded request bodies (SPEC R2 ``import``).

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
"""

from __future__ import annotations

import dataclasses
from typing import Any, Final

from llmcore.messages import Image, Message, MessageContent, Text, ToolCall, ToolResult, clean_text
from llmcore.providers import _import_common as imp
from llmcore.providers.openai_chat.encode import _MODELED, _STREAM_OPTIONS, TOOL_ERROR_TEXT
from llmcore.request import Params, ToolChoiceName

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
        raise imp.unsupported(imp.typed(kind, "part"), at)

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
            raise imp.unsupported(imp.typed(obj.get("type"), "tool call"), at)
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
        raw = imp.tool_list(body, at)
        return tuple(self.tool(item, f"{at}.tools[{index}]") for index, item in enumerate(raw))

    def tool(self, item: Any, at: str) -> imp.Tool:
        obj = imp.need_obj(item, at)
        if obj.get("type") != "function" or set(obj) - {"type", "function"}:
            raise imp.unsupported(imp.typed(obj.get("type"), "tool"), at)
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
