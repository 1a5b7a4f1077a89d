"""Order-preserving JSON scanning with exact spans, for the auditor (SPEC V1) and matcher (V3).

Bodies are decoded from UTF-8 once and scanned with the standard library's C scanner
(:meth:`json.JSONDecoder.scan_once`) for leaf values, while a small walker in this module keeps
object members in wire order and records where every value starts and ends. Nothing here
compares parsed dicts: items are compared on their exact text, after the P4 normalization
deletes every ``cache_control`` and ``prompt_cache_breakpoint`` member and every Bedrock
Converse ``{"cachePoint": …}`` block (an array element whose only member is ``cachePoint``:
https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html) — and, for the allowed
changes, thinking blocks or ``id``/``status`` members — as character spans. A ``cachePoint``
block that is a top-level item (in ``system`` or ``tools``) is not an item at all.

Offsets in this module are character offsets into the decoded body text; :func:`byte_offset`
turns one into the byte offset of the recorded body that reports show.

Leaves out: deciding what an item means for a provider (see :mod:`llmcore.audit._shape`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from json import JSONDecodeError
from json.decoder import JSONDecoder, scanstring  # type: ignore[attr-defined]
from typing import Any, Final

from llmcore import jsonbytes
from llmcore.audit.report import AuditInputError

__all__ = [
    "CACHE_KEYS",
    "CONVERSE_TOOLS",
    "ItemInfo",
    "ItemCache",
    "ScannedBody",
    "byte_offset",
    "is_cache_point",
    "common_prefix",
    "find_path",
    "normalize_text",
    "raw_offset",
    "scan_body",
    "strip_spans",
]

CACHE_KEYS: Final = frozenset({"cache_control", "prompt_cache_breakpoint"})
"""Members P4 deletes before comparing (SPEC P4, normalization 47)."""

CACHE_POINT: Final = "cachePoint"
"""Bedrock Converse's breakpoint block, ``{"cachePoint": {"type": "default"}}``, normalized
like ``cache_control``."""
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

_ws: Final[Callable[[str, int], re.Match[str] | None]] = re.compile(r"[ \t\n\r]*").match


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_DECODER: Final[Any] = JSONDecoder(parse_constant=_refuse_constant)
_scan_once: Final[Callable[[str, int], tuple[Any, int]]] = _DECODER.scan_once


def _skip_ws(s: str, i: int) -> int:
    m = _ws(s, i)
    assert m is not None  # the pattern matches the empty string
    return m.end()


class _Malformed(Exception):
    """Internal: the text is not valid JSON at ``pos`` (a character offset).

    ``json_ok`` marks valid JSON that Python cannot read (an integer over 4,300 digits).
    """

    def __init__(self, pos: int, what: str, *, json_ok: bool = False) -> None:
        self.pos = pos
        self.what = what
        self.json_ok = json_ok
        super().__init__(what)


def _expect(s: str, i: int, ch: str) -> None:
    if s[i : i + 1] != ch:
        raise _Malformed(i, f"expected {ch!r}")


def _leaf(s: str, i: int) -> tuple[Any, int]:
    try:
        return _scan_once(s, i)
    except StopIteration as exc:
        raise _Malformed(i, "expected a JSON value") from exc
    except (JSONDecodeError, ValueError) as exc:
        # int() refuses more than 4,300 digits; say so rather than quote its advice.
        long = jsonbytes.long_integer(exc)
        if long is not None:
            raise _Malformed(i, long, json_ok=True) from exc
        raise _Malformed(getattr(exc, "pos", i), str(exc).split(":")[0]) from exc


def _key(s: str, i: int) -> tuple[str, int]:
    """Scan an object key at ``i`` and the colon after it; return (key, value start)."""
    _expect(s, i, '"')
    try:
        key, j = scanstring(s, i + 1, True)
    except (JSONDecodeError, ValueError) as exc:
        raise _Malformed(i, "bad string") from exc
    j = _skip_ws(s, j)
    _expect(s, j, ":")
    return key, _skip_ws(s, j + 1)


def _after_value(s: str, j: int, close: str) -> tuple[bool, int]:
    """After a value ending at ``j``: return (more members follow, next position)."""
    j = _skip_ws(s, j)
    c = s[j : j + 1]
    if c == ",":
        return True, _skip_ws(s, j + 1)
    if c == close:
        return False, j + 1
    raise _Malformed(j, f"expected ',' or {close!r}")


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
            self.norm = _apply(raw, self.deletions)
        else:
            self.deletions = ()
            self.norm = raw
        self.nbytes = len(self.norm) if self.norm.isascii() else len(self.norm.encode("utf-8"))
        self.extra: dict[str, Any] = {}

    def parsed(self) -> Any:
        """Return the parsed value (scanned once on first use)."""
        if self.value is None:
            self.value = _leaf(self.raw, 0)[0]
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
    except _Malformed as exc:
        at = byte_offset(out, min(exc.pos, len(text)))
        kind = "cannot be read" if exc.json_ok else "is not valid JSON"
        raise AuditInputError(
            f"request body {kind}: {exc.what} at byte {at}", location=location
        ) from None
    return out


def _scan_top(out: ScannedBody, cache: ItemCache, hints: dict[str, list[ItemInfo]]) -> None:
    s = out.text
    i = _skip_ws(s, 0)
    if s[i : i + 1] != "{":
        raise _Malformed(i, "the body is not a JSON object")
    i = _skip_ws(s, i + 1)
    more = s[i : i + 1] != "}"
    i = i if more else i + 1
    while more:
        key, j = _key(s, i)
        if key in ITEM_KEYS and s[j : j + 1] == "[":
            items, starts, end, wire = _scan_items(s, j, cache, hints.get(key, ()))
            out.items[key], out.starts[key] = items, starts
            if wire is not None:
                out.wire[key] = wire
            hints[key] = items
        else:
            value, end = _leaf(s, j)
            out.values[key] = value
            if key in ITEM_KEYS and value is not None:
                out.items[key] = [cache.get(s[j:end], value)]
                out.starts[key] = [j]
            if key == "toolConfig" and isinstance(value, dict) and "tools" in value:
                _scan_tool_list(out, s, j, cache, hints)
        out.spans[key] = (j, end)
        more, i = _after_value(s, end, "}")
    if _skip_ws(s, i) != len(s):
        raise _Malformed(i, "extra data after the body")


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
    i = _skip_ws(s, i + 1)
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
            value, end = _leaf(s, i)
            info = cache.get(s[i:end], value)
        if _point_item(info):
            wire = wire if wire is not None else list(range(len(items)))
        else:
            if wire is not None:
                wire.append(index)
            items.append(info)
            starts.append(i)
        more, i = _after_value(s, end, "]")
    return items, starts, i, wire


def _scan_tool_list(
    out: ScannedBody, s: str, i: int, cache: ItemCache, hints: dict[str, list[ItemInfo]]
) -> None:
    """Split the ``tools`` array of the ``toolConfig`` object at ``i`` into items.

    They are recorded under :data:`CONVERSE_TOOLS`, with the array's span.
    """
    i = _skip_ws(s, i + 1)
    more = s[i : i + 1] != "}"
    while more:
        key, j = _key(s, i)
        if key == "tools" and s[j : j + 1] == "[":
            items, starts, end, wire = _scan_items(s, j, cache, hints.get(CONVERSE_TOOLS, ()))
            out.items[CONVERSE_TOOLS], out.starts[CONVERSE_TOOLS] = items, starts
            out.spans[CONVERSE_TOOLS] = (j, end)
            if wire is not None:
                out.wire[CONVERSE_TOOLS] = wire
            hints[CONVERSE_TOOLS] = items
        else:
            end = _leaf(s, j)[1]
        more, i = _after_value(s, end, "}")


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


def _apply(raw: str, deletions: Sequence[tuple[int, int]]) -> str:
    parts: list[str] = []
    at = 0
    for start, end in deletions:
        parts.append(raw[at:start])
        at = end
    parts.append(raw[at:])
    return "".join(parts)


def raw_offset(norm_offset: int, deletions: Sequence[tuple[int, int]]) -> int:
    """Map an offset in a normalized text back to the text it was cut from."""
    pos = norm_offset
    for start, end in deletions:
        if start <= pos:
            pos += end - start
        else:
            break
    return pos


def common_prefix(a: str, b: str) -> int:
    """Return how many leading characters ``a`` and ``b`` share (binary search on slices)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n
    while lo < hi:  # invariant: a[:lo] == b[:lo], and they differ before hi
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class _Stripper:
    """Collects deletion spans for the P4 normalization and the allowed changes."""

    __slots__ = ("s", "keys", "top_keys", "drop_types", "out")

    def __init__(
        self,
        s: str,
        keys: frozenset[str],
        top_keys: frozenset[str],
        drop_types: frozenset[str],
    ) -> None:
        self.s = s
        self.keys = keys
        self.top_keys = top_keys
        self.drop_types = drop_types
        self.out: list[tuple[int, int]] = []

    def value(self, i: int, depth: int, in_content: bool) -> tuple[int, Any]:
        """Walk the value at ``i``; return its end and, for objects, their ``type``."""
        c = self.s[i : i + 1]
        if c == "{":
            return self.obj(i, depth)
        if c == "[":
            return self.arr(i, depth, in_content)
        value, end = _leaf(self.s, i)
        return end, value

    def obj(self, i: int, depth: int) -> tuple[int, Any]:
        s = self.s
        i = _skip_ws(s, i + 1)
        if s[i : i + 1] == "}":
            return i + 1, None
        spans: list[tuple[int, int]] = []
        dropped: list[bool] = []
        type_value: Any = None
        more = True
        while more:
            key, j = _key(s, i)
            drop = key in self.keys or (depth == 0 and key in self.top_keys)
            if drop:
                end = _leaf(s, j)[1]
            else:
                end, value = self.value(j, depth + 1, depth == 0 and key == "content")
                if key == "type" and isinstance(value, str):
                    type_value = value
            spans.append((i, end))
            dropped.append(drop)
            more, i = _after_value(s, end, "}")
        self._runs(spans, dropped)
        return i, type_value

    def arr(self, i: int, depth: int, in_content: bool) -> tuple[int, Any]:
        s = self.s
        i = _skip_ws(s, i + 1)
        if s[i : i + 1] == "]":
            return i + 1, None
        spans: list[tuple[int, int]] = []
        dropped: list[bool] = []
        more = True
        while more:
            mark = len(self.out)
            end, type_value = self.value(i, depth + 1, False)
            drop = (in_content and type_value in self.drop_types) or _is_point_text(s, i)
            if drop:
                del self.out[mark:]  # spans inside a dropped element go with it
            spans.append((i, end))
            dropped.append(drop)
            more, i = _after_value(s, end, "]")
        self._runs(spans, dropped)
        return i, None

    def _runs(self, spans: list[tuple[int, int]], dropped: list[bool]) -> None:
        """Delete each run of dropped children with the separators that belong to it."""
        n = len(spans)
        k = 0
        while k < n:
            if not dropped[k]:
                k += 1
                continue
            first = k
            while k < n and dropped[k]:
                k += 1
            if k < n:  # a kept child follows: cut up to its start
                self.out.append((spans[first][0], spans[k][0]))
            elif first > 0:  # run at the end: cut from the end of the kept child before it
                self.out.append((spans[first - 1][1], spans[n - 1][1]))
            else:  # every child dropped
                self.out.append((spans[0][0], spans[n - 1][1]))


def _is_point_text(s: str, i: int) -> bool:
    """Whether the value at ``i`` is an object whose only member is ``cachePoint``."""
    if s[i : i + 1] != "{":
        return False
    j = _skip_ws(s, i + 1)
    if not s.startswith(f'"{CACHE_POINT}"', j):
        return False
    after = _skip_ws(s, _end_of(s, _key(s, j)[1]))
    return s[after : after + 1] == "}"


def strip_spans(
    s: str,
    start: int,
    *,
    keys: frozenset[str] = CACHE_KEYS,
    top_keys: frozenset[str] = frozenset(),
    drop_types: frozenset[str] = frozenset(),
) -> tuple[tuple[int, int], ...]:
    """Return the spans to delete from the JSON value at ``start`` of ``s``, sorted.

    Args:
        s: Text holding a JSON value at ``start``.
        start: Offset of the value.
        keys: Member names deleted at any depth (with their separator).
        top_keys: Member names deleted only from the value itself (depth 0).
        drop_types: Elements of the top-level ``content`` array whose ``type`` is one of these
            are deleted (Anthropic ``thinking`` blocks).

    Every array element that is a Bedrock ``{"cachePoint": …}`` block is deleted too (at any
    depth), like a ``cache_control`` member.

    Returns:
        ``(start, end)`` spans relative to ``start``'s text ``s`` (same coordinates).

    Raises:
        ValueError: The value is not valid JSON.
    """
    walker = _Stripper(s, keys, top_keys, drop_types)
    try:
        walker.value(start, 0, False)
    except _Malformed as exc:
        raise ValueError(f"not valid JSON at character {exc.pos}: {exc.what}") from None
    return tuple(sorted(walker.out))


def normalize_text(
    raw: str,
    *,
    top_keys: frozenset[str] = frozenset(),
    drop_types: frozenset[str] = frozenset(),
) -> str:
    """Return ``raw`` (one JSON value) with P4's members and the given extras deleted."""
    return _apply(raw, strip_spans(raw, 0, top_keys=top_keys, drop_types=drop_types))


def _path_key(path: str, key: str) -> str:
    if key.isidentifier():
        return f"{path}.{key}" if path else key
    return f"{path}[{_quote(key)}]"


def _quote(key: str) -> str:
    return '"' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'


def find_path(s: str, start: int, target: int, path: str) -> str:
    """Return the path of the deepest value at ``start`` whose text contains ``target``.

    A target on a key, a comma or a bracket names the enclosing object or array, so a key-order
    change inside a tool's ``input`` is reported as ``messages[3].content[0].input``.

    Args:
        s: The text.
        start: Offset of a JSON value in ``s``.
        target: The offset to locate.
        path: The path of the value at ``start`` (``messages[3]``).
    """
    try:
        return _find(s, start, target, path)
    except (_Malformed, RecursionError):  # RecursionError: nested deeper than the walk can go
        return path


def _find(s: str, i: int, target: int, path: str) -> str:
    c = s[i : i + 1]
    if c not in ("{", "["):
        return path
    close = "}" if c == "{" else "]"
    i = _skip_ws(s, i + 1)
    if s[i : i + 1] == close:
        return path
    k = 0
    more = True
    while more and i <= target:
        if c == "{":
            key, j = _key(s, i)
            sub = _path_key(path, key)
        else:
            j, sub = i, f"{path}[{k}]"
        end = _end_of(s, j)
        if j <= target < end:
            return _find(s, j, target, sub)
        more, i = _after_value(s, end, close)
        k += 1
    return path


def _end_of(s: str, i: int) -> int:
    return _leaf(s, i)[1]
