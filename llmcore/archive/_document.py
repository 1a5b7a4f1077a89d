"""The bytes of one ``conversation.json`` as a save holds them: chunks, not one buffer (SPEC A2).

:func:`~llmcore.archive.codec.encode_pieces` gives a file of a thousand turns as thousands of
pieces, most of them the cached bytes of its messages and items. :class:`Document` joins them
into a few dozen chunks, so a save writes them with one ``writev``, hashes them and compares
them with the file on disk without making one buffer of megabytes (thousands of small
pieces would make ``writev`` slow: the kernel copies each one separately). It leaves out the
files themselves (:mod:`llmcore.archive._files`).
"""

from __future__ import annotations

import hashlib
import operator
from typing import Final

__all__ = ["Document"]

_GROUP: Final = 256
"""Pieces joined into one chunk: about 100 KB of a history's pieces, so a file of a thousand
turns is a few dozen chunks to write (``writev``), hash (:mod:`hashlib` releases the GIL for
each) and compare, and no buffer of the whole file is made."""


_Piece = bytes | memoryview
_Run = tuple[tuple[_Piece, ...], _Piece]
"""The pieces of one chunk, as objects, and the chunk."""


class Document:
    """The bytes of a file as chunks whose concatenation they are.

    Args:
        pieces: The file's bytes in order (``bytes`` or ``memoryview``); runs of
            :data:`_GROUP` pieces are joined into one chunk each.
        previous: The document of the previous save: a run of pieces that are the very
            objects one of its chunks was joined from (the fragment cache hands out the same
            objects for unchanged messages and items) takes that chunk instead of a new join,
            wherever the run now stands. The bytes are the same either way.
    """

    __slots__ = ("_runs", "chunks", "size")

    def __init__(self, pieces: list[_Piece], previous: Document | None = None) -> None:
        self._runs: dict[int, _Run] = {}  # id of a chunk's first piece → its run (held)
        chunks = pieces
        if len(pieces) > 1:
            chunks = self._chunked(pieces, {} if previous is None else previous._runs)
        self.chunks: list[_Piece] = chunks
        """The bytes in order (the pieces, or runs of them joined)."""
        self.size: int = sum(map(len, chunks))
        """The file's length in bytes."""

    def _chunked(self, pieces: list[_Piece], earlier: dict[int, _Run]) -> list[_Piece]:
        chunks: list[_Piece] = []
        start = at = 0  # pieces[start:at] are not in a chunk yet
        while at < len(pieces):
            run = earlier.get(id(pieces[at])) if earlier else None
            if run is not None and _same_objects(run[0], pieces, at):
                self._join(pieces, start, at, chunks)
                self._runs[id(pieces[at])] = run
                chunks.append(run[1])
                at = start = at + len(run[0])
            elif earlier:
                at += 1
            else:  # nothing to take: every run is joined
                at = len(pieces)
        self._join(pieces, start, at, chunks)
        return chunks

    def _join(self, pieces: list[_Piece], start: int, end: int, chunks: list[_Piece]) -> None:
        for first in range(start, end, _GROUP):
            run = tuple(pieces[first : min(first + _GROUP, end)])
            chunk = b"".join(run)
            self._runs[id(run[0])] = (run, chunk)
            chunks.append(chunk)

    def __len__(self) -> int:
        """The file's length in bytes."""
        return self.size

    def equals(self, data: bytes | None) -> bool:
        """Whether ``data`` holds exactly these bytes (``None``, no file, never does)."""
        if data is None or len(data) != self.size:
            return False
        at = 0
        for chunk in self.chunks:
            if not data.startswith(chunk, at):
                return False
            at += len(chunk)
        return True

    def version(self) -> str:
        """The SHA-256 hex of the bytes (:func:`~llmcore.archive.store.version_of` of them)."""
        digest = hashlib.sha256()
        for chunk in self.chunks:
            digest.update(chunk)
        return digest.hexdigest()


def _same_objects(run: tuple[_Piece, ...], pieces: list[_Piece], at: int) -> bool:
    """Whether ``pieces[at:]`` starts with the very objects of ``run``."""
    end = at + len(run)
    return end <= len(pieces) and all(map(operator.is_, run, pieces[at:end]))
