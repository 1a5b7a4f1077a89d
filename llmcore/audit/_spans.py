"""Deletion spans, offsets and paths in a JSON text: the P4 normalization and its report.

The P4 normalization deletes every ``cache_control`` and ``prompt_cache_breakpoint`` member and
every Bedrock Converse ``{"cachePoint": …}`` block (an array element whose only member is
``cachePoint``: https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html) as
character spans of the recorded text — and, for the allowed changes, thinking blocks or
``id``/``status`` members. Offsets are character offsets into the decoded text.

Leaves out: splitting a body into items (:mod:`llmcore.audit._scan`, which re-exports every
public name here).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from llmcore.audit._jsonwalk import Malformed, after_value, end_of, leaf, member_key, skip_ws

__all__ = [
    "CACHE_KEYS",
    "CACHE_POINT",
    "apply_spans",
    "common_prefix",
    "find_path",
    "normalize_text",
    "raw_offset",
    "strip_spans",
]

CACHE_KEYS: Final = frozenset({"cache_control", "prompt_cache_breakpoint"})
"""Members P4 deletes before comparing (SPEC P4, normalization 47)."""

CACHE_POINT: Final = "cachePoint"
"""Bedrock Converse's breakpoint block, ``{"cachePoint": {"type": "default"}}``, normalized
like ``cache_control``."""


def apply_spans(raw: str, deletions: Sequence[tuple[int, int]]) -> str:
    """``raw`` without the sorted, disjoint ``(start, end)`` spans ``deletions``."""
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
        value, end = leaf(self.s, i)
        return end, value

    def obj(self, i: int, depth: int) -> tuple[int, Any]:
        s = self.s
        i = skip_ws(s, i + 1)
        if s[i : i + 1] == "}":
            return i + 1, None
        spans: list[tuple[int, int]] = []
        dropped: list[bool] = []
        type_value: Any = None
        more = True
        while more:
            key, j = member_key(s, i)
            drop = key in self.keys or (depth == 0 and key in self.top_keys)
            if drop:
                end = leaf(s, j)[1]
            else:
                end, value = self.value(j, depth + 1, depth == 0 and key == "content")
                if key == "type" and isinstance(value, str):
                    type_value = value
            spans.append((i, end))
            dropped.append(drop)
            more, i = after_value(s, end, "}")
        self._runs(spans, dropped)
        return i, type_value

    def arr(self, i: int, depth: int, in_content: bool) -> tuple[int, Any]:
        s = self.s
        i = skip_ws(s, i + 1)
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
            more, i = after_value(s, end, "]")
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
    j = skip_ws(s, i + 1)
    if not s.startswith(f'"{CACHE_POINT}"', j):
        return False
    after = skip_ws(s, end_of(s, member_key(s, j)[1]))
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
    except Malformed as exc:
        raise ValueError(f"not valid JSON at character {exc.pos}: {exc.what}") from None
    return tuple(sorted(walker.out))


def normalize_text(
    raw: str,
    *,
    top_keys: frozenset[str] = frozenset(),
    drop_types: frozenset[str] = frozenset(),
) -> str:
    """Return ``raw`` (one JSON value) with P4's members and the given extras deleted."""
    return apply_spans(raw, strip_spans(raw, 0, top_keys=top_keys, drop_types=drop_types))


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
    except (Malformed, RecursionError):  # RecursionError: nested deeper than the walk can go
        return path


def _find(s: str, i: int, target: int, path: str) -> str:
    c = s[i : i + 1]
    if c not in ("{", "["):
        return path
    close = "}" if c == "{" else "]"
    i = skip_ws(s, i + 1)
    if s[i : i + 1] == close:
        return path
    k = 0
    more = True
    while more and i <= target:
        if c == "{":
            key, j = member_key(s, i)
            sub = _path_key(path, key)
        else:
            j, sub = i, f"{path}[{k}]"
        end = end_of(s, j)
        if j <= target < end:
            return _find(s, j, target, sub)
        more, i = after_value(s, end, close)
        k += 1
    return path
