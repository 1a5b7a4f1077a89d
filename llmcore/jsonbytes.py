r"""The one JSON byte writer of llmcore (SPEC P2, A2).

Every JSON byte llmcore produces comes from here, so one set of rules holds everywhere:

* separators are fixed: ``,`` and ``:`` with no spaces (``indent`` adds newlines and spaces
  only for the archive form);
* strings are written as UTF-8, not ``\u``-escaped (only ``"``, ``\``, and control
  characters are escaped, as the standard library's C encoder does);
* key order is the dict's insertion order (:func:`dumps`, used for request bodies, whose order
  each provider module fixes) or sorted by code point (:func:`dumps_sorted`, the archive);
* :class:`Raw` splices bytes that are already JSON (stored tool arguments) without parsing them;
  :class:`RawArray` an array of already-encoded elements; :class:`Utf8` is a string given as
  UTF-8 bytes, copied as they are when nothing in them needs escaping;
* ``NaN``, infinities, lone surrogates and foreign types raise
  :class:`~llmcore.errors.EncodingError` instead of producing bytes another process might
  write differently.

Reading is :func:`loads`: :func:`json.loads` on strict UTF-8 (llmcore's files are UTF-8; the
standard library would also guess UTF-16/32 and let invalid bytes through as surrogates), with
``NaN``/``Infinity`` refused (and, asked, numbers beyond the float range such as ``1e999``, or
an object that repeats a key: :class:`DuplicateKeyError` names the key and the object's path).
An integer longer than Python reads (4,300 digits, ``sys.get_int_max_str_digits``) is refused
with a message saying so (:func:`long_integer`).
:func:`too_deep` checks a parsed value against :data:`MAX_DEPTH`, the documented nesting limit
of request files and recorded bodies; the writer turns deeper nesting it meets into
:class:`EncodingError` instead of a ``RecursionError``.

The pure-Python writer lives in :mod:`llmcore._jsonwrite`; this module re-exports its public
names and adds orjson's fast paths (:func:`dumps_float_free`, :func:`dumps_sorted_float_free`)
and the reader.
"""

from __future__ import annotations

import importlib
import json
import math
import re
from types import ModuleType
from typing import Any, Final

from llmcore._jsonwrite import (
    MAX_DEPTH,
    ExactFloat,
    Raw,
    RawArray,
    Utf8,
    _utf8_literal,
    dumps,
    dumps_items,
    dumps_sorted,
    dumps_sorted_pieces,
    dumps_text,
    encode_str,
    integer_size,
)


def _optional(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:  # pragma: no cover - a test builds without it in a subprocess
        return None


_orjson: Final = _optional("orjson")
"""orjson, a dependency, escapes the history's strings in C (:func:`dumps_float_free`)."""

__all__ = [
    "MAX_DEPTH",
    "DuplicateKeyError",
    "ExactFloat",
    "Raw",
    "RawArray",
    "Utf8",
    "dumps",
    "dumps_float_free",
    "dumps_items",
    "dumps_sorted",
    "dumps_sorted_float_free",
    "dumps_sorted_pieces",
    "dumps_text",
    "encode_str",
    "integer_size",
    "is_json_object",
    "loads",
    "long_integer",
    "too_deep",
]

_FRAGMENT_OPTIONS: Final = (
    0
    if _orjson is None
    else _orjson.OPT_PASSTHROUGH_DATACLASS
    | _orjson.OPT_PASSTHROUGH_DATETIME
    | _orjson.OPT_PASSTHROUGH_SUBCLASS
)
"""Every value orjson would write its own way (dataclasses, dates, subclasses) goes to
:func:`_fragment`, which leaves it to this module's writer."""


def _fragment(value: Any) -> Any:
    """Turn :class:`Raw` and :class:`Utf8` into orjson fragments of the bytes this module writes.

    Raises:
        TypeError: Any other value: the caller writes the whole array with this module's
            writer, which writes it or raises :class:`EncodingError`.
    """
    kind = type(value)
    if kind is Raw:
        return _FRAGMENT(value.text)
    if kind is Utf8:
        return _FRAGMENT(b"".join(_utf8_literal(value)))
    raise TypeError


_FRAGMENT: Final[Any] = getattr(_orjson, "Fragment", None)
"""``orjson.Fragment``: bytes orjson copies into its output as they are."""


def dumps_float_free(values: list[Any]) -> bytes:
    """Write the JSON array of ``values``, which hold no ``float``: the bytes :func:`dumps` writes.

    The provider encoders' message values (strings, objects, arrays, booleans, integers,
    :class:`Raw`, :class:`Utf8`) are written by orjson's C escaper when it is installed, with
    :class:`Raw` and :class:`Utf8` spliced as this module writes them; orjson escapes strings as
    the standard library's C encoder does, code point for code point (a test checks every one).
    Values orjson cannot write the same way — a float (orjson writes ``1e-05`` as ``0.00001``),
    so never pass one — an integer beyond 64 bits, a lone surrogate, a non-string key, a foreign
    type — are left to this module's writer, whole array at once. Two foreign types orjson
    writes itself, by value, where :func:`dumps` refuses them: an :class:`enum.Enum` member that
    is not a ``str`` or ``int`` and a :class:`uuid.UUID`; never pass those either (the encoders
    build their values from a message's plain ``str``, ``bytes`` and ``bool`` fields).

    Raises:
        EncodingError: As for :func:`dumps`.
    """
    if _orjson is not None:
        try:
            written: bytes = _orjson.dumps(values, default=_fragment, option=_FRAGMENT_OPTIONS)
        except TypeError:  # orjson.JSONEncodeError is a TypeError
            pass
        else:
            return written
    return dumps(values)


def dumps_sorted_float_free(value: Any, *, indent: int | None = None) -> bytes:
    """Write ``value``, which holds no ``float``, as :func:`dumps_sorted` does: the same bytes.

    orjson writes it when it is installed and ``indent`` is ``None`` or 2 (its one indented
    form); its sorted keys, separators, indentation and escapes are this module's, byte for byte
    (a property test compares the two). Everything orjson would write another way goes to
    :func:`dumps_sorted`, whole value at once: a subclass (an :class:`ExactFloat` among them),
    an integer beyond 64 bits, a lone surrogate, a non-string key, nesting orjson refuses, a
    foreign type. A plain ``float`` must never be passed (orjson writes ``1e-05`` as
    ``0.00001``); :class:`Raw` and :class:`Utf8` are spliced as :func:`dumps_sorted` splices them.

    Raises:
        EncodingError: As for :func:`dumps_sorted`.
    """
    if _orjson is not None and indent in (None, 2):
        option = _FRAGMENT_OPTIONS | _orjson.OPT_SORT_KEYS
        if indent == 2:
            option |= _orjson.OPT_INDENT_2
        try:
            written: bytes = _orjson.dumps(value, default=_fragment, option=option)
        except TypeError:  # orjson.JSONEncodeError is a TypeError
            pass
        else:
            return written
    return dumps_sorted(value, indent=indent)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {text} is too large for a float (it would be infinity)")
    return value


def _utf8(data: bytes | bytearray) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not valid UTF-8 at byte {exc.start}") from None
    if text.startswith("\ufeff"):
        raise ValueError("starts with a byte order mark (write UTF-8 without one)")
    return text


class DuplicateKeyError(ValueError):
    """A JSON object repeats a key (:func:`loads` with ``unique_keys``).

    :func:`json.loads` would keep the last value and drop the others without a word, so a file
    read that way may not say what its bytes say (SPEC A8, R1).

    Args:
        key: The repeated key.
        path: The JSON path of the object holding it, as :func:`too_deep` writes paths
            (``$``, ``$.messages[2].content[0]``).
    """

    def __init__(self, key: str, path: str) -> None:
        self.key = key
        self.path = path
        super().__init__(f"{self.key_path}: duplicate key {encode_str(key)}")

    @property
    def key_path(self) -> str:
        """The JSON path of the repeated member (``$.messages[2].content[0].text``)."""
        return f"{self.path}.{self.key}"

    @property
    def reason(self) -> str:
        """The problem without the place: ``duplicate key "text"``."""
        return f"duplicate key {encode_str(self.key)}"


class _Repeated(Exception):
    """Internal: an object repeats a key (raised by the fast hook, located afterwards)."""


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # The fast path: one dict build, as json.loads does; a length check finds any repeat.
    value = dict(pairs)
    if len(value) != len(pairs):
        raise _Repeated
    return value


class _Pairs(list[tuple[str, Any]]):
    """Internal: an object's members in order, repeats kept (only to locate a repeat)."""

    __slots__ = ()


def _first_repeat(value: Any) -> DuplicateKeyError | None:
    """Return the first repeated key in document order in a value parsed into :class:`_Pairs`.

    The walk is iterative and top-down: each object's members are visited in order, so the
    repeat found is the one whose second occurrence comes first in the text.
    """
    stack: list[tuple[Any, str, set[str] | None]] = []

    def push(item: Any, path: str) -> None:
        if isinstance(item, _Pairs):
            stack.append((iter(item), path, set()))
        elif isinstance(item, list):
            stack.append((iter(enumerate(item)), path, None))

    push(value, "$")
    while stack:
        members, path, seen = stack[-1]
        member = next(members, None)
        if member is None:
            stack.pop()
        elif seen is None:
            push(member[1], f"{path}[{member[0]}]")
        elif member[0] in seen:
            return DuplicateKeyError(member[0], path)
        else:
            seen.add(member[0])
            push(member[1], f"{path}.{member[0]}")
    return None


_INT_LIMIT: Final = re.compile(
    r"Exceeds the limit \((\d+) digits\) for integer string conversion(?:: value has (\d+) digits)?"
)


def long_integer(error: BaseException) -> str | None:
    """Return a plain message when ``error`` is Python refusing an integer of too many digits.

    ``int()`` refuses decimal text longer than ``sys.get_int_max_str_digits()`` (4,300 by
    default) with a ``ValueError`` whose text suggests changing an interpreter setting; readers
    of untrusted files say instead what is wrong with the file.

    Returns:
        ``"an integer of 5000 digits is longer than the 4300 digits Python reads"`` (the count is
        left out when the error does not give it), or ``None`` for any other error.
    """
    if isinstance(error, json.JSONDecodeError) or not isinstance(error, ValueError):
        return None
    match = _INT_LIMIT.search(str(error))
    if match is None:
        return None
    limit, digits = match.groups()
    size = f"of {digits} digits " if digits else ""
    return f"an integer {size}is longer than the {limit} digits Python reads"


def _exact_finite(text: str) -> ExactFloat:
    _finite_float(text)
    return ExactFloat(text)


_FLOATS: Final[dict[tuple[bool, bool], Any]] = {
    (False, False): float,
    (True, False): _finite_float,
    (False, True): ExactFloat,
    (True, True): _exact_finite,
}


_DECODERS: Final[dict[tuple[bool, Any, bool], json.JSONDecoder]] = {}
"""One decoder per configuration, made once (``json.loads`` with hooks makes one per call)."""


def _decoder(finite: bool, hook: Any, exact: bool) -> json.JSONDecoder:
    key = (finite, hook, exact)
    decoder = _DECODERS.get(key)
    if decoder is None:
        decoder = json.JSONDecoder(
            parse_constant=_refuse_constant,
            parse_float=_FLOATS[finite, exact],
            object_pairs_hook=hook,
        )
        _DECODERS[key] = decoder
    return decoder


def _parse(text: str, finite: bool, hook: Any, exact: bool = False) -> Any:
    try:
        return _decoder(finite, hook, exact).decode(text)
    except ValueError as exc:
        message = long_integer(exc)
        if message is None:
            raise
        raise ValueError(message) from None


def loads(
    data: bytes | bytearray | str,
    *,
    finite: bool = False,
    unique_keys: bool = False,
    exact_floats: bool = False,
) -> Any:
    """Parse JSON text strictly; object order is kept.

    Bytes must be UTF-8 (no byte order mark); they are decoded strictly first, so invalid bytes
    and UTF-16/32 text are refused rather than guessed at. ``NaN`` and ``Infinity`` are refused.

    Args:
        data: The JSON text, as UTF-8 bytes or a string.
        finite: Also refuse numbers that overflow a float (``1e999``), naming the number, so
            every parsed number can be written back (request files and recorded bodies). Off,
            such a number parses as an infinity, for callers that report its JSON path
            themselves (the archive).
        unique_keys: Also refuse an object that repeats a key (request files and the archive,
            SPEC R1, A8) instead of keeping the last value. The check costs one length
            comparison per object; only a file that has a repeat is parsed again to find where.
        exact_floats: Parse numbers with a fraction or exponent as :class:`ExactFloat`, so
            writing them gives back their text (the archive's host values, SPEC A4).

    Raises:
        DuplicateKeyError: (``unique_keys``) an object repeats a key; it names the key and the
            object's JSON path, the first repeat in document order.
        ValueError: The text is not valid JSON (``json.JSONDecodeError`` is a ``ValueError``),
            bytes are not valid UTF-8 (the message names the byte offset), an integer is longer
            than Python reads (:func:`long_integer`), or (``finite``) a number overflows.
        RecursionError: The text nests deeper than the interpreter's recursion limit allows
            (about 1000 levels); callers turn it into their own typed error.
    """
    text = _utf8(data) if isinstance(data, bytes | bytearray) else data
    if not unique_keys:
        return _parse(text, finite, None, exact_floats)
    try:
        return _parse(text, finite, _unique_object, exact_floats)
    except _Repeated:
        pass
    # Error path only: the text after the repeat is still unread, so this parse may instead
    # raise the ValueError of invalid JSON further on.
    found = _first_repeat(_parse(text, finite, _Pairs))
    if found is None:  # pragma: no cover - the fast hook saw a repeat the walk must find
        raise AssertionError("a repeated key was seen but not found again")
    raise found


_FAST_NESTING: Final = 512
"""Texts with more opening brackets than this go to :func:`loads` alone: orjson's depth limit
(1,024) is not the interpreter's recursion limit, which ends :func:`loads` (about 1,000)."""


def is_json_object(data: bytes) -> bool:
    """Return whether ``data`` is strict UTF-8 JSON text whose value is an object.

    Used to decide whether stored tool-call argument bytes may be spliced verbatim (P2): bytes
    for which this is true decode with ``data.decode("utf-8")`` without error.

    orjson answers first when it is installed and the text cannot nest deeper than
    :data:`_FAST_NESTING`: what orjson parses, :func:`loads` parses to the same type (orjson
    refuses more — ``1e999``, a ``\ud800`` escape, a byte order mark — and those go on to
    :func:`loads`). A test checks both answers agree.
    """
    if _orjson is not None and data.count(b"[") + data.count(b"{") <= _FAST_NESTING:
        try:
            return type(_orjson.loads(data)) is dict
        except _orjson.JSONDecodeError:
            pass
    try:
        return isinstance(loads(data), dict)
    except (ValueError, RecursionError):
        return False


def too_deep(value: Any, limit: int = MAX_DEPTH) -> str | None:
    """Return where ``value`` nests objects/arrays more than ``limit`` levels deep, else ``None``.

    The walk is iterative (no recursion limit) and visits each container once.

    Args:
        value: A parsed JSON value.
        limit: The deepest nesting allowed; the top-level container is level 1.

    Returns:
        ``None`` when the value is within the limit, else the JSON path (``$.params.extra.k``)
        of the first offending value's top-level member, at most three steps long.
    """
    stack: list[tuple[Any, int, str]] = [(value, 0, "$")]
    while stack:
        item, depth, path = stack.pop()
        if isinstance(item, dict):
            children: Any = ((f".{key}", child) for key, child in item.items())
        elif isinstance(item, list):
            children = ((f"[{index}]", child) for index, child in enumerate(item))
        else:
            continue
        if depth >= limit:
            return path
        for step, child in children:
            if isinstance(child, dict | list):
                stack.append((child, depth + 1, path + step if depth < 3 else path))
    return None
