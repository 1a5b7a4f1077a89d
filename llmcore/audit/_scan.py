"""Order-preserving JSON scanning with exact spans, for the auditor (SPEC V1) and matcher (V3).

Bodies are decoded from UTF-8 once and scanned with the standard library's C scanner
(:meth:`json.JSONDecoder.scan_once`) for leaf values, while a small walker
(:mod:`llmcore.audit._jsonwalk`) keeps object members in wire order and records where every
value starts and ends. Nothing here compares parsed dicts: items are compared on their exact
text, after the P4 normalization (:mod:`llmcore.audit._spans`) deletes every ``cache_control``
and ``prompt_cache_breakpoint`` member and every Bedrock Converse ``{"cachePoint": …}`` block as
character spans. A ``cachePoint`` block that is a top-level item (in ``system`` or ``tools``)
is not an item at all.

Offsets in this module are character offsets into the decoded body text; :func:`byte_offset`
turns one into the byte offset of the recorded body that reports show. The span functions of
:mod:`llmcore.audit._spans` are re-exported here.

Leaves out: deciding what an item means for a provider (see :mod:`llmcore.audit._shape`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from llmcore.audit._jsonwalk import Malformed, after_value, leaf, member_key, skip_ws
from llmcore.audit._spans import (
    CACHE_KEYS,
    CACHE_POINT,
    apply_spans,
    common_prefix,
    find_path,
    normalize_text,
    raw_offset,
    strip_spans,
)
from llmcore.audit.report import AuditInputError

__all__ = [
    "CACHE_KEYS",
    "CONVERSE_TOOLS",
    "ItemCache",
    "ItemInfo",
    "ScannedBody",
    "byte_offset",
    "common_prefix",
    "find_path",
    "is_cache_point",
    "normalize_text",
    "raw_offset",
    "scan_body",
    "strip_spans",
]

_CACHE_MARKERS: Final = ('"cache_control"', '"prompt_cache_breakpoint"', f'"{CACHE_POINT}"')
ITEM_KEYS: Final = frozenset(
    {
        "tools",
        "system",
        "instructions",
        "messages",
        "input",
        "contents",
        "systemInstruction",
        "toolConfig",
        "cachedContent",
    }
)
"""Top-level keys whose values are split into wire items (arrays) or kept as one item
(Anthropic, OpenAI, Gemini ``generateContent`` and Bedrock Converse sections)."""

CONVERSE_TOOLS: Final = "toolConfig.tools"
"""The item key of Bedrock Converse's tool list, ``toolConfig.tools``: its elements are items
(each tool is cached as a prefix item; ``toolConfig.toolChoice`` is not one)."""


class ItemInfo:
    """One wire item's text and its P4-normalized form, shared by every body that holds it.

    Attributes:
        raw: The item's exact text as recorded.
        norm: ``raw`` with every ``cache_control`` / ``prompt_cache_breakpoint`` member deleted.
        deletions: The deleted ``(start, end)`` character spans, relative to ``raw``, sorted.
        value: The parsed value (keys in wire order), or ``None`` until needed.
        nbytes: UTF-8 length of ``norm`` (bytes).
        extra: Per-provider facts derived lazily by :mod:`llmcore.audit._shape`.
    """

    __slots__ = ("raw", "norm", "deletions", "value", "nbytes", "extra")

    def __init__(self, raw: str, value: Any) -> None:
        self.raw = raw
        self.value = value
        if any(marker in raw for marker in _CACHE_MARKERS):
            self.deletions = strip_spans(raw, 0, keys=CACHE_KEYS)
            self.norm = apply_spans(raw, self.deletions)
        else:
            self.deletions = ()
            self.norm = raw
        self.nbytes = len(self.norm) if self.norm.isascii() else len(self.norm.encode("utf-8"))
        self.extra: dict[str, Any] = {}

    def parsed(self) -> Any:
        """Return the parsed value (scanned once on first use)."""
        if self.value is None:
            self.value = leaf(self.raw, 0)[0]
        return self.value


class ItemCache:
    """Item texts seen so far → their :class:`ItemInfo` (one per distinct text)."""

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: dict[str, ItemInfo] = {}

    def get(self, raw: str, value: Any) -> ItemInfo:
        """Return the shared info for ``raw``, creating it from ``value`` if new."""
        info = self._items.get(raw)
        if info is None:
            info = ItemInfo(raw, value)
            self._items[raw] = info
        return info


class ScannedBody:
    """A body's top level, scanned in wire order.

    Attributes:
        text: The decoded body text.
        is_ascii: Whether character offsets equal byte offsets.
        values: Parsed top-level values other than item arrays (``model``, ``stream``, …).
        spans: Top-level key → ``(start, end)`` of its value.
        items: Item key → the items (arrays: one per element; other values: one item).
        starts: Item key → each item's start offset.
        wire: Item key → each item's index in its wire array, for the keys whose array holds
            ``cachePoint`` blocks (skipped as items); other keys' items are their own index.
    """

    __slots__ = ("text", "is_ascii", "values", "spans", "items", "starts", "wire")

    def __init__(self, text: str, is_ascii: bool) -> None:
        self.text = text
        self.is_ascii = is_ascii
        self.values: dict[str, Any] = {}
        self.spans: dict[str, tuple[int, int]] = {}
        self.items: dict[str, list[ItemInfo]] = {}
        self.starts: dict[str, list[int]] = {}
        self.wire: dict[str, list[int]] = {}

    def wire_index(self, key: str, j: int) -> int:
        """Return the wire array index of item ``j`` of ``key`` (``cachePoint`` blocks count)."""
        indices = self.wire.get(key)
        return indices[j] if indices is not None and j < len(indices) else j


def is_cache_point(value: Any) -> bool:
    """Whether ``value`` is a Bedrock ``{"cachePoint": …}`` block (its only member)."""
    return isinstance(value, dict) and len(value) == 1 and CACHE_POINT in value


def scan_body(
    body: bytes,
    cache: ItemCache,
    hints: dict[str, list[ItemInfo]],
    *,
    location: str,
) -> ScannedBody:
    """Scan one request body, splitting :data:`ITEM_KEYS` values into items.

    Args:
        body: The recorded body bytes (UTF-8 JSON object).
        cache: Shared item infos; equal item texts get the same :class:`ItemInfo`.
        hints: Items of a recent body per key; an item whose text recurs at the same index is
            matched with one comparison instead of a parse (updated in place).
        location: Where the body came from, for errors (``file.jsonl:3``).

    Returns:
        The scanned body.

    Raises:
        AuditInputError: The body is not UTF-8, not JSON, or not a JSON object.
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AuditInputError(
            f"request body is not UTF-8 (byte {exc.start})", location=location
        ) from exc
    out = ScannedBody(text, body.isascii())
    try:
        _scan_top(out, cache, hints)
    except Malformed as exc:
        at = byte_offset(out, min(exc.pos, len(text)))
        kind = "cannot be read" if exc.json_ok else "is not valid JSON"
        raise AuditInputError(
            f"request body {kind}: {exc.what} at byte {at}", location=location
        ) from None
    return out


def _scan_top(out: ScannedBody, cache: ItemCache, hints: dict[str, list[ItemInfo]]) -> None:
    s = out.text
    i = skip_ws(s, 0)
    if s[i : i + 1] != "{":
        raise Malformed(i, "the body is not a JSON object")
    i = skip_ws(s, i + 1)
    more = s[i : i + 1] != "}"
    i = i if more else i + 1
    while more:
        key, j = member_key(s, i)
        if key in ITEM_KEYS and s[j : j + 1] == "[":
            items, starts, end, wire = _scan_items(s, j, cache, hints.get(key, ()))
            out.items[key], out.starts[key] = items, starts
            if wire is not None:
                out.wire[key] = wire
            hints[key] = items
        else:
            value, end = leaf(s, j)
            out.values[key] = value
            if key in ITEM_KEYS and value is not None:
                out.items[key] = [cache.get(s[j:end], value)]
                out.starts[key] = [j]
            if key == "toolConfig" and isinstance(value, dict) and "tools" in value:
                _scan_tool_list(out, s, j, cache, hints)
        out.spans[key] = (j, end)
        more, i = after_value(s, end, "}")
    if skip_ws(s, i) != len(s):
        raise Malformed(i, "extra data after the body")


def _scan_items(
    s: str, i: int, cache: ItemCache, hint: Sequence[ItemInfo]
) -> tuple[list[ItemInfo], list[int], int, list[int] | None]:
    """Scan the array at ``i``.

    Returns:
        Its item infos, their starts, the array's end, and the items' wire indices when
        ``cachePoint`` blocks were left out (else ``None``).
    """
    items: list[ItemInfo] = []
    starts: list[int] = []
    wire: list[int] | None = None
    i = skip_ws(s, i + 1)
    if s[i : i + 1] == "]":
        return items, starts, i + 1, wire
    more = True
    index = -1
    while more:
        index += 1
        k = len(items)
        guess = hint[k] if k < len(hint) else None
        # A JSON object, array or string is self-delimiting, so a recurring text is that item.
        if guess is not None and guess.raw[:1] in '{["' and s.startswith(guess.raw, i):
            info, end = guess, i + len(guess.raw)
        else:
            value, end = leaf(s, i)
            info = cache.get(s[i:end], value)
        if _point_item(info):
            wire = wire if wire is not None else list(range(len(items)))
        else:
            if wire is not None:
                wire.append(index)
            items.append(info)
            starts.append(i)
        more, i = after_value(s, end, "]")
    return items, starts, i, wire


def _scan_tool_list(
    out: ScannedBody, s: str, i: int, cache: ItemCache, hints: dict[str, list[ItemInfo]]
) -> None:
    """Split the ``tools`` array of the ``toolConfig`` object at ``i`` into items.

    They are recorded under :data:`CONVERSE_TOOLS`, with the array's span.
    """
    i = skip_ws(s, i + 1)
    more = s[i : i + 1] != "}"
    while more:
        key, j = member_key(s, i)
        if key == "tools" and s[j : j + 1] == "[":
            items, starts, end, wire = _scan_items(s, j, cache, hints.get(CONVERSE_TOOLS, ()))
            out.items[CONVERSE_TOOLS], out.starts[CONVERSE_TOOLS] = items, starts
            out.spans[CONVERSE_TOOLS] = (j, end)
            if wire is not None:
                out.wire[CONVERSE_TOOLS] = wire
            hints[CONVERSE_TOOLS] = items
        else:
            end = leaf(s, j)[1]
        more, i = after_value(s, end, "}")


def _point_item(info: ItemInfo) -> bool:
    """Whether an item is a ``cachePoint`` block (checked once per distinct text)."""
    got = info.extra.get("point")
    if got is None:
        got = f'"{CACHE_POINT}"' in info.raw and is_cache_point(info.parsed())
        info.extra["point"] = got
    return bool(got)


def byte_offset(body: ScannedBody, char_offset: int) -> int:
    """Return the byte offset in the recorded body of a character offset into its text."""
    if body.is_ascii:
        return char_offset
    return len(body.text[:char_offset].encode("utf-8"))
