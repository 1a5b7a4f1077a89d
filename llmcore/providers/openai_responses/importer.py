"""OpenAI Responses: the import of recorded request bodies (SPEC R2 ``import``).

Import (:meth:`OpenAIResponsesProvider.import_body`) is the inverse; its rules are in
:class:`_Importer`.
"""

from __future__ import annotations

from typing import Any, Final

from llmcore.messages import Image, Message, MessageContent, Text, ToolCall, ToolResult
from llmcore.providers import _import_common as imp
from llmcore.providers.base import (
    ImportResult,
)
from llmcore.providers.openai_responses.encode import _MODELED
from llmcore.request import Params, ToolChoiceName

_NO_STOP: Final = "\x00stop"
"""A key no body holds: Responses has no stop field, so every recorded key stays in extra."""
_REFUSED_TOP: Final = ("previous_response_id", "conversation", "prompt")
"""Server-side state (stored responses, conversations, prompt templates) a stateless replay
cannot stand for."""
_MESSAGE_KEYS: Final = frozenset({"type", "role", "content", "id", "status", "phase"})
_CALL_KEYS: Final = frozenset({"type", "call_id", "name", "arguments", "id", "status"})
_OUTPUT_KEYS: Final = frozenset({"type", "call_id", "output", "id", "status"})
_TOOL_KEYS: Final = frozenset({"type", "name", "description", "parameters", "strict"})
_SYSTEM_ROLES: Final = ("system", "developer")


class _Importer(imp.Importer):
    """Reads a recorded Responses body back into a neutral request (SPEC R2 ``import``).

    * ``input`` is a string (one user text) or an item list. Easy messages (no ``type``) and
      ``message`` items with string or part-array content are read alike. Consecutive assistant
      items (text messages and ``function_call``) form one assistant message; consecutive
      ``function_call_output`` items one tool message; each user item one user message.
    * System and developer messages before the first other item join the system prompt, after
      ``instructions`` (rebuilt into ``instructions``: normalization "leading system messages
      moved to instructions"); one later in the conversation is refused, since llmcore's
      history has no system role (M1).
    * Dropped with a note (M4 and llmcore's fixed wire forms): ``reasoning`` items; the
      provider's ``id`` / ``status`` / ``phase`` on replayed items; ``annotations`` of assistant
      text; an image ``detail`` other than ``auto``; ``store: true`` (llmcore always sends
      ``false``); empty texts.
    * Refused with :class:`~llmcore.errors.UnsupportedContentError` naming the feature:
      ``previous_response_id``, ``conversation``, ``prompt``; ``input_file`` parts, images by
      URL or ``file_id``, refusal parts; items other than messages, ``function_call``,
      ``function_call_output`` and ``reasoning`` (``web_search_call``, ``file_search_call``,
      ``computer_call``, ``item_reference``, ``tool_search_call``, ``additional_tools``, MCP and
      code-interpreter items, …); fields llmcore cannot carry (``namespace`` on a call, a
      non-string ``output``); tools other than plain ``function`` tools (hosted tools,
      ``defer_loading``, namespaces); ``instructions`` as an item list.
    * Unmodeled top-level fields (``include``, ``reasoning``, ``text``, ``user``, ``stream:
      false``, …) go to ``params.extra`` in body order; a ``tool_choice`` with no neutral form
      (``allowed_tools``, hosted tools) goes there too.
    """

    def __init__(self) -> None:
        super().__init__()
        self.skip = 0
        self.pending: list[MessageContent] = []
        self.pending_role = ""
        self.out: list[Message] = []

    def run(self, body: Any, at: str) -> ImportResult:
        """Refuse server-state fields first, then read ``body``."""
        if isinstance(body, dict):
            for key in _REFUSED_TOP:
                if body.get(key) is not None:
                    raise imp.unsupported(key, f"{at}.{key}")
        return super().run(body, at)

    def system(self, body: dict[str, Any], at: str) -> tuple[str, ...]:
        """Return ``instructions`` and the leading system/developer messages' texts."""
        out: list[str] = []
        instructions = body.get("instructions")
        if isinstance(instructions, list):
            raise imp.unsupported("instructions as an item list", f"{at}.instructions")
        if instructions is not None and not isinstance(instructions, str):
            raise imp.bad("expected a string", f"{at}.instructions")
        if instructions:
            out.append(instructions)
        items = body.get("input")
        for index, item in enumerate(items if isinstance(items, list) else []):
            if not isinstance(item, dict) or item.get("type", "message") != "message":
                break
            if item.get("role") not in _SYSTEM_ROLES:
                break
            where = f"{at}.input[{index}]"
            self.check_keys(item, _MESSAGE_KEYS, "message", where)
            out.append(self.plain_text(item.get("content"), f"{where}.content"))
            self.skip = index + 1
        return tuple(text for text in out if text)

    def plain_text(self, content: Any, at: str) -> str:
        """Return string content, or the joined texts of a text-part array."""
        if isinstance(content, str):
            return content
        return imp.join_text_blocks(content, at)

    def messages(self, body: dict[str, Any], at: str) -> list[Message]:
        """Return the history read from ``input``."""
        if "input" not in body:
            raise imp.bad("missing key 'input' (is this a Responses body?)", f"{at}.input")
        items = body.get("input")
        if isinstance(items, str):
            return [Message.user(items)] if items else []
        if not isinstance(items, list):
            raise imp.bad("expected a string or an array", f"{at}.input")
        for index in range(self.skip, len(items)):
            self.item(items[index], f"{at}.input[{index}]")
        self.flush("")
        return self.out

    def flush(self, role: str) -> None:
        """Close the pending assistant or tool message unless ``role`` continues it."""
        if role == self.pending_role:
            return
        if self.pending:
            at = f"input (a {self.pending_role} turn)"
            self.out.append(imp.make_message(self.pending_role, tuple(self.pending), at))
        elif self.pending_role:
            self.note(f"dropped an {self.pending_role} turn holding only empty text")
        self.pending, self.pending_role = [], role

    def item(self, item: Any, at: str) -> None:
        """Read one ``input`` item into the pending messages."""
        obj = imp.need_obj(item, at)
        kind = obj.get("type", "message")
        if kind == "message":
            self.message(obj, at)
        elif kind == "function_call":
            self.flush("assistant")
            self.pending.append(self.call(obj, at))
        elif kind == "function_call_output":
            self.flush("tool")
            self.pending.append(self.output(obj, at))
        elif kind == "reasoning":
            self.note(f"{at}: dropped a reasoning item (provider-only data, M4)")
        else:
            raise imp.unsupported(imp.typed(kind, "item"), at)

    def check_keys(self, obj: dict[str, Any], allowed: frozenset[str], kind: str, at: str) -> None:
        """Refuse fields llmcore cannot carry; note the provider-only ones dropped."""
        unknown = [key for key in obj if key not in allowed]
        if unknown:
            raise imp.unsupported(f"{kind} field {unknown[0]!r}", f"{at}.{unknown[0]}")
        dropped = [key for key in ("id", "status", "phase") if key in obj]
        if dropped:
            self.note(f"{at}: dropped {', '.join(dropped)} (provider-only data, M4)")

    def message(self, obj: dict[str, Any], at: str) -> None:
        """Read a message item (easy or typed)."""
        self.check_keys(obj, _MESSAGE_KEYS, "message", at)
        role = imp.need_str(obj, "role", at)
        if role == "assistant":
            self.flush("assistant")
            self.pending.extend(self.assistant_texts(obj.get("content"), f"{at}.content"))
            return
        if role in _SYSTEM_ROLES:
            raise imp.unsupported(f"{role} message inside the conversation", f"{at}.role")
        if role != "user":
            raise imp.bad(f"unknown role {role!r}", f"{at}.role")
        self.flush("")
        parts = self.user_parts(obj.get("content"), f"{at}.content")
        if any(not isinstance(p, Text) or p.text for p in parts):
            self.out.append(imp.make_message("user", tuple(parts), at))
        else:
            self.note(f"{at}: dropped a user message holding only empty text")

    def assistant_texts(self, content: Any, at: str) -> list[Text]:
        """Return an assistant message's texts (empty ones dropped)."""
        if content == "":
            self.note(f"{at}: dropped an empty assistant text")
        if isinstance(content, str):
            return [Text(text=content)] if content else []
        if not isinstance(content, list):
            raise imp.bad("expected a string or an array", at)
        texts: list[Text] = []
        for index, part in enumerate(content):
            where = f"{at}[{index}]"
            obj = imp.need_obj(part, where)
            if obj.get("type") not in ("output_text", "input_text"):
                raise imp.unsupported(imp.typed(obj.get("type"), "part"), where)
            if obj.get("annotations"):
                self.note(f"{where}: dropped annotations (citations are not kept, M4)")
            text = imp.need_str(obj, "text", where)
            if text:
                texts.append(Text(text=text))
        return texts

    def user_parts(self, content: Any, at: str) -> list[MessageContent]:
        """Return a user message's parts."""
        if isinstance(content, str):
            return [Text(text=content)]
        if not isinstance(content, list):
            raise imp.bad("expected a string or an array", at)
        parts: list[MessageContent] = []
        for index, part in enumerate(content):
            where = f"{at}[{index}]"
            obj = imp.need_obj(part, where)
            kind = obj.get("type")
            if kind == "input_text":
                parts.append(Text(text=imp.need_str(obj, "text", where)))
            elif kind == "input_image":
                parts.append(self.image(obj, where))
            else:
                raise imp.unsupported(imp.typed(kind, "part"), where)
        return parts

    def image(self, obj: dict[str, Any], at: str) -> Image:
        """Read an ``input_image`` part with a base64 ``data:`` URL."""
        if obj.get("file_id") is not None:
            raise imp.unsupported("input_image by file_id", f"{at}.file_id")
        url = imp.need_str(obj, "image_url", at)
        head, sep, data = url.partition(",")
        if not (head.startswith("data:") and head.endswith(";base64") and sep):
            raise imp.unsupported("input_image by URL", f"{at}.image_url")
        if obj.get("detail", "auto") != "auto":
            self.note(f"{at}: image detail {obj.get('detail')!r} sent as 'auto'")
        raw = imp.b64decode(data, f"{at}.image_url")
        return self.make_image(raw, head[len("data:") : -len(";base64")], at)

    def call(self, obj: dict[str, Any], at: str) -> ToolCall:
        """Read a ``function_call`` item; ``arguments`` keep the string's UTF-8 bytes."""
        self.check_keys(obj, _CALL_KEYS, "function_call", at)
        call_id, name = imp.need_str(obj, "call_id", at), imp.need_str(obj, "name", at)
        self.call_names[call_id] = name
        arguments = imp.text_bytes(imp.need_str(obj, "arguments", at))
        return ToolCall(id=call_id, name=name, arguments=arguments)

    def output(self, obj: dict[str, Any], at: str) -> ToolResult:
        """Read a ``function_call_output`` item (string ``output`` only)."""
        self.check_keys(obj, _OUTPUT_KEYS, "function_call_output", at)
        call_id = imp.need_str(obj, "call_id", at)
        if not isinstance(obj.get("output"), str):
            raise imp.unsupported("function_call_output with content parts", f"{at}.output")
        return ToolResult(
            call_id=call_id,
            tool_name=self.call_names.get(call_id, ""),
            content=imp.text_bytes(obj["output"]),
        )

    def tools(self, body: dict[str, Any], at: str) -> tuple[imp.Tool, ...]:
        """Return the plain function tools; anything else is refused."""
        raw = imp.tool_list(body, at)
        tools = []
        for index, item in enumerate(raw):
            where = f"{at}.tools[{index}]"
            tool = imp.need_obj(item, where)
            if tool.get("type") != "function":
                raise imp.unsupported(imp.typed(tool.get("type"), "tool"), where)
            unknown = [key for key in tool if key not in _TOOL_KEYS]
            if unknown:
                raise imp.unsupported(f"tool field {unknown[0]!r}", f"{where}.{unknown[0]}")
            name, description = tool.get("name"), tool.get("description")
            schema, strict = tool.get("parameters"), tool.get("strict")
            tools.append(imp.make_tool(name, description, schema, where, strict))
        return tuple(tools)

    def params(self, body: dict[str, Any], at: str) -> Params:
        """Return the parameters; unmodeled fields go to ``extra`` in body order."""
        store = body.get("store")
        if store is not None and not isinstance(store, bool):
            raise imp.bad("expected a boolean", f"{at}.store")
        if store is True:
            self.note(f"{at}.store: store: true sent as false (llmcore replays statelessly)")
        tool_choice, extra = imp.choice_and_extra(body, _MODELED, at, _import_choice)
        return imp.make_params(
            body,
            at,
            max_tokens_key="max_output_tokens",
            stop_key=_NO_STOP,
            tool_choice=tool_choice,
            cache=("breakpoints", "5m"),
            extra=extra,
        )


def _import_choice(choice: Any) -> imp.ToolChoice | None:
    if choice in ("auto", "none"):
        return choice  # type: ignore[no-any-return]
    if choice == "required":
        return "any"
    if isinstance(choice, dict) and set(choice) == {"type", "name"}:
        if choice["type"] == "function" and isinstance(choice["name"], str):
            return ToolChoiceName(name=choice["name"])
    return None
