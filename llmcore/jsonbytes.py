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
"""

from __future__ import annotations

import importlib
import json
import math
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from json.encoder import encode_basestring
from types import ModuleType
from typing import Any, Final

from llmcore.errors import EncodingError


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
    "dumps_text",
    "encode_str",
    "integer_size",
    "is_json_object",
    "loads",
    "long_integer",
    "too_deep",
]

MAX_DEPTH: Final = 256
"""The deepest nesting (objects and arrays) a request file or recorded body may hold."""

_encode_basestring: Final[Callable[[str], str]] = encode_basestring


class Raw:
    """Text that is already valid JSON, spliced into the output as it is.

    The caller vouches for validity; the writer never parses it.

    Args:
        text: One complete JSON value.
    """

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"Raw({self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Raw) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


class RawArray:
    """A JSON array whose elements are already-encoded UTF-8 JSON bytes, spliced as they are.

    Request bodies keep each history message's wire bytes from the previous build
    (:class:`~llmcore.providers.base.EncodeCache`); the array is written with one copy of each
    element into the final body, never decoded or re-encoded. Only :func:`dumps` and
    :func:`dumps_sorted` accept it.

    Args:
        items: The elements' bytes (each one or more comma-joined JSON values; empty ones are
            skipped).
    """

    __slots__ = ("around", "pieces")

    pieces: list[bytes | memoryview]
    """The array's inner bytes, commas included, as pieces whose concatenation is that text."""
    around: Callable[[bytes, bytes], bytes] | None
    """For an array made by :meth:`written_around`, its writer; ``None`` otherwise."""

    def __init__(self, items: Sequence[bytes]) -> None:
        nonempty = [item for item in items if item]
        self.pieces = [b",".join(nonempty)] if nonempty else []
        self.around = None

    @classmethod
    def from_pieces(cls, pieces: list[bytes | memoryview]) -> RawArray:
        """Return the array whose inner bytes are the concatenation of ``pieces``.

        The caller supplies the separators: ``[b'{"a":1}', b',{"b":2}']`` is ``[{"a":1},{"b":2}]``.
        The pieces are joined once, into the final bytes (no intermediate copy).
        """
        array = cls.__new__(cls)
        array.pieces = pieces
        array.around = None
        return array

    @classmethod
    def written_around(cls, write: Callable[[bytes, bytes], bytes]) -> RawArray:
        """Return the array whose writer writes the whole document around it, in one buffer.

        ``write(before, after)`` returns ``before``, the array (brackets included), then
        ``after``: the document's text before and after the array. A large array is then written
        once, into the document, instead of into bytes of its own that are copied into the
        document. Of several such arrays in one document, the first is written around; the
        others are written with ``b""`` on both sides and copied.
        """
        array = cls.__new__(cls)
        array.pieces = []
        array.around = write
        return array


class Utf8:
    """A JSON string given as UTF-8 bytes: written as the ``str`` it decodes to would be.

    Invalid UTF-8 becomes U+FFFD (``bytes.decode("utf-8", "replace")``). Bytes that are valid
    UTF-8 and hold nothing to escape (no quote, backslash or control character) are copied into
    the output as they are, without being decoded; others go through the same escaping as a
    ``str`` (:func:`encode_str`), so the bytes written are the same either way.

    Args:
        data: The text's bytes (tool results, base64 image data).
        plain: The caller vouches that ``data`` is ASCII with nothing to escape (base64 text),
            so it is not scanned.
        valid: The caller vouches that ``data`` is valid UTF-8
            (:attr:`~llmcore.messages.ToolResult.utf8_content`), so it is only scanned for
            bytes to escape.
    """

    __slots__ = ("data", "plain", "valid")

    def __init__(self, data: bytes, *, plain: bool = False, valid: bool = False) -> None:
        self.data = data
        self.plain = plain
        self.valid = valid

    def __repr__(self) -> str:
        return f"Utf8({self.data!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Utf8) and other.data == self.data  # the flags are hints only

    def __hash__(self) -> int:
        return hash(self.data)


class _Pieces(list[Any]):
    """The writer's output: ``str`` pieces, and lists of bytes pieces at :attr:`marks`.

    Text is joined and encoded once per run between bytes pieces (:func:`_finish`); the marks
    say where those runs end, so joining never looks at each piece's type.
    """

    __slots__ = ("around", "marks")

    def __init__(self) -> None:
        super().__init__()
        self.marks: list[int] = []
        """The indexes of the pieces that are lists of bytes (or views), in order."""
        self.around: Callable[[bytes, bytes], bytes] | None = None
        """The writer of the array written around the rest of the output
        (:meth:`RawArray.written_around`); its place is the piece :data:`_AROUND`."""

    def add_bytes(self, pieces: list[bytes | memoryview]) -> None:
        """Append bytes pieces that are copied into the output as they are."""
        self.marks.append(len(self))
        self.append(pieces)


_ESCAPED: Final = bytes(range(0x20)) + b'"\\'
"""The bytes :func:`encode_str` escapes (``"``, backslash, and C0 controls); nothing else is."""
_NOT_ESCAPED: Final = bytes(b for b in range(256) if b not in _ESCAPED)
_ESCAPES: Final[dict[int, bytes]] = {
    byte: encode_basestring(chr(byte))[1:-1].encode("ascii") for byte in _ESCAPED
}
"""Each escaped byte's escape, taken from :func:`encode_str` itself (``\\n``, ``\\u001f``)."""


def _utf8_literal(value: Utf8) -> list[bytes | memoryview]:
    """Return the JSON string literal of ``value`` as pieces: quote, escaped bytes, quote.

    The bytes are those :func:`encode_str` gives for ``value.data.decode("utf-8", "replace")``,
    encoded as UTF-8: escaped bytes are ASCII and never occur inside a multi-byte sequence, so
    escaping byte by byte is escaping character by character. Each escaped byte that occurs is
    replaced in one C pass (the backslash first, so no escape is escaped again).
    """
    data = value.data
    if not value.plain:
        if not value.valid and not data.isascii():
            data = _valid_utf8(data)
        found = data.translate(None, _NOT_ESCAPED)
        if found:
            for byte in sorted(set(found), key=lambda b: b != 0x5C):
                data = data.replace(bytes((byte,)), _ESCAPES[byte])
    return [b'"', data, b'"']


def _valid_utf8(data: bytes) -> bytes:
    """Return ``data`` with each invalid UTF-8 sequence replaced by U+FFFD (``EF BF BD``).

    The same bytes as ``data.decode("utf-8", "replace").encode("utf-8")``, but only the text
    from the first invalid byte on is decoded again: everything before it was just checked, and
    it ends on a character boundary, so the replacing decoder starts there in the state it
    would have reached (valid text, the common case, is checked once and returned as it is).
    """
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        start = exc.start
        return data[:start] + data[start:].decode("utf-8", "replace").encode("utf-8")
    return data


def encode_str(value: str) -> str:
    """Return ``value`` as a JSON string literal (quotes included), non-ASCII kept as is.

    A lone surrogate passes through here and is refused when the text becomes bytes.
    """
    out: str = _encode_basestring(value)
    return out


class ExactFloat(float):
    """A number parsed from JSON text that keeps that text, written back exactly as it was.

    ``12345678901234567890.5``, ``1E+2`` or ``0.1e-400`` have no float that writes them back the
    same; the archive keeps the host's values unchanged (SPEC A4), so :func:`loads` with
    ``exact_floats`` parses numbers with a fraction or exponent into this. Arithmetic gives plain
    floats.
    """

    __slots__ = ("text",)

    text: str

    def __new__(cls, text: str) -> ExactFloat:
        """Return the number of the JSON number ``text``, remembering ``text``."""
        value = super().__new__(cls, text)
        value.text = text
        return value


def _float(value: float) -> str:
    if math.isnan(value) or math.isinf(value):
        raise EncodingError(f"{value!r} has no JSON form")
    if type(value) is ExactFloat:
        return value.text
    return float.__repr__(value)


def _int(value: int) -> str:
    try:
        return int.__repr__(value)
    except ValueError:  # over sys.get_int_max_str_digits(): a YAML hex or binary integer
        raise EncodingError(
            f"{integer_size(value)} is longer than the {sys.get_int_max_str_digits()} digits "
            "Python writes"
        ) from None


_CONSTANTS: Final[dict[object, str]] = {None: "null", True: "true", False: "false"}


def _scalar(value: Any) -> str:
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, bool) or value is None:
        return _CONSTANTS[value]
    if isinstance(value, int):
        return _int(value)
    if isinstance(value, float):
        return _float(value)
    raise EncodingError(f"cannot write a {type(value).__name__} as JSON")


def _write(value: Any, out: _Pieces, sort: bool, indent: str | None, depth: int) -> None:
    if indent is None and not sort:
        _compact(value, out)
    elif isinstance(value, str):
        out.append(_encode_basestring(value))
    elif isinstance(value, Mapping):
        _write_object(value, out, sort, indent, depth)
    elif isinstance(value, list | tuple):
        _write_array(value, out, sort, indent, depth)
    else:
        _write_other(value, out)


_AROUND: Final = memoryview(bytearray())
"""The piece that stands for the place of the array written around the output (identity)."""


def _write_other(value: Any, out: _Pieces) -> None:
    if isinstance(value, RawArray):
        if value.around is None:
            out.append("[")
            out.add_bytes(value.pieces)
            out.append("]")
        elif out.around is None:
            out.around = value.around
            out.add_bytes([_AROUND])
        else:
            out.add_bytes([value.around(b"", b"")])
    elif isinstance(value, Utf8):
        out.add_bytes(_utf8_literal(value))
    else:
        out.append(_scalar(value))


_KEYS: Final[dict[tuple[str, str], str]] = {}
"""Object keys already written, with the separator before them, as ``{"key":`` or ``,"key":``
(request bodies use a few dozen keys, so each member costs one look-up and one piece)."""
_KEYS_MAX: Final = 4096


def _key(key: Any, separator: str) -> str:
    literal = _KEYS.get((separator, key))
    if literal is not None:
        return literal
    if not isinstance(key, str):
        raise EncodingError(f"object key {key!r} is not a string")
    literal = separator + _encode_basestring(key) + ":"
    if len(_KEYS) < _KEYS_MAX and type(key) is str:
        _KEYS[separator, key] = literal
    return literal


def _compact(value: Any, out: _Pieces) -> None:
    """Write ``value`` compactly in insertion key order (the request-body path of :func:`dumps`).

    The same output as the general writer with ``sort=False, indent=None``: the exact types of
    request bodies are dispatched by one table look-up, subclasses and other types by the
    general checks.
    """
    write = _EXACT.get(type(value))
    if write is not None:
        write(value, out)
    elif isinstance(value, str):
        out.append(_encode_basestring(value))
    elif isinstance(value, Mapping):
        _compact_object(value, out)
    elif isinstance(value, list | tuple):
        _compact_array(value, out)
    else:
        _write_other(value, out)


def _compact_object(value: Mapping[Any, Any], out: _Pieces) -> None:
    if not value:
        out.append("{}")
        return
    append = out.append
    separator = "{"
    for key, item in value.items():  # _key and _compact inlined for their common cases
        literal = _KEYS.get((separator, key))
        append(_key(key, separator) if literal is None else literal)
        kind = type(item)
        if kind is str:
            append(_encode_basestring(item))
        else:
            write = _EXACT.get(kind)
            if write is None:
                _compact(item, out)
            else:
                write(item, out)
        separator = ","
    append("}")


def _compact_array(value: Sequence[Any], out: _Pieces) -> None:
    if not value:
        out.append("[]")
        return
    separator = "["
    for item in value:
        out.append(separator)
        _compact(item, out)
        separator = ","
    out.append("]")


_EXACT: Final[dict[type, Callable[[Any, _Pieces], None]]] = {
    str: lambda value, out: out.append(_encode_basestring(value)),
    dict: _compact_object,
    list: _compact_array,
    tuple: _compact_array,
    Raw: lambda value, out: out.append(value.text),
    Utf8: lambda value, out: out.add_bytes(_utf8_literal(value)),
    bool: lambda value, out: out.append(_CONSTANTS[value]),
    type(None): lambda value, out: out.append("null"),
    int: lambda value, out: out.append(_int(value)),
}
"""The writers of the exact types request bodies hold (:func:`_compact`)."""


def _write_object(
    value: Mapping[Any, Any], out: _Pieces, sort: bool, indent: str | None, depth: int
) -> None:
    if not value:
        out.append("{}")
        return
    keys = list(value)
    for key in keys:
        if not isinstance(key, str):
            raise EncodingError(f"object key {key!r} is not a string")
    if sort:
        keys.sort()
    inner = None if indent is None else "\n" + indent * (depth + 1)
    out.append("{")
    for i, key in enumerate(keys):
        if i:
            out.append(",")
        if inner is not None:
            out.append(inner)
        out.append(_encode_basestring(key))
        out.append(":" if indent is None else ": ")
        _write(value[key], out, sort, indent, depth + 1)
    if indent is not None:
        out.append("\n" + indent * depth)
    out.append("}")


def _write_array(
    value: Sequence[Any], out: _Pieces, sort: bool, indent: str | None, depth: int
) -> None:
    if not value:
        out.append("[]")
        return
    inner = None if indent is None else "\n" + indent * (depth + 1)
    out.append("[")
    for i, item in enumerate(value):
        if i:
            out.append(",")
        if inner is not None:
            out.append(inner)
        _write(item, out, sort, indent, depth + 1)
    if indent is not None:
        out.append("\n" + indent * depth)
    out.append("]")


def _encode(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise EncodingError("a string holds a lone surrogate, which has no UTF-8 form") from exc


def _finish(out: _Pieces) -> bytes:
    """Join the writer's pieces: text runs are encoded once each; bytes are copied once."""
    if not out.marks:
        return _encode("".join(out))
    parts: list[bytes | memoryview] = []
    start = 0
    for index in out.marks:
        if start < index:
            parts.append(_encode("".join(out[start:index])))
        parts.extend(out[index])
        start = index + 1
    if start < len(out):
        parts.append(_encode("".join(out[start:])))
    if out.around is not None:
        at = next(i for i, part in enumerate(parts) if part is _AROUND)
        return out.around(b"".join(parts[:at]), b"".join(parts[at + 1 :]))
    return b"".join(parts)


def _write_guarded(value: Any, out: _Pieces, sort: bool, indent: str | None) -> None:
    try:
        _write(value, out, sort, indent, 0)
    except RecursionError:
        raise EncodingError("a value is nested too deeply to write") from None


def dumps_text(value: Any) -> str:
    """Write ``value`` compactly in insertion key order and return the JSON text.

    Raises:
        EncodingError: ``value`` holds NaN, an infinity, a non-string key or a foreign type, or
            nests too deeply for the recursive writer (far beyond :data:`MAX_DEPTH`).
    """
    out = _Pieces()
    _write_guarded(value, out, False, None)
    if out.marks:
        raise EncodingError("a RawArray or Utf8 value can only be written as bytes (use dumps)")
    return "".join(out)


def dumps(value: Any, *, indent: int | None = None) -> bytes:
    """Write ``value`` as UTF-8 JSON bytes, keys in insertion order (request bodies).

    Args:
        value: dicts, lists, tuples, str, int, float, bool, None and :class:`Raw`.
        indent: Spaces per nesting level, or ``None`` (the default) for the compact form used
            by every request body. :class:`Raw` text is spliced as it is either way.

    Returns:
        The UTF-8 bytes, with ``,`` and ``:`` separators and no trailing newline.

    Raises:
        EncodingError: NaN, an infinity, a non-string key, a lone surrogate or a foreign type.
    """
    out = _Pieces()
    _write_guarded(value, out, False, None if indent is None else " " * indent)
    return _finish(out)


def dumps_items(values: Iterable[Any]) -> bytes:
    """Write each value as :func:`dumps` does, each preceded by a comma, as one bytes.

    The pieces of an array built from parts (``b',{"a":1},{"b":2}'``; see
    :meth:`RawArray.from_pieces`); no values give ``b""``.

    Raises:
        EncodingError: As for :func:`dumps`.
    """
    out = _Pieces()
    for value in values:
        out.append(",")
        _write_guarded(value, out, False, None)
    return _finish(out) if out else b""


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


def dumps_sorted(value: Any, *, indent: int | None = None) -> bytes:
    """Write ``value`` as UTF-8 JSON bytes with every object's keys sorted (the archive, A2).

    Args:
        value: As for :func:`dumps`.
        indent: Spaces per nesting level, or ``None`` for the compact form.

    Raises:
        EncodingError: As for :func:`dumps`.
    """
    out = _Pieces()
    _write_guarded(value, out, True, None if indent is None else " " * indent)
    return _finish(out)


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


_LOG10_2: Final = math.log10(2)
_EXACT_BITS: Final = 1 << 20
"""Up to this many bits (about 315,000 digits) :func:`integer_size` counts digits exactly."""


def integer_size(value: int) -> str:
    """Describe a (possibly huge) integer by its number of decimal digits, without ``str()``.

    ``str()`` and ``repr()`` refuse integers longer than ``sys.get_int_max_str_digits()``
    (4,300 digits by default) with a ``ValueError``; YAML hex, octal and binary integers are
    read without that limit, so messages about untrusted values use this instead. The count
    comes from :meth:`int.bit_length`: exact up to :data:`_EXACT_BITS` bits, "about" beyond.

    Returns:
        ``"an integer of 5000 digits"`` (``"a negative integer of …"`` below zero).
    """
    size = abs(value)
    bits = size.bit_length()
    digits = int((bits - 1) * _LOG10_2) + 1 if bits else 1  # 10**(digits-1) <= 2**(bits-1)
    about = ""
    if bits > _EXACT_BITS:
        about = "about "
    elif size >= 10**digits:
        digits += 1
    sign = "a negative integer" if value < 0 else "an integer"
    return f"{sign} of {about}{digits} digit{'s' if digits > 1 else ''}"


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
