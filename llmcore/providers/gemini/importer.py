"""Gemini ``generateContent``: the import of recorded request bodies (SPEC R2 ``import``).

The inverse of :mod:`llmcore.providers.gemini.encode`. The model is in the URL, not the body: a
recorded body names it in a top-level ``model`` member (``models/`` prefix allowed), which the
caller adds from the request's URL (``llmcore import -p gemini`` takes ``--model`` too).

* ``model`` contents become assistant messages, ``user`` contents user messages; a ``user``
  content of ``functionResponse`` parts becomes a ``tool`` message (text parts beside them a user
  message after it).
* ``functionCall`` ``args`` keep their exact bytes where the body's bytes are known (M2, P2); a
  call without ``id`` gets :func:`~.encode.synthetic_id` of its position among the body's calls,
  and a response without ``id`` answers the oldest unanswered call of its name.
* ``functionResponse.response``: ``{"output": text}`` is that text, ``{"error": text}`` an error
  result, any other object its own bytes.
* Thoughts (``"thought": true`` parts) and ``thoughtSignature`` members are dropped (M4) and said
  in the notes. ``generationConfig`` with keys beyond the four modeled ones (or none) is kept
  whole in ``params.extra``, as are all other unmodeled fields (``cachedContent``,
  ``safetySettings``). A body naming a ``cachedContent`` beside a ``systemInstruction``,
  ``tools`` or ``toolConfig`` is refused at that field, as Gemini refuses it.
  ``fileData``, inline data other than the four image types, code execution and other parts
  are refused.
"""

from __future__ import annotations

from typing import Any, Final

from llmcore import jsonbytes
from llmcore.messages import Message, MessageContent, Text, ToolCall, ToolResult
from llmcore.providers import _import_common as imp
from llmcore.providers._jsonspan import find_span
from llmcore.providers.base import SUPPORTED_IMAGE_TYPES
from llmcore.providers.gemini.encode import _MODELED, synthetic_id
from llmcore.request import Params, ToolChoiceName

_CONFIG_KEYS: Final = frozenset({"temperature", "topP", "maxOutputTokens", "stopSequences"})
_MODES: Final = {"AUTO": "auto", "ANY": "any", "NONE": "none"}
_CACHE_HOLDS: Final = ("systemInstruction", "tools", "toolConfig")
_CACHED_WITH: Final = (
    "CachedContent can not be used with GenerateContent request setting system_instruction,"
    " tools or tool_config (Gemini refuses the body; the cache holds them, and a body built"
    " beside a cachedContent leaves them out)"
)


class _Importer(imp.Importer):
    """One import run over a ``generateContent`` body."""

    def __init__(self, raw: bytes | None = None) -> None:
        super().__init__()
        self.raw = raw
        self.calls = 0
        self.open_calls: list[tuple[str, str]] = []
        """(name, id) of the calls not yet answered, oldest first."""

    def run(self, body: Any, at: str) -> Any:
        """Read ``body``, its model from the ``model`` member (module doc)."""
        obj = _camel_structure(imp.need_obj(body, at))
        if obj.get("cachedContent") is not None:
            for key in _CACHE_HOLDS:
                if obj.get(key) is not None:
                    raise imp.bad(_CACHED_WITH, f"{at}.{key}")
        if isinstance(obj.get("model"), str):
            obj = {**obj, "model": obj["model"].removeprefix("models/")}
        return super().run(obj, at)

    def messages(self, body: dict[str, Any], at: str) -> list[Message]:
        out: list[Message] = []
        for index, item in enumerate(imp.need_list(body, "contents", at)):
            out.extend(self.content(item, index, f"{at}.contents[{index}]"))
        return out

    def content(self, item: Any, index: int, at: str) -> list[Message]:
        obj = imp.need_obj(item, at)
        role = obj.get("role", "user")
        if role not in ("user", "model"):
            raise imp.bad(f"role must be 'user' or 'model', found {role!r}", f"{at}.role")
        parts: list[MessageContent] = []
        for number, part in enumerate(imp.need_list(obj, "parts", at)):
            read = self.part(part, ("contents", index, "parts", number), f"{at}.parts[{number}]")
            if read is not None:
                parts.append(read)
        kind = "assistant" if role == "model" else "user"
        messages = imp.split_parts(kind, parts, at)
        if not messages and parts:
            self.note(f"{at}: dropped a content of empty text (no message holds only that)")
        return messages

    def part(self, part: Any, path: tuple[str | int, ...], at: str) -> MessageContent | None:
        obj = imp.need_obj(part, at)
        if "thoughtSignature" in obj:
            self.note(f"{at}: dropped a thoughtSignature (provider-only data, M4)")
        if obj.get("thought") is True:
            self.note(f"{at}: dropped a thought part (provider-only data, M4)")
            return None
        if "text" in obj:
            return Text(text=imp.need_str(obj, "text", at))
        if "inlineData" in obj:
            data = imp.need_obj(obj["inlineData"], f"{at}.inlineData")
            where = f"{at}.inlineData"
            mime = imp.need_str(data, "mimeType", where)
            if mime not in SUPPORTED_IMAGE_TYPES:
                raise imp.unsupported(f"inlineData of type {mime!r}", where)
            raw = imp.b64decode(imp.need_str(data, "data", where), f"{where}.data")
            return self.make_image(raw, mime, at)
        if "functionCall" in obj:
            return self.call(imp.need_obj(obj["functionCall"], f"{at}.functionCall"), path, at)
        if "functionResponse" in obj:
            inner = imp.need_obj(obj["functionResponse"], f"{at}.functionResponse")
            return self.result(inner, path, f"{at}.functionResponse")
        kinds = [key for key in obj if key not in ("thoughtSignature", "thought")]
        raise imp.unsupported(f"{kinds[0] if kinds else 'empty'} part", at)

    def call(self, call: dict[str, Any], path: tuple[str | int, ...], at: str) -> ToolCall:
        name = imp.need_str(call, "name", f"{at}.functionCall")
        call_id = call.get("id") if isinstance(call.get("id"), str) and call.get("id") else None
        call_id = call_id or synthetic_id(self.calls)
        self.calls += 1
        args = call.get("args", {})
        value = imp.need_obj(args, f"{at}.functionCall.args")
        arguments = self.span((*path, "functionCall", "args"), value) if "args" in call else None
        if arguments is None:
            arguments = imp.json_text(value, f"{at}.functionCall.args").encode("utf-8")
        self.call_names[call_id] = name
        self.open_calls.append((name, call_id))
        return ToolCall(id=call_id, name=name, arguments=arguments)

    def span(self, path: tuple[str | int, ...], value: Any) -> bytes | None:
        """Return the exact bytes at ``path`` in the raw body when they parse to ``value``."""
        if self.raw is None:
            return None
        try:
            begin, end = find_span(self.raw, path)
            span = self.raw[begin:end]
            return span if jsonbytes.loads(span) == value else None
        except (KeyError, ValueError, IndexError, RecursionError):
            return None

    def result(self, inner: dict[str, Any], path: tuple[str | int, ...], at: str) -> ToolResult:
        name = imp.need_str(inner, "name", at)
        call_id = inner.get("id") if isinstance(inner.get("id"), str) and inner.get("id") else None
        if call_id is None:
            call_id = next((cid for n, cid in self.open_calls if n == name), None)
            if call_id is None:
                raise imp.unsupported("unpaired tool call or result", at)
        self.open_calls = [(n, cid) for n, cid in self.open_calls if cid != call_id]
        response = imp.need_obj(inner.get("response", {}), f"{at}.response")
        if set(response) == {"output"} and isinstance(response["output"], str):
            content, error = response["output"], False
        elif set(response) == {"error"} and isinstance(response["error"], str):
            content, error = response["error"], True
        else:
            exact = self.span((*path, "functionResponse", "response"), response)
            text = exact if exact is not None else None
            content_bytes = text or imp.json_text(response, f"{at}.response").encode("utf-8")
            return ToolResult(call_id=call_id, tool_name=name, content=content_bytes)
        return ToolResult(
            call_id=call_id, tool_name=name, content=imp.text_bytes(content), is_error=error
        )

    def system(self, body: dict[str, Any], at: str) -> tuple[str, ...]:
        system = body.get("systemInstruction")
        if system is None:
            return ()
        where = f"{at}.systemInstruction"
        parts = imp.need_list(imp.need_obj(system, where), "parts", where)
        texts = []
        for index, part in enumerate(parts):
            obj = imp.need_obj(part, f"{where}.parts[{index}]")
            texts.append(imp.need_str(obj, "text", f"{where}.parts[{index}]"))
        return tuple(texts)

    def tools(self, body: dict[str, Any], at: str) -> tuple[imp.Tool, ...]:
        tools = []
        for index, group in enumerate(imp.tool_list(body, at)):
            where = f"{at}.tools[{index}]"
            obj = imp.need_obj(group, where)
            if set(obj) != {"functionDeclarations"}:
                raise imp.unsupported(f"tool {sorted(set(obj) - {'functionDeclarations'})}", where)
            for number, item in enumerate(imp.need_list(obj, "functionDeclarations", where)):
                spot = f"{where}.functionDeclarations[{number}]"
                decl = imp.need_obj(item, spot)
                schema = decl.get("parametersJsonSchema", decl.get("parameters"))
                tools.append(imp.make_tool(decl.get("name"), decl.get("description"), schema, spot))
                if "parameters" in decl:
                    self.note(f"{spot}: parameters written back as parametersJsonSchema")
        return tuple(tools)

    def params(self, body: dict[str, Any], at: str) -> Params:
        extra = imp.extra_fields(body, _MODELED | {"model"}, at)
        config = body.get("generationConfig")
        flat: dict[str, Any] = {}
        if isinstance(config, dict) and config and set(config) <= _CONFIG_KEYS:
            flat = config
        elif config is not None:
            extra.append(("generationConfig", imp.json_text(config, f"{at}.generationConfig")))
        choice = _import_choice(body.get("toolConfig"))
        if body.get("toolConfig") is not None and choice is None:
            extra.append(("toolConfig", imp.json_text(body["toolConfig"], f"{at}.toolConfig")))
        return imp.make_params(
            {"temperature": flat.get("temperature"), "top_p": flat.get("topP"), **flat},
            f"{at}.generationConfig",
            max_tokens_key="maxOutputTokens",
            stop_key="stopSequences",
            tool_choice=choice,
            cache=("off", "5m"),
            extra=extra,
        )


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def _camel_keys(value: Any, depth: int = 1) -> Any:
    """``value`` with its object keys in lowerCamelCase, ``depth`` levels down."""
    if isinstance(value, list):
        return [_camel_keys(item, depth) for item in value]
    if not isinstance(value, dict) or depth == 0:
        return value
    return {_camel(k): _camel_keys(v, depth - 1) for k, v in value.items()}


def _camel_structure(body: dict[str, Any]) -> dict[str, Any]:
    """The body with the API's field names in lowerCamelCase (it takes either spelling).

    Only structural fields are renamed: never keys inside ``args``, ``response`` or a schema.
    """
    out: dict[str, Any] = _camel_keys(body)
    for content in out.get("contents") or []:
        if isinstance(content, dict):
            content["parts"] = (
                [
                    {
                        k: _camel_keys(v)
                        if k in ("functionCall", "functionResponse", "inlineData")
                        else v
                        for k, v in part.items()
                    }
                    if isinstance(part, dict)
                    else part
                    for part in _camel_keys(content.get("parts"))
                ]
                if isinstance(content.get("parts"), list)
                else content.get("parts")
            )
    for key in ("systemInstruction", "toolConfig"):
        out[key] = _camel_keys(out.get(key), 2) if key in out else None
        if out[key] is None:
            del out[key]
    if isinstance(out.get("tools"), list):
        out["tools"] = [
            _camel_keys(tool, 3) if isinstance(tool, dict) else tool for tool in out["tools"]
        ]
    return out


def _import_choice(config: Any) -> imp.ToolChoice | None:
    if not isinstance(config, dict) or set(config) != {"functionCallingConfig"}:
        return None
    inner = config["functionCallingConfig"]
    if not isinstance(inner, dict):
        return None
    mode, names = inner.get("mode"), inner.get("allowedFunctionNames")
    if set(inner) == {"mode"} and mode in _MODES:
        return _MODES[mode]  # type: ignore[return-value]
    if set(inner) == {"mode", "allowedFunctionNames"} and mode == "ANY":
        if isinstance(names, list) and len(names) == 1 and isinstance(names[0], str):
            return ToolChoiceName(name=names[0])
    return None
