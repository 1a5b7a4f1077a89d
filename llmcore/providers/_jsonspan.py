"""Byte spans of values inside raw JSON bytes, for parsers that must keep bytes as received.

SPEC M2 keeps a non-streamed Anthropic tool call's arguments as the exact byte span of its
``input`` value in the response body, and M4 carries provider-only blocks (thinking, reasoning
items) back exactly as received. :func:`find_span` walks the raw bytes without building values
and returns where the value at a path starts and ends.

The bytes must already be known to be valid JSON (callers parse them first); duplicate object
keys resolve to the last occurrence, as :func:`json.loads` does.
"""

from __future__ import annotations

import json
from typing import Final

__all__ = ["find_span"]

_SPACE: Final = frozenset(b" \t\r\n")
_END: Final = frozenset(b",]} \t\r\n")


def find_span(data: bytes, path: tuple[str | int, ...], start: int = 0) -> tuple[int, int]:
    """Return ``(begin, end)`` of the value at ``path`` so ``data[begin:end]`` is its bytes.

    Args:
        data: Valid JSON bytes (UTF-8).
        path: Object keys and array indexes from the value starting at ``start``.
        start: Offset of the value the path starts from.

    Raises:
        KeyError: The path does not exist in ``data``.
    """
    pos = _skip_space(data, start)
    for step in path:
        pos = _child(data, pos, step)
    return pos, _skip_value(data, pos)


def _child(data: bytes, pos: int, step: str | int) -> int:
    opener = data[pos : pos + 1]
    if isinstance(step, int) and opener == b"[":
        for index, begin in enumerate(_array_items(data, pos)):
            if index == step:
                return begin
    elif isinstance(step, str) and opener == b"{":
        found = -1
        for key, begin in _object_items(data, pos):
            if key == step:
                found = begin
        if found >= 0:
            return found
    raise KeyError(step)


def _array_items(data: bytes, pos: int) -> list[int]:
    out: list[int] = []
    pos = _skip_space(data, pos + 1)
    if data[pos : pos + 1] == b"]":
        return out
    while True:
        out.append(pos)
        pos = _skip_space(data, _skip_value(data, pos))
        if data[pos : pos + 1] != b",":
            return out
        pos = _skip_space(data, pos + 1)


def _object_items(data: bytes, pos: int) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    pos = _skip_space(data, pos + 1)
    if data[pos : pos + 1] == b"}":
        return out
    while True:
        key_end = _skip_string(data, pos)
        key: str = json.loads(data[pos:key_end])
        pos = _skip_space(data, key_end)
        pos = _skip_space(data, pos + 1)  # the colon
        out.append((key, pos))
        pos = _skip_space(data, _skip_value(data, pos))
        if data[pos : pos + 1] != b",":
            return out
        pos = _skip_space(data, pos + 1)


def _skip_space(data: bytes, pos: int) -> int:
    while pos < len(data) and data[pos] in _SPACE:
        pos += 1
    return pos


def _skip_string(data: bytes, pos: int) -> int:
    pos += 1
    while True:
        quote = data.index(b'"', pos)
        backslashes = 0
        while data[quote - 1 - backslashes] == 0x5C:
            backslashes += 1
        if backslashes % 2 == 0:
            return quote + 1
        pos = quote + 1


def _skip_value(data: bytes, pos: int) -> int:
    head = data[pos : pos + 1]
    if head == b'"':
        return _skip_string(data, pos)
    if head in (b"{", b"["):
        return _skip_container(data, pos)
    while pos < len(data) and data[pos] not in _END:
        pos += 1
    return pos


def _skip_container(data: bytes, pos: int) -> int:
    depth = 0
    while True:
        byte = data[pos]
        if byte == 0x22:
            pos = _skip_string(data, pos)
            continue
        if byte in (0x7B, 0x5B):
            depth += 1
        elif byte in (0x7D, 0x5D):
            depth -= 1
            if depth == 0:
                return pos + 1
        pos += 1
