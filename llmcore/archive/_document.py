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
from typing import Final

__all__ = ["Document"]

_GROUP: Final = 256
"""Pieces joined into one chunk: about 100 KB of a history's pieces, so a file of a thousand
turns is a few dozen chunks to write (``writev``), hash (:mod:`hashlib` releases the GIL for
each) and compare, and no buffer of the whole file is made."""


class Document:
    """The bytes of a file as chunks whose concatenation they are.

    Args:
        pieces: The file's bytes in order (``bytes`` or ``memoryview``); runs of
            :data:`_GROUP` pieces are joined into one chunk each.
    """

    __slots__ = ("chunks", "size")

    def __init__(self, pieces: list[bytes | memoryview]) -> None:
        if len(pieces) > 1:
            pieces = [b"".join(pieces[at : at + _GROUP]) for at in range(0, len(pieces), _GROUP)]
        self.chunks: list[bytes | memoryview] = pieces
        """The bytes in order (the pieces, or runs of them joined)."""
        self.size: int = sum(map(len, pieces))
        """The file's length in bytes."""

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
