"""Amazon Bedrock Converse: the import of recorded request bodies (SPEC R2 ``import``).

The inverse of :mod:`llmcore.providers.bedrock_converse.encode`. A Converse body has no model
(it is in the URL), so the body to import carries it as ``modelId`` — the form of boto3's
``converse(modelId=…, messages=…)`` keywords and of the API reference's request; the command
line adds it from a corpus case's URL. ``toolResult`` blocks become ``tool`` messages;
``cachePoint`` blocks are dropped (llmcore places its own, P3); ``reasoningContent`` blocks
are dropped (M4) and said in the notes; ``toolResult`` ``json`` content becomes its compact JSON
text; unmodeled top-level fields go to ``params.extra`` in body order. Documents, videos, S3
image sources, guard content and other content outside the four cases are refused. Roles
must alternate, as Bedrock requires (``A conversation must alternate between user and assistant
roles``): two consecutive messages of one role are refused at the second one's ``role``
(:class:`~llmcore.errors.RequestFileError`), since the builder would join them into one message
and the bytes would differ. For the same reason a message followed by another that holds
nothing llmcore sends (no block, only blank text, only dropped blocks) is refused at its
``content``.
"""

from __future__ import annotations

from typing import Any, Final

from llmcore.messages import Image, Message, MessageContent, Text, ToolCall, ToolResult
from llmcore.providers import _import_common as imp
from llmcore.providers.base import ImportResult
from llmcore.providers.bedrock_converse.encode import IMAGE_FORMATS, MODELED
from llmcore.request import Params, ToolChoiceName

_MIME: Final = {fmt: mime for mime, fmt in IMAGE_FORMATS.items()}
_IMPORT_MODELED: Final = MODELED | {"model", "modelId"}
_NOT_ALTERNATING: Final = (
    "{role!r} follows {role!r} (messages[{before}]): Converse roles must alternate between"
    " user and assistant (Bedrock refuses the body with a ValidationException)"
)

_EMPTIED: Final = (
    "this {role!r} message holds nothing llmcore sends (no block, only blank text, or only"
    " cachePoint and reasoningContent blocks): the body rebuilt without it would change the"
    " conversation (the messages around it joined, or the assistant first)"
)


class _Importer(imp.Importer):
    """One import run of a Converse body (see the module doc)."""

    def __init__(self, raw: bytes | None = None) -> None:
        super().__init__()
        self.raw = raw
        """The bytes the body was parsed from, when known (for the spans of ``input``)."""
        self.path: tuple[str | int, ...] = ()
        """Where the block being read sits in the body."""
        self.ttls: set[str] = set()
        """The TTLs of the ``cachePoint`` blocks seen."""

    def run(self, body: Any, at: str) -> ImportResult:
        """Read ``body`` (with its ``modelId``) into an :class:`ImportResult`."""
        obj = imp.need_obj(body, at)
        if "model" not in obj:
            model = obj.get("modelId")
            if not isinstance(model, str) or not model:
                raise imp.bad(
                    "a Converse body names no model: add the URL's model id as modelId"
                    " (llmcore import: --model)",
                    at,
                )
            obj = {"model": model, **obj}
        return super().run(obj, at)

    def messages(self, body: dict[str, Any], at: str) -> list[Message]:
        out: list[Message] = []
        previous = None
        for index, item in enumerate(imp.need_list(body, "messages", at)):
            where = f"{at}.messages[{index}]"
            obj = imp.need_obj(item, where)
            role = imp.need_str(obj, "role", where)
            if role == previous:
                raise imp.bad(_NOT_ALTERNATING.format(role=role, before=index - 1), f"{where}.role")
            previous = role
            parts: list[MessageContent] = []
            for number, block in enumerate(imp.need_list(obj, "content", where)):
                self.path = ("messages", index, "content", number)
                part = self.block(block, f"{where}.content[{number}]")
                if part is not None:
                    parts.append(part)
            made = imp.split_parts(role, parts, where)
            if not made and index + 1 < len(body["messages"]):
                raise imp.bad(_EMPTIED.format(role=role), f"{where}.content")
            out.extend(made)
        return out

    def block(self, block: Any, at: str) -> MessageContent | None:
        obj = imp.need_obj(block, at)
        if len(obj) != 1:
            raise imp.bad("a content block has exactly one member", at)
        ((kind, value),) = obj.items()
        if kind == "text":
            return Text(text=imp.need_str(obj, "text", at))
        if kind == "image":
            return self.image(imp.need_obj(value, f"{at}.image"), f"{at}.image")
        if kind == "toolUse":
            use = imp.need_obj(value, f"{at}.toolUse")
            where = f"{at}.toolUse"
            arguments = self.input_bytes(use, where)
            call_id, name = imp.need_str(use, "toolUseId", where), imp.need_str(use, "name", where)
            self.call_names[call_id] = name
            return ToolCall(id=call_id, name=name, arguments=arguments)
        if kind == "toolResult":
            return self.tool_result(imp.need_obj(value, f"{at}.toolResult"), f"{at}.toolResult")
        if kind == "cachePoint":
            self.cache_point(value)
            return None
        if kind == "reasoningContent":
            self.note(f"{at}: dropped a reasoningContent block (provider-only data, M4)")
            return None
        raise imp.unsupported(kind, at)

    def input_bytes(self, use: dict[str, Any], at: str) -> bytes:
        """Return a ``toolUse.input``'s bytes: its exact span in the body (M2, P2)."""
        value = imp.need_obj(use.get("input", {}), f"{at}.input")
        path = (*self.path, "toolUse", "input")
        return imp.value_span(self.raw, path, value, "input" in use, f"{at}.input")

    def cache_point(self, value: Any) -> None:
        ttl = value.get("ttl") if isinstance(value, dict) else None
        self.ttls.add("1h" if ttl == "1h" else "5m")

    def image(self, obj: dict[str, Any], at: str) -> Image:
        source = imp.need_obj(obj.get("source"), f"{at}.source")
        if "bytes" not in source:
            raise imp.unsupported(f"image source {sorted(source)[:1]}", f"{at}.source")
        data = imp.b64decode(imp.need_str(source, "bytes", f"{at}.source"), f"{at}.source.bytes")
        fmt = imp.need_str(obj, "format", at)
        mime = _MIME.get(fmt)
        if mime is None:
            raise imp.unsupported(f"image format {fmt!r}", f"{at}.format")
        return self.make_image(data, mime, at)

    def tool_result(self, obj: dict[str, Any], at: str) -> ToolResult:
        texts: list[str] = []
        for index, item in enumerate(imp.need_list(obj, "content", at)):
            where = f"{at}.content[{index}]"
            part = imp.need_obj(item, where)
            if "text" in part and len(part) == 1:
                texts.append(imp.need_str(part, "text", where))
            elif "json" in part and len(part) == 1:
                texts.append(imp.json_text(part["json"], f"{where}.json"))
            else:
                raise imp.unsupported(f"tool result content {sorted(part)[:1]}", where)
        call_id = imp.need_str(obj, "toolUseId", at)
        return ToolResult(
            call_id=call_id,
            tool_name=self.call_names.get(call_id, ""),
            content=imp.text_bytes("".join(texts)),
            is_error=obj.get("status") == "error",
        )

    def system(self, body: dict[str, Any], at: str) -> tuple[str, ...]:
        system = body.get("system")
        if system is None:
            return ()
        if not isinstance(system, list):
            raise imp.bad("system must be an array of blocks", f"{at}.system")
        texts: list[str] = []
        for index, block in enumerate(system):
            where = f"{at}.system[{index}]"
            obj = imp.need_obj(block, where)
            if "cachePoint" in obj:
                self.cache_point(obj["cachePoint"])
            elif "text" in obj and len(obj) == 1:
                texts.append(imp.need_str(obj, "text", where))
            else:
                raise imp.unsupported(f"system block {sorted(obj)[:1]}", where)
        return tuple(texts)

    def tools(self, body: dict[str, Any], at: str) -> tuple[imp.Tool, ...]:
        config = body.get("toolConfig")
        if config is None:
            return ()
        config = imp.need_obj(config, f"{at}.toolConfig")
        tools = []
        for index, item in enumerate(imp.need_list(config, "tools", f"{at}.toolConfig")):
            where = f"{at}.toolConfig.tools[{index}]"
            obj = imp.need_obj(item, where)
            if "cachePoint" in obj:
                self.cache_point(obj["cachePoint"])
                continue
            if "toolSpec" not in obj:
                raise imp.unsupported(f"tool {sorted(obj)[:1]}", where)
            spec = imp.need_obj(obj["toolSpec"], f"{where}.toolSpec")
            unknown = set(spec) - {"name", "description", "inputSchema", "strict"}
            if unknown:
                raise imp.unsupported(f"tool field {sorted(unknown)[0]!r}", f"{where}.toolSpec")
            schema = imp.need_obj(spec.get("inputSchema", {"json": {}}), f"{where}.inputSchema")
            tools.append(
                imp.make_tool(
                    spec.get("name"),
                    spec.get("description"),
                    schema.get("json"),
                    f"{where}.toolSpec",
                    spec.get("strict"),
                )
            )
        return tuple(tools)

    def params(self, body: dict[str, Any], at: str) -> Params:
        inference = imp.need_obj(body.get("inferenceConfig", {}), f"{at}.inferenceConfig")
        known = {"maxTokens", "temperature", "topP", "stopSequences"}
        if set(inference) - known:
            raise imp.unsupported(
                f"inferenceConfig field {sorted(set(inference) - known)[0]!r}",
                f"{at}.inferenceConfig",
            )
        flat = {"top_p": inference.get("topP"), **inference}
        extra = imp.extra_fields(body, _IMPORT_MODELED, at)
        choice = self.tool_choice(body, at)
        ttls = self.ttls
        cache: tuple[imp.CacheMode, imp.CacheTtl] = (
            ("breakpoints", "1h" if ttls == {"1h"} else "5m") if ttls else ("off", "5m")
        )
        return imp.make_params(
            flat,
            f"{at}.inferenceConfig",
            max_tokens_key="maxTokens",
            stop_key="stopSequences",
            tool_choice=choice,
            cache=cache,
            extra=extra,
        )

    def tool_choice(self, body: dict[str, Any], at: str) -> imp.ToolChoice | None:
        config = body.get("toolConfig")
        choice = config.get("toolChoice") if isinstance(config, dict) else None
        if choice is None:
            return None
        if isinstance(choice, dict) and len(choice) == 1:
            ((kind, value),) = choice.items()
            if kind in ("auto", "any") and value == {}:
                return kind  # type: ignore[no-any-return]
            if kind == "tool" and isinstance(value, dict) and set(value) == {"name"}:
                if isinstance(value["name"], str):
                    return ToolChoiceName(name=value["name"])
        raise imp.unsupported(f"toolChoice {imp.json_text(choice, at)}", f"{at}.toolConfig")
