"""The fragment cache: the encoded text of an archive's history and items (SPEC A2).

A save writes the whole ``conversation.json`` (format 1 has one file), but it needs to encode
only what it has not written before: :class:`FragmentCache` keeps the text of the ``history``
and ``items`` arrays from the latest encoding and copies whatever is unchanged. It leaves out
what the elements' JSON values are (:mod:`llmcore.archive.codec`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from llmcore import jsonbytes
from llmcore.jsonbytes import Raw

from .format import INDENT

__all__ = ["FragmentCache"]

_FRAGMENT_DEPTH: Final = 2
"""Nesting depth of a history message or an item inside the file (top object → array)."""

_INNER: Final = "\n" + " " * (INDENT * _FRAGMENT_DEPTH)
"""What starts each element of a top-level array: a newline and the element's indentation."""

_SEP: Final = "," + _INNER
"""What starts every element of a top-level array but the first."""

_CLOSE: Final = "\n" + " " * INDENT + "]"
"""What ends a non-empty top-level array."""

_Key = tuple[int, frozenset[str]]


class _Array:
    """One top-level array as the latest encoding wrote it: its elements' keys and text."""

    __slots__ = ("ends", "fixed", "keys", "objs", "starts", "text")

    def __init__(self) -> None:
        self.objs: list[object] = []  # held, so an ``id`` in ``keys`` is never reused
        self.keys: list[_Key] = []
        self.fixed: list[bool] = []  # the element's text never varies (no images)
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.text = ""  # the array between its brackets: _INNER + piece, _SEP + piece, ...


class _Writer:
    """Writes a new :class:`_Array`'s text from runs of the previous one and new pieces."""

    __slots__ = ("at", "new", "parts", "prev")

    def __init__(self, prev: _Array, new: _Array, same: int) -> None:
        self.prev, self.new = prev, new
        self.parts = [prev.text[: prev.ends[same - 1]]] if same else []
        new.starts, new.ends = prev.starts[:same], prev.ends[:same]
        self.at = new.ends[-1] if same else 0

    def piece(self, index: int, piece: str) -> None:
        head = _SEP if index else _INNER
        self.parts += (head, piece)
        self.new.starts.append(self.at + len(head))
        self.at += len(head) + len(piece)
        self.new.ends.append(self.at)

    def run(self, index: int, first: int, count: int) -> None:
        """Copy the previous array's elements ``first … first + count - 1`` to ``index …``."""
        prev = self.prev
        if (index == 0) != (first == 0):  # the first element's head differs: write it alone
            self.piece(index, prev.text[prev.starts[first] : prev.ends[first]])
            index, first, count = index + 1, first + 1, count - 1
            if not count:
                return
        head = len(_SEP if index else _INNER)
        self.parts.append(prev.text[prev.starts[first] - head : prev.ends[first + count - 1]])
        delta = self.at + head - prev.starts[first]
        self.new.starts += [start + delta for start in prev.starts[first : first + count]]
        self.new.ends += [end + delta for end in prev.ends[first : first + count]]
        self.at = self.new.ends[-1]


class FragmentCache:
    """The encoded text of the history and the panel items, so a save encodes only what is new.

    Each top-level array (``history``, ``items``) is kept as the text the latest :func:`encode`
    wrote and each element's place in it, keyed by the element object and, for a message, by
    which of its images are written as ``image`` blocks (the image budget can change that). The
    next encoding copies the unchanged prefix as one slice, and every run of elements it wrote
    before (in the same order) as one slice, and encodes only the rest
    (:func:`llmcore.jsonbytes.dumps_sorted_float_free`: the bytes
    :func:`~llmcore.jsonbytes.dumps_sorted` writes). The output is the same bytes as without
    the cache. :class:`~llmcore.archive.store.ArchiveStore` fills it when it opens a file, so
    the first save after a reopen encodes only the new turn. Entries hold their objects, so an
    ``id`` is never reused while cached; elements not in the latest encoding are dropped.
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
    ) -> Raw:
        """Return the text of the top-level array ``name`` holding ``objs``.

        Args:
            name: The array's key in the file.
            objs: Its elements (messages or items), in order.
            variant: What else an element's text depends on (its kept images); ``None`` for an
                element whose text depends on nothing else, which is not asked again while it
                stays at its place.
            make: An element's JSON value, for an element not written before.
        """
        prev = self._arrays.get(name) or _Array()
        new = _Array()
        new.objs = list(objs)
        _key(prev, new, variant)
        same = 0
        limit = min(len(prev.keys), len(new.keys))
        while same < limit and prev.keys[same] == new.keys[same]:
            same += 1
        out = _Writer(prev, new, same)
        earlier = {key: i for i, key in enumerate(prev.keys)} if same < len(prev.keys) else {}
        index, total = same, len(new.keys)
        while index < total:
            first = earlier.get(new.keys[index])
            if first is None:
                out.piece(index, _fragment_text(make(new.objs[index])))
                index += 1
                continue
            count = 1
            while index + count < total and earlier.get(new.keys[index + count]) == first + count:
                count += 1
            out.run(index, first, count)
            index += count
        new.text = "".join(out.parts)
        self._arrays[name] = new
        return Raw("[" + new.text + _CLOSE if new.objs else "[]")


_FIXED: Final[frozenset[str]] = frozenset()


def _key(prev: _Array, new: _Array, variant: Callable[[Any], frozenset[str] | None]) -> None:
    """Fill ``new.keys`` and ``new.fixed``; a fixed element at its old place is not asked again."""
    keys, fixed = new.keys, new.fixed
    old_objs, old_keys, old_fixed = prev.objs, prev.keys, prev.fixed
    known = len(old_objs)
    for index, obj in enumerate(new.objs):
        if index < known and old_fixed[index] and old_objs[index] is obj:
            keys.append(old_keys[index])
            fixed.append(True)
            continue
        depends = variant(obj)
        keys.append((id(obj), _FIXED if depends is None else depends))
        fixed.append(depends is None)


def _fragment_text(value: Any) -> str:
    """An array element's text at its depth in the file (its lines indented to match)."""
    text = jsonbytes.dumps_sorted_float_free(value, indent=INDENT).decode("utf-8")
    return text.replace("\n", _INNER)
