"""Named normalizations of recorded bodies for the corpus classification (class (b)).

Values are order-preserving parses: every JSON object is a :class:`Obj` (a list of
``(key, value)`` pairs), so equality is equality including key order. A normalization is a
function ``(value) -> value`` applied to the recorded body (and, where it says so, to the
rebuilt body too), never a weaker comparison. Each one says what llmcore does differently and
why; :data:`NORMALIZATIONS` lists them per API in the order they are tried.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class Obj(list):  # type: ignore[type-arg]
    """A JSON object as its (key, value) pairs, in order."""

    def get(self, key: str, default: Any = None) -> Any:
        for k, v in self:
            if k == key:
                return v
        return default

    def has(self, key: str) -> bool:
        return any(k == key for k, _ in self)

    def without(self, *keys: str) -> Obj:
        return Obj((k, v) for k, v in self if k not in keys)

    def replaced(self, key: str, value: Any) -> Obj:
        return Obj((k, value if k == key else v) for k, v in self)


def parse(text: str | bytes) -> Any:
    """Parse JSON keeping key order (objects become :class:`Obj`)."""
    return json.loads(text, object_pairs_hook=Obj)


def to_obj(value: Any) -> Any:
    """Turn a ``json.loads`` dict tree into an :class:`Obj` tree (dict order is file order)."""
    if isinstance(value, dict):
        return Obj((k, to_obj(v)) for k, v in value.items())
    if isinstance(value, list):
        return [to_obj(v) for v in value]
    return value


def walk(value: Any, fn: Callable[[Any], Any]) -> Any:
    """Apply ``fn`` bottom-up to every value."""
    if isinstance(value, Obj):
        value = Obj((k, walk(v, fn)) for k, v in value)
    elif isinstance(value, list):
        value = [walk(v, fn) for v in value]
    return fn(value)


def top(body: Obj, key: str, fn: Callable[[Any], Any]) -> Obj:
    """Replace top-level ``key``'s value by ``fn(value)`` when present."""
    return body.replaced(key, fn(body.get(key))) if body.has(key) else body


def messages(body: Obj, key: str, fn: Callable[[list[Any]], list[Any]]) -> Obj:
    """Replace the message array at ``key`` by ``fn(array)``."""
    return top(body, key, lambda v: fn(v) if isinstance(v, list) else v)


# ---------------------------------------------------------------- standard normalizations


def sort_keys(value: Any) -> Any:
    """Standard: key order. Every object's keys sorted (applied to both sides)."""
    return walk(value, lambda v: Obj(sorted(v, key=lambda kv: kv[0])) if isinstance(v, Obj) else v)


@dataclass(frozen=True)
class Normalization:
    """One named transformation of the recorded body, with the reason llmcore differs."""

    name: str
    reason: str
    apply: Callable[[Obj], Obj]
    both_sides: bool = False


def _text_block(text: str) -> Obj:
    return Obj([("type", "text"), ("text", text)])


def anthropic_shorthand(body: Obj) -> Obj:
    """Standard: string-vs-array content shorthand. ``system`` and message ``content`` strings
    become one text block (llmcore always sends block arrays, P3); an empty string, no block."""

    def fix_message(message: Any) -> Any:
        if isinstance(message, Obj) and isinstance(message.get("content"), str):
            text = message.get("content")
            return message.replaced("content", [_text_block(text)] if text else [])
        return message

    body = top(
        body, "system", lambda s: ([_text_block(s)] if s else []) if isinstance(s, str) else s
    )
    return messages(body, "messages", lambda ms: [fix_message(m) for m in ms])


def _blocks(body: Obj, fn: Callable[[Obj], Obj | None]) -> Obj:
    """Apply ``fn`` to every content block of every message (``None`` drops the block)."""

    def fix(message: Any) -> Any:
        content = message.get("content") if isinstance(message, Obj) else None
        if not isinstance(content, list):
            return message
        out = [b2 for b in content if (b2 := fn(b) if isinstance(b, Obj) else b) is not None]
        return message.replaced("content", out)

    return messages(body, "messages", lambda ms: [fix(m) for m in ms])


def strip_markers(body: Obj) -> Obj:
    """Delete every ``cache_control`` member at any depth."""
    return walk(body, lambda v: v.without("cache_control") if isinstance(v, Obj) else v)


def anthropic_drop_thinking(body: Obj) -> Obj:
    return _blocks(
        body, lambda b: None if b.get("type") in ("thinking", "redacted_thinking") else b
    )


def anthropic_is_error_false(body: Obj) -> Obj:
    return _blocks(
        body,
        lambda b: (
            b.without("is_error")
            if b.get("type") == "tool_result" and b.get("is_error") is False
            else b
        ),
    )


def _join(content: Any) -> Any:
    if isinstance(content, list) and all(
        isinstance(p, Obj) and p.get("type") == "text" for p in content
    ):
        return "".join(p.get("text") for p in content)
    return content


def anthropic_join_result_text(body: Obj) -> Obj:
    def fix(b: Obj) -> Obj:
        if b.get("type") == "tool_result" and b.has("content"):
            return b.replaced("content", _join(b.get("content")))
        return b

    return _blocks(body, fix)


def anthropic_empty_result_content(body: Obj) -> Obj:
    def fix(b: Obj) -> Obj:
        if b.get("type") == "tool_result" and b.get("content") in ("", []):
            return b.without("content")
        return b

    return _blocks(body, fix)


def drop_empty_text(body: Obj) -> Obj:
    return _blocks(body, lambda b: None if b.get("type") == "text" and b.get("text") == "" else b)


def drop_empty_messages(body: Obj) -> Obj:
    def keep(m: Any) -> bool:
        return not (isinstance(m, Obj) and m.get("content") == [])

    return messages(body, "messages", lambda ms: [m for m in ms if keep(m)])


def anthropic_split_results(body: Obj) -> Obj:
    """A user message holding tool results and other blocks becomes two messages: the results,
    then the rest."""

    def split(ms: list[Any]) -> list[Any]:
        out: list[Any] = []
        for m in ms:
            content = m.get("content") if isinstance(m, Obj) else None
            if m.get("role") == "user" and isinstance(content, list):
                results = [
                    b for b in content if isinstance(b, Obj) and b.get("type") == "tool_result"
                ]
                rest = [
                    b
                    for b in content
                    if not (isinstance(b, Obj) and b.get("type") == "tool_result")
                ]
                if results and rest:
                    out.append(m.replaced("content", results))
                    out.append(m.replaced("content", rest))
                    continue
            out.append(m)
        return out

    return messages(body, "messages", split)


def drop_empty_tool_description(body: Obj) -> Obj:
    def fix(tools: Any) -> Any:
        if not isinstance(tools, list):
            return tools
        return [
            t.without("description") if isinstance(t, Obj) and t.get("description") == "" else t
            for t in tools
        ]

    return top(body, "tools", fix)


def ttl_5m_default(body: Obj) -> Obj:
    return walk(
        body,
        lambda v: (
            v.without("ttl")
            if isinstance(v, Obj) and v.get("type") == "ephemeral" and v.get("ttl") == "5m"
            else v
        ),
    )


def chat_shorthand(body: Obj) -> Obj:
    """Standard: string-vs-array content shorthand. Chat message ``content`` strings become one
    text part (llmcore always sends part arrays, P3), except a tool message's empty string (Chat
    forbids an empty array there); an empty string elsewhere becomes no part."""

    def fix(message: Any) -> Any:
        if not isinstance(message, Obj) or not isinstance(message.get("content"), str):
            return message
        text = message.get("content")
        if message.get("role") == "tool" and text == "":
            return message
        return message.replaced("content", [_text_block(text)] if text else [])

    return messages(body, "messages", lambda ms: [fix(m) for m in ms])


def chat_assistant_empty_content(body: Obj) -> Obj:
    def fix(m: Any) -> Any:
        if isinstance(m, Obj) and m.get("role") == "assistant" and m.has("tool_calls"):
            if m.get("content") in (None, "", []):
                return m.without("content")
        return m

    return messages(body, "messages", lambda ms: [fix(x) for x in ms])


def chat_empty_tool_description(body: Obj) -> Obj:
    def fix(tool: Any) -> Any:
        fn = tool.get("function") if isinstance(tool, Obj) else None
        if isinstance(fn, Obj) and fn.get("description") == "":
            return tool.replaced("function", fn.without("description"))
        return tool

    return top(body, "tools", lambda ts: [fix(t) for t in ts] if isinstance(ts, list) else ts)


def chat_developer_as_system(body: Obj) -> Obj:
    def fix(m: Any) -> Any:
        if isinstance(m, Obj) and m.get("role") == "developer":
            return m.replaced("role", "system")
        return m

    return messages(body, "messages", lambda ms: [fix(x) for x in ms])


def strip_breakpoints(body: Obj) -> Obj:
    """Delete every ``prompt_cache_breakpoint`` and ``cache_control`` member at any depth."""
    return walk(
        body,
        lambda v: (
            v.without("prompt_cache_breakpoint", "cache_control") if isinstance(v, Obj) else v
        ),
    )


def responses_shorthand(body: Obj) -> Obj:
    """Standard: string-vs-array content shorthand. A string ``input`` is one user message; a
    user message's string ``content`` is one ``input_text`` part (llmcore always sends part
    arrays for user messages); items without ``type`` are ``message`` items."""

    def fix(item: Any) -> Any:
        if not isinstance(item, Obj):
            return item
        if not item.has("type") and item.has("role"):
            item = Obj([("type", "message"), *item])
        if item.get("role") == "user" and isinstance(item.get("content"), str):
            text = item.get("content")
            parts = [Obj([("type", "input_text"), ("text", text)])] if text else []
            return item.replaced("content", parts)
        return item

    if isinstance(body.get("input"), str):
        message = Obj([("type", "message"), ("role", "user"), ("content", body.get("input"))])
        body = body.replaced("input", [message])
    return messages(body, "input", lambda items: [fix(i) for i in items])


def responses_store_false(body: Obj) -> Obj:
    if body.has("store"):
        return body
    return Obj([*body, ("store", False)])


def responses_strict_false(body: Obj) -> Obj:
    def fix(tool: Any) -> Any:
        if isinstance(tool, Obj) and tool.get("type") == "function" and not tool.has("strict"):
            return Obj([*tool, ("strict", False)])
        return tool

    return top(body, "tools", lambda ts: [fix(t) for t in ts] if isinstance(ts, list) else ts)


def responses_empty_instructions(body: Obj) -> Obj:
    return body.without("instructions") if body.get("instructions") == "" else body


def _item_text(item: Obj) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if isinstance(p, Obj))


def responses_system_items(body: Obj) -> Obj:
    """Leading system / developer message items become ``instructions`` (blank-line joined)."""
    items = body.get("input")
    if not isinstance(items, list) or body.has("instructions"):
        return body
    lead = 0
    while (
        lead < len(items)
        and isinstance(items[lead], Obj)
        and items[lead].get("role") in ("system", "developer")
    ):
        lead += 1
    if not lead:
        return body
    texts = [t for t in (_item_text(i) for i in items[:lead]) if t]
    body = body.replaced("input", items[lead:])
    return Obj([*body, ("instructions", "\n\n".join(texts))]) if texts else body


def responses_drop_reasoning(body: Obj) -> Obj:
    return messages(
        body,
        "input",
        lambda items: [
            i for i in items if not (isinstance(i, Obj) and i.get("type") == "reasoning")
        ],
    )


def responses_drop_item_ids(body: Obj) -> Obj:
    def fix(item: Any) -> Any:
        if (
            isinstance(item, Obj)
            and item.get("type") in ("message", "function_call", "function_call_output")
            and item.get("role") != "user"
        ):
            return item.without("id", "status", "phase")
        return item

    return messages(body, "input", lambda items: [fix(i) for i in items])


def responses_drop_empty_assistant_text(body: Obj) -> Obj:
    def keep(item: Any) -> bool:
        return not (
            isinstance(item, Obj) and item.get("role") == "assistant" and _item_text(item) == ""
        )

    return messages(body, "input", lambda items: [i for i in items if keep(i)])


def responses_empty_tool_description(body: Obj) -> Obj:
    def fix(tool: Any) -> Any:
        if (
            isinstance(tool, Obj)
            and tool.has("description")
            and tool.get("description") in ("", None)
        ):
            return tool.without("description")
        return tool

    return top(body, "tools", lambda ts: [fix(t) for t in ts] if isinstance(ts, list) else ts)


def responses_empty_tools(body: Obj) -> Obj:
    return body.without("tools") if body.get("tools") == [] else body


def _plain_output_text(part: Any) -> bool:
    return (
        isinstance(part, Obj)
        and part.get("type") == "output_text"
        and part.get("annotations", []) == []
    )


def responses_assistant_text_string(body: Obj) -> Obj:
    def fix(item: Any) -> Any:
        parts = item.get("content") if isinstance(item, Obj) else None
        if (
            item.get("role") == "assistant"
            and isinstance(parts, list)
            and all(_plain_output_text(p) for p in parts)
        ):
            return item.replaced("content", _item_text(item))
        return item

    return messages(body, "input", lambda items: [fix(i) for i in items])
