"""Request parameters that change the scripted answer: ``tool_choice`` and structured output.

The script (:mod:`llmcore.emulator.script`) says what the model "would" answer; these rules
make the answer obey the request, as the real model is constrained to:

* ``tool_choice`` none (Anthropic ``{"type": "none"}``, OpenAI ``"none"``): no tool call; a
  reply that only calls tools answers :data:`~llmcore.emulator.script.NO_TOOLS_TEXT`.
  "none: the model will not call any tool" [O-TOOLS]; Anthropic [A-TOOLS] "none prevents Claude
  from using any tools".
* forced — Anthropic ``any`` / ``tool``, OpenAI ``"required"`` / a named function: the answer is
  tool calls only (Anthropic [A-TOOLS]: "we will prefill the assistant message to force a tool
  to be used. This means that the models will not emit a natural language response or
  explanation before tool_use content blocks"). A named tool is the one called: the scripted
  calls of that tool are kept, else one call is made with arguments that are a minimal valid
  instance of the tool's input schema (:func:`minimal_instance`). ``any`` / ``required`` keep
  the scripted calls of offered tools, else call the first tool the same way.
* structured output — Chat ``response_format`` ``json_schema``, Responses ``text.format``
  ``json_schema``, Anthropic ``output_config.format`` ``json_schema``: the text is JSON valid for
  the schema. A scripted text that is itself a JSON object is sent as it is (the script author
  chose it); any other text becomes :func:`minimal_instance` of the schema. ``json_object``
  gives ``{}`` unless the scripted text is a JSON object.

Sources: [A-TOOLS] https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use
and [O-TOOLS] https://platform.openai.com/docs/guides/function-calling (read 2026-12-02).
"""

from __future__ import annotations

from typing import Any, Final, Literal

from llmcore import jsonbytes
from llmcore.emulator.script import NO_TOOLS_TEXT, Reply, ScriptedCall

__all__ = ["Api", "choice_of", "minimal_instance", "obey", "schema_of"]

Api = Literal["anthropic", "chat", "responses"]
Choice = tuple[Literal["auto", "none", "forced"], str | None]
"""``(mode, tool name)``: the name is set only for a named forced tool."""

_FORMATS: Final[dict[str, str]] = {
    "date-time": "1970-01-01T00:00:00Z",
    "date": "1970-01-01",
    "time": "00:00:00",
    "email": "user@example.com",
    "uri": "https://example.com/",
    "uuid": "00000000-0000-0000-0000-000000000000",
}
"""A valid string for each common ``format`` (pydantic checks these)."""
MAX_DEPTH: Final = 32
"""Deepest schema nesting (or ``$ref`` chain) followed; deeper gives ``null``."""


def choice_of(api: Api, body: dict[str, Any]) -> Choice:
    """Return what ``tool_choice`` asks of a validated body."""
    value = body.get("tool_choice")
    if api == "anthropic":
        kind = value.get("type") if isinstance(value, dict) else "auto"
        if kind == "none":
            return "none", None
        if kind in ("any", "tool"):
            return "forced", value.get("name") if kind == "tool" else None  # type: ignore[union-attr]
        return "auto", None
    if value == "none":
        return "none", None
    if value == "required":
        return "forced", None
    if isinstance(value, dict) and value.get("type") == "function":
        function = value.get("function") if api == "chat" else value
        name = function.get("name") if isinstance(function, dict) else None
        return "forced", name if isinstance(name, str) else None
    return "auto", None


def _tools(api: Api, body: dict[str, Any]) -> list[tuple[str, Any]]:
    """Return ``(name, input schema)`` of each function tool offered."""
    out: list[tuple[str, Any]] = []
    for tool in body.get("tools") or ():
        if not isinstance(tool, dict):
            continue
        if api == "anthropic":
            out.append((str(tool.get("name", "")), tool.get("input_schema")))
        elif api == "chat":
            function = tool.get("function") or {}
            out.append((str(function.get("name", "")), function.get("parameters")))
        elif tool.get("type") == "function":
            out.append((str(tool.get("name", "")), tool.get("parameters")))
    return out


def schema_of(api: Api, body: dict[str, Any]) -> tuple[str, Any] | None:
    """Return ``("json_schema", schema)`` or ``("json_object", None)`` a body asks for, or None."""
    if api == "chat":
        fmt = body.get("response_format")
    elif api == "responses":
        text = body.get("text")
        fmt = text.get("format") if isinstance(text, dict) else None
    else:
        config = body.get("output_config")
        fmt = config.get("format") if isinstance(config, dict) else None
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if kind == "json_object":
        return "json_object", None
    if kind != "json_schema":
        return None
    assert isinstance(fmt, dict)
    inner = fmt.get("json_schema") if api == "chat" else fmt
    schema = inner.get("schema") if isinstance(inner, dict) else None
    return "json_schema", schema if isinstance(schema, dict) else {}


def _ref(root: dict[str, Any], ref: str) -> Any:
    node: Any = root
    for part in ref.removeprefix("#/").split("/") if ref.startswith("#") else ["-"]:
        node = (
            node.get(part.replace("~1", "/").replace("~0", "~")) if isinstance(node, dict) else None
        )
    return node if isinstance(node, dict) else {}


def _object(schema: dict[str, Any], root: dict[str, Any], depth: int) -> dict[str, Any]:
    properties = schema.get("properties") or {}
    required = schema.get("required") or []
    return {
        name: _instance(properties.get(name) or {}, root, depth + 1)
        for name in required
        if isinstance(name, str)
    }


def _string(schema: dict[str, Any]) -> str:
    base = _FORMATS.get(str(schema.get("format")), "")
    least = schema.get("minLength")
    if isinstance(least, int) and len(base) < least:
        base += "a" * (least - len(base))
    return base


def _number(schema: dict[str, Any], kind: str) -> int | float:
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    value: int | float = 0
    if isinstance(low, int | float) and not isinstance(low, bool):
        value = low + (1 if "exclusiveMinimum" in schema and "minimum" not in schema else 0)
    high = schema.get("maximum")
    if isinstance(high, int | float) and not isinstance(high, bool) and value > high:
        value = high
    return int(value) if kind == "integer" else value


def _typed(schema: dict[str, Any], kind: Any, root: dict[str, Any], depth: int) -> Any:
    if kind == "object" or (kind is None and "properties" in schema):
        return _object(schema, root, depth)
    if kind == "array":
        least = schema.get("minItems")
        count = least if isinstance(least, int) and least > 0 else 0
        items = schema.get("items") if isinstance(schema.get("items"), dict) else {}
        return [_instance(items, root, depth + 1) for _ in range(count)]
    if kind == "string":
        return _string(schema)
    if kind in ("integer", "number"):
        return _number(schema, kind)
    if kind == "boolean":
        return False
    return None


def _all_of(parts: list[Any], root: dict[str, Any], depth: int) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for part in parts:
        value = _instance(part, root, depth + 1)
        if isinstance(value, dict):
            merged.update(value)
    return merged


def _instance(schema: Any, root: dict[str, Any], depth: int) -> Any:
    if not isinstance(schema, dict) or depth > MAX_DEPTH:
        return None
    if "$ref" in schema:
        return _instance(_ref(root, str(schema["$ref"])), root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return _instance(options[0], root, depth + 1)
    if isinstance(schema.get("allOf"), list):
        return _all_of(schema["allOf"], root, depth)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    return _typed(schema, kind, root, depth)


def minimal_instance(schema: Any) -> Any:
    """Return a small JSON value valid for a JSON Schema (the subset structured outputs use).

    Every ``required`` property of an object, arrays of ``minItems`` elements, the first
    ``enum`` / ``anyOf`` / ``oneOf`` option, ``const``, local ``$ref`` (``#/$defs/…``), strings
    of ``minLength`` with a valid value for common ``format`` values, numbers at ``minimum``.
    ``pattern`` is not honoured.
    """
    root = schema if isinstance(schema, dict) else {}
    return _instance(schema, root, 0)


def _json_object_text(text: str) -> bool:
    try:
        return isinstance(jsonbytes.loads(text), dict)
    except (ValueError, RecursionError):
        return False


def _structured(reply: Reply, wanted: tuple[str, Any] | None) -> Reply:
    if wanted is None or reply.tool_calls or _json_object_text(reply.text):
        return reply
    value = minimal_instance(wanted[1]) if wanted[0] == "json_schema" else {}
    return Reply(text=jsonbytes.dumps_text(value))


def _forced(reply: Reply, tools: list[tuple[str, Any]], name: str | None) -> Reply:
    offered = {tool for tool, _ in tools}
    keep = tuple(
        call
        for call in reply.tool_calls
        if (call.name == name if name is not None else call.name in offered)
    )
    if not keep and tools:
        target = name if name is not None else tools[0][0]
        schema = next((schema for tool, schema in tools if tool == target), None)
        value = minimal_instance(schema)
        arguments = jsonbytes.dumps_text(value if isinstance(value, dict) else {})
        keep = (ScriptedCall(name=target, arguments=arguments),)
    return Reply(text="", tool_calls=keep)


def obey(api: Api, body: dict[str, Any], reply: Reply) -> Reply:
    """Return ``reply`` as the request's ``tool_choice`` and structured output allow it."""
    mode, name = choice_of(api, body)
    if mode == "forced":
        return _forced(reply, _tools(api, body), name)
    if mode == "none" and reply.tool_calls:
        reply = Reply(text=reply.text or NO_TOOLS_TEXT)
    return _structured(reply, schema_of(api, body))
