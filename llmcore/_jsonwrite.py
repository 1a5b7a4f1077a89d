"""The pure-Python JSON byte writer behind :mod:`llmcore.jsonbytes` (SPEC P2, A2).

:func:`dumps`, :func:`dumps_sorted`, :func:`dumps_items` and :func:`dumps_text`, the value
types they splice (:class:`Raw`, :class:`RawArray`, :class:`Utf8`, :class:`ExactFloat`) and
the string escaping and UTF-8 repair they share. :mod:`llmcore.jsonbytes` re-exports every
public name here (import them from there) and adds orjson's fast paths and the reader.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from json.encoder import encode_basestring
from typing import Any, Final

from llmcore.errors import EncodingError

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
    parts = _parts(out)
    return b"".join(parts)


def _parts(out: _Pieces) -> list[bytes | memoryview]:
    """The output as bytes pieces, in order: each text run encoded once, bytes as they are."""
    if not out.marks:
        return [_encode("".join(out))]
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
        return [out.around(b"".join(parts[:at]), b"".join(parts[at + 1 :]))]
    return parts


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


def dumps_sorted(value: Any, *, indent: int | None = None, end: str = "") -> bytes:
    """Write ``value`` as UTF-8 JSON bytes with every object's keys sorted (the archive, A2).

    Args:
        value: As for :func:`dumps`.
        indent: Spaces per nesting level, or ``None`` for the compact form.
        end: Text written after the value (a file's final newline) in the same copy.

    Raises:
        EncodingError: As for :func:`dumps`.
    """
    return b"".join(dumps_sorted_pieces(value, indent=indent, end=end))


def dumps_sorted_pieces(
    value: Any, *, indent: int | None = None, end: str = ""
) -> list[bytes | memoryview]:
    """Write ``value`` as :func:`dumps_sorted` does, as pieces whose concatenation is its bytes.

    The bytes of a :class:`RawArray` made by :meth:`~RawArray.from_pieces` are not copied: its
    pieces are among the result's, so a large document can be written (``os.writev``), hashed
    and compared without being joined into one buffer.

    Raises:
        EncodingError: As for :func:`dumps`.
    """
    out = _Pieces()
    _write_guarded(value, out, True, None if indent is None else " " * indent)
    if end:
        out.append(end)
    return _parts(out)


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
