r"""Finding a keyed JSONL file's lines by conversation key, in byte ranges read side by side.

``llmcore audit --jobs`` partitions a keyed log by each line's envelope ``conversation`` key
(:mod:`llmcore.audit.jobs`); finding the keys parses every line once. A large file is cut into
byte ranges, each scanned by a worker process (:func:`find_range`), and the ranges' findings
are joined in file order (:func:`joined`): the same lines, keys, line numbers and response
links (:mod:`llmcore.audit._links`) one scan of the whole file gives.

A range holds the lines that start in it: a line is ``\n``-terminated (a ``\r`` before it
dropped), the last one may lack the ``\n``; a blank line counts in the numbering, never in
the findings.

Leaves out: what the findings become (:mod:`llmcore.audit.jobs`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import BinaryIO, Final

from llmcore.audit._links import Link, line_links

__all__ = ["Found", "find_range", "joined", "ranges"]

_CHUNK: Final = 8 * 1024 * 1024
"""Bytes read at a time."""

Line = tuple[int, int, int]
"""A line's (byte offset, length, line number)."""


@dataclass(slots=True)
class Found:
    """A byte range's (or a file's) lines by key; line numbers count from the range's start."""

    lines: dict[str | None, list[Line]] = field(default_factory=dict)
    """Key (``None``: no key) → its lines, in order, in order of first appearance."""
    key_bytes: dict[str, int] = field(default_factory=dict)
    """Key → bytes of its lines."""
    links: list[Link] = field(default_factory=list)
    """The lines that record or name a response (:func:`~llmcore.audit._links.line_links`)."""
    count: int = 0
    """Lines that start in the range, blank ones too."""


def ranges(size: int, parts: int) -> list[tuple[int, int]]:
    """``parts`` consecutive byte ranges ``[start, end)`` covering ``size`` bytes."""
    cuts = [size * k // parts for k in range(parts + 1)]
    return [(a, b) for a, b in zip(cuts, cuts[1:], strict=False) if b > a] or [(0, size)]


def find_range(path: str, start: int = 0, end: int | None = None) -> Found:
    """The lines starting in ``[start, end)`` of ``path`` by key (``None``: to the end).

    Raises:
        OSError: The file cannot be read.
    """
    out = Found()
    for offset, line in _lines(path, start, end):
        out.count += 1
        if not line.strip():
            continue
        link = line_links(line)
        key = link[0]
        out.lines.setdefault(key, []).append((offset, len(line), out.count))
        if key is not None:
            out.key_bytes[key] = out.key_bytes.get(key, 0) + len(line)
        if link[1] is not None or link[2] is not None:
            out.links.append(link)
    return out


def joined(found: Sequence[Found]) -> Found:
    """Consecutive ranges' findings as one scan of them gives (line numbers run on)."""
    if len(found) == 1:
        return found[0]
    out = Found()
    base = 0
    for part in found:
        for key, lines in part.lines.items():
            out.lines.setdefault(key, []).extend((o, n, k + base) for o, n, k in lines)
        for key, size in part.key_bytes.items():
            out.key_bytes[key] = out.key_bytes.get(key, 0) + size
        out.links.extend(part.links)
        base += part.count
    out.count = base
    return out


def _lines(path: str, start: int, end: int | None) -> Iterator[tuple[int, bytes]]:
    """(offset, line) of every line starting in ``[start, end)``, read in chunks."""
    with open(path, "rb") as file:
        if start > 0:
            file.seek(start - 1)
            if file.read(1) != b"\n":  # inside a line: the range starts at the next one
                start = _next_start(file, start)
        file.seek(start)
        offset, rest = start, b""
        while True:
            chunk = file.read(_CHUNK)
            data = rest + chunk if rest else chunk
            if not chunk:
                if data and (end is None or offset < end):
                    yield offset, data.removesuffix(b"\r")
                return
            at = 0
            while (stop := data.find(b"\n", at)) >= 0:
                if end is not None and offset + at >= end:
                    return
                yield offset + at, data[at:stop].removesuffix(b"\r")
                at = stop + 1
            offset += at
            rest = data[at:]
            if end is not None and offset >= end:
                return


def _next_start(file: BinaryIO, start: int) -> int:
    r"""The offset after the first ``\n`` at or after ``start`` (the file's end if none)."""
    position = start
    while chunk := file.read(_CHUNK):
        found = chunk.find(b"\n")
        if found >= 0:
            return position + found + 1
        position += len(chunk)
    return position
