"""The fragment cache: the encoded bytes of an archive's history and items (SPEC A2).

A save writes the whole ``conversation.json`` (format 1 has one file), but it needs to encode
only what it has not written before: :class:`FragmentCache` keeps the bytes of each element of
the ``history`` and ``items`` arrays from the latest encoding and hands the unchanged ones to
the writer as they are, so the file is written from the pieces in one pass. It leaves out what
the elements' JSON values are (:mod:`llmcore.archive.codec`).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any, Final

from llmcore import jsonbytes
from llmcore.jsonbytes import RawArray

from .format import INDENT

__all__ = ["FragmentCache", "same_prefix"]

_FRAGMENT_DEPTH: Final = 2
"""Nesting depth of a history message or an item inside the file (top object → array)."""

_INNER: Final = b"\n" + b" " * (INDENT * _FRAGMENT_DEPTH)
"""What starts each element of a top-level array: a newline and the element's indentation."""

_SEP: Final = b"," + _INNER
"""What starts every element of a top-level array but the first."""

_CLOSE: Final = b"\n" + b" " * INDENT
"""What ends a non-empty top-level array, before its ``]``."""

_Key = tuple[int, frozenset[str]]

MediaStatus = tuple[frozenset[str] | None, frozenset[str]]
"""What the variants of an array's elements depend on: the hashes of the images written as
``image`` (``None``: every image) and of the unread images still on disk."""


def _changed(old: MediaStatus | None, new: MediaStatus | None) -> frozenset[str] | None:
    """The image hashes written one way in ``old`` and another in ``new``.

    ``None`` when that is not known: any element's images may be written another way.
    """
    if old is None or new is None:
        return None
    (old_kept, old_unread), (new_kept, new_unread) = old, new
    if (old_kept is None) != (new_kept is None):
        return None
    unread = old_unread ^ new_unread
    if old_kept is None or new_kept is None:
        return unread
    return old_kept ^ new_kept | unread


class _Array:
    """One top-level array as the latest encoding wrote it: its elements, keys and bytes."""

    __slots__ = ("keys", "media", "objs", "pieces", "status", "varying")

    def __init__(self) -> None:
        self.objs: list[object] = []  # held, so an ``id`` in ``keys`` is never reused
        self.keys: list[_Key] = []
        self.pieces: list[bytes] = []  # each element's bytes after ``_SEP``: ``_SEP`` + text
        self.varying: list[int] = []  # the places of elements whose bytes depend on images
        self.media: dict[int, frozenset[str]] = {}  # place → every image hash it names
        self.status: MediaStatus | None = None


class FragmentCache:
    """The encoded bytes of the history and the panel items, so a save encodes only what is new.

    Each top-level array (``history``, ``items``) is kept as the bytes the latest :func:`encode`
    wrote for each element, keyed by the element object and, for a message, by which of its
    images are written as ``image`` blocks (the image budget can change that). The next
    encoding takes the bytes of every element it wrote before, wherever it now stands, and
    encodes only the rest (:func:`llmcore.jsonbytes.dumps_sorted_float_free`: the bytes
    :func:`~llmcore.jsonbytes.dumps_sorted` writes); the file is joined from the pieces once.
    The output is the same bytes as without the cache. :class:`~llmcore.archive.store.
    ArchiveStore` fills it when it opens a file, so the first save after a reopen encodes only
    the new turn. Entries hold their objects, so an ``id`` is never reused while cached;
    elements not in the latest encoding are dropped.
    """

    __slots__ = ("_arrays",)

    def __init__(self) -> None:
        self._arrays: dict[str, _Array] = {}

    def array(
        self,
        name: str,
        objs: Sequence[Any],
        variant: Callable[[Any], frozenset[str] | None],
        make: Callable[[Any], Any],
        *,
        media: Callable[[Any], frozenset[str]] | None = None,
        status: MediaStatus | None = None,
    ) -> RawArray:
        """Return the top-level array ``name`` holding ``objs``, as pieces of bytes.

        Args:
            name: The array's key in the file.
            objs: Its elements (messages or items), in order.
            variant: What else an element's bytes depend on (its kept images); ``None`` for an
                element whose bytes depend on nothing else, which is not asked again while it
                stays at its place.
            make: An element's JSON value, for an element not written before.
            media: Every image hash an element's variant can name (its images' and unread
                images' hashes); with ``status``, an element that stays at its place is asked
                for its variant again only when one of those hashes changed status.
            status: What the variants depend on in this encoding (:data:`MediaStatus`).
        """
        prev = self._arrays.get(name) or _Array()
        new = _Array()
        new.objs = list(objs)
        new.status = status if media is not None else None
        same = same_prefix(prev.objs, new.objs)
        new.keys, new.pieces = prev.keys[:same], prev.pieces[:same]
        new.varying = [index for index in prev.varying if index < same]
        changed = _changed(prev.status, new.status)
        for index in new.varying:  # the same object at its place, but its images may differ
            if media is not None:
                names = prev.media.get(index)
                if names is None:
                    names = media(new.objs[index])
                new.media[index] = names
                if changed is not None and names.isdisjoint(changed):
                    continue  # none of its images is written another way: same bytes
            key = (id(new.objs[index]), variant(new.objs[index]) or _FIXED)
            if key != new.keys[index]:
                new.keys[index] = key
                new.pieces[index] = _SEP + _fragment_bytes(make(new.objs[index]))
        if same < len(new.objs):
            _rest(prev, new, same, variant, make, media)
        self._arrays[name] = new
        pieces = new.pieces
        if not pieces:
            return RawArray.from_pieces([])
        return RawArray.from_pieces([memoryview(pieces[0])[1:], *pieces[1:], _CLOSE])


_FIXED: Final[frozenset[str]] = frozenset()


def same_prefix(old: Sequence[object], new: Sequence[object]) -> int:
    """How many leading elements of ``new`` are the very objects of ``old`` (compared in C).

    The common case, every element of the shorter one the same (an append), makes no list.
    """
    if all(map(operator.is_, old, new)):
        return min(len(old), len(new))
    return list(map(operator.is_, old, new)).index(False)


def _rest(
    prev: _Array,
    new: _Array,
    start: int,
    variant: Callable[[Any], frozenset[str] | None],
    make: Callable[[Any], Any],
    media: Callable[[Any], frozenset[str]] | None,
) -> None:
    """Key and write the elements from ``start`` on, taking the bytes of any written before.

    After a plain append (every old element kept at its place) nothing old can follow, so the
    old elements are looked up only when some moved or went.
    """
    earlier: dict[int, int] = {}
    if start < len(prev.objs):
        earlier = dict(zip(map(id, prev.objs), range(len(prev.objs)), strict=True))
    for index in range(start, len(new.objs)):
        obj = new.objs[index]
        depends = variant(obj)
        key = (id(obj), _FIXED if depends is None else depends)
        new.keys.append(key)
        if depends is not None:
            new.varying.append(index)
            if media is not None:
                new.media[index] = media(obj)
        first = earlier.get(key[0])
        if first is not None and prev.keys[first] == key:
            new.pieces.append(prev.pieces[first])
        else:
            new.pieces.append(_SEP + _fragment_bytes(make(obj)))


def _fragment_bytes(value: Any) -> bytes:
    """An array element's bytes at its depth in the file (its lines indented to match)."""
    return jsonbytes.dumps_sorted_float_free(value, indent=INDENT).replace(b"\n", _INNER)
