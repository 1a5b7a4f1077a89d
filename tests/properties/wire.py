"""Reading built bodies for the property tests: wire items as exact text, markers removed.

This module reads bodies on its own (no provider code): the top-level object is walked with
``json.JSONDecoder.raw_decode`` so each wire item (``messages[i]`` or ``input[i]``) is the exact
text the body holds. SPEC P4 compares items "byte for byte once every ``cache_control`` and
``prompt_cache_breakpoint`` member is deleted": an item without either key is compared as its raw
text; an item with one is parsed order-preservingly (object member lists, numbers kept as their
text), the members are deleted at every depth, and the rest is re-written with
:func:`llmcore.jsonbytes.dumps`.
"""

from __future__ import annotations

import json
from typing import Any

from llmcore import jsonbytes

MARKERS = ("cache_control", "prompt_cache_breakpoint")
MARKER_BLOCKS = ("cachePoint",)
"""Array elements that are markers themselves (Bedrock Converse ``{"cachePoint": …}`` blocks)."""
ITEM_KEYS = {
    "anthropic": "messages",
    "openai-chat": "messages",
    "openrouter": "messages",
    "openai-responses": "input",
    "gemini": "contents",
    "bedrock-converse": "messages",
}
"""Which top-level array holds a provider's wire items."""

_DECODER = json.JSONDecoder()


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _expect(text: str, pos: int, char: str) -> int:
    pos = _skip_ws(text, pos)
    if text[pos] != char:
        raise AssertionError(f"expected {char!r} at {pos}, found {text[pos : pos + 20]!r}")
    return pos + 1


def top_level(body: bytes) -> list[tuple[str, str]]:
    """Return the body's top-level members as (key, exact value text), in body order."""
    text = body.decode("utf-8")
    pos = _expect(text, 0, "{")
    members: list[tuple[str, str]] = []
    if text[_skip_ws(text, pos)] == "}":
        return members
    while True:
        key, pos = _DECODER.raw_decode(text, _skip_ws(text, pos))
        pos = _skip_ws(text, _expect(text, pos, ":"))
        _, end = _DECODER.raw_decode(text, pos)
        members.append((key, text[pos:end]))
        pos = _skip_ws(text, end)
        if text[pos] == "}":
            return members
        pos = _expect(text, pos, ",")


def array_items(array_text: str) -> list[str]:
    """Return the exact text of each element of a JSON array text."""
    pos = _expect(array_text, 0, "[")
    items: list[str] = []
    if array_text[_skip_ws(array_text, pos)] == "]":
        return items
    while True:
        pos = _skip_ws(array_text, pos)
        _, end = _DECODER.raw_decode(array_text, pos)
        items.append(array_text[pos:end])
        pos = _skip_ws(array_text, end)
        if array_text[pos] == "]":
            return items
        pos = _expect(array_text, pos, ",")


class _Pairs(list[tuple[str, Any]]):
    """An object as its member list, so order and repeated keys survive."""


def _parse(text: str) -> Any:
    return json.loads(
        text,
        object_pairs_hook=_Pairs,
        parse_float=jsonbytes.Raw,
        parse_int=jsonbytes.Raw,
        parse_constant=jsonbytes.Raw,
    )


def _strip(value: Any) -> Any:
    if isinstance(value, _Pairs):
        return _Pairs((k, _strip(v)) for k, v in value if k not in MARKERS)
    if isinstance(value, list):
        return [_strip(v) for v in value if not _is_marker_block(v)]
    return value


def _is_marker_block(value: Any) -> bool:
    return isinstance(value, _Pairs) and len(value) == 1 and value[0][0] in MARKER_BLOCKS


def _write(value: Any) -> Any:
    # jsonbytes writes Mappings in insertion order; a member list with a repeated key cannot
    # become a dict, so it is written as a Raw object member by member.
    if isinstance(value, _Pairs):
        inner = ",".join(
            jsonbytes.encode_str(k) + ":" + jsonbytes.dumps_text(_write(v)) for k, v in value
        )
        return jsonbytes.Raw("{" + inner + "}")
    if isinstance(value, list):
        return [_write(v) for v in value]
    return value


def unmarked(item_text: str) -> str:
    """Return ``item_text`` with every marker member deleted (the text itself if it has none)."""
    if not any(f'"{m}"' in item_text for m in (*MARKERS, *MARKER_BLOCKS)):
        return item_text
    return jsonbytes.dumps_text(_write(_strip(_parse(item_text))))


def wire_items(provider: str, body: bytes) -> tuple[list[str], list[tuple[str, str]]]:
    """Return (exact item texts, other top-level members) of a provider body."""
    key = ITEM_KEYS[provider]
    members = top_level(body)
    items = [text for k, text in members if k == key]
    assert len(items) == 1, f"body has {len(items)} {key!r} members"
    rest = [(k, text) for k, text in members if k != key]
    return array_items(items[0]), rest


def prefix_break(provider: str, before: bytes, after: bytes) -> str | None:
    """Return why ``after`` does not extend ``before`` under SPEC P4, or ``None`` when it does.

    Checked: every top-level member other than the items is unchanged (markers deleted; the
    top-level ``cache_control`` of automatic mode is itself a marker), and ``after``'s items
    start with ``before``'s items, each equal once markers are deleted.
    """
    items_a, rest_a = wire_items(provider, before)
    items_b, rest_b = wire_items(provider, after)
    head_a = [(k, unmarked(v)) for k, v in rest_a if k not in MARKERS]
    head_b = [(k, unmarked(v)) for k, v in rest_b if k not in MARKERS]
    if head_a != head_b:
        return f"top-level members changed: {head_a!r:.300} -> {head_b!r:.300}"
    if len(items_b) < len(items_a):
        return f"item count shrank from {len(items_a)} to {len(items_b)}"
    for index, (a, b) in enumerate(zip(items_a, items_b, strict=False)):
        ua, ub = unmarked(a), unmarked(b)
        if ua != ub:
            at = next((i for i, (x, y) in enumerate(zip(ua, ub, strict=False)) if x != y), 0)
            return f"item {index} differs at char {at}: {ua[at - 30 : at + 60]!r} vs {ub[at - 30 : at + 60]!r}"
    return None


def first_difference(a: bytes, b: bytes) -> str:
    """Describe where two byte strings first differ (for assertion messages)."""
    if a == b:
        return "identical"
    at = next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )
    return f"first difference at byte {at}: {a[max(0, at - 40) : at + 40]!r} vs {b[max(0, at - 40) : at + 40]!r}"
