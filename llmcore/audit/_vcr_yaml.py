r"""A fast reader for the YAML that vcrpy writes (``yaml.dump``), equal to PyYAML's safe load.

vcrpy serializes a cassette with ``yaml.dump(data, Dumper=CDumper or Dumper)``
(https://github.com/kevin1024/vcrpy, ``vcr/serializers/yamlserializer.py``): block mappings
and indentless block sequences, two-space indents, keys as plain or quoted scalars on one
line, values as plain, single-quoted or double-quoted scalars (folded over lines at spaces
past 80 columns, with the escapes of YAML 1.1 §5.7), ``{}`` and ``[]`` for empty
collections. Other writers add literal and folded block scalars (``|``, ``|-``, ``|+``,
``>``, ``>-``, ``>+``). :func:`load` reads exactly that subset: the line loop of
:mod:`llmcore.audit._vcr_lines` walks the lines, and this module's recursive reader (its scalar
methods serve the loop too) reads what the loop gives up on; each scalar is scanned once, and
plain scalars are resolved with PyYAML's own implicit resolvers (YAML 1.1: null, booleans,
decimal integers, simple floats, else a string).

Anything else — anchors, aliases, tags, flow collections, comments, document markers, tabs,
``\\r`` or Unicode line breaks, a byte-order mark, a character YAML cannot hold, an integer
PyYAML reads as octal or sexagesimal, a timestamp, a malformed line — makes :func:`load`
return ``None``, and the caller reads the file with PyYAML, so the result (or the error) is
always PyYAML's. ``tests/audit/test_vcr_yaml.py`` proves equality with ``CSafeLoader`` over
generated cassettes and every cassette in the repository.

Leaves out: what a cassette means (:mod:`llmcore.audit.inputs`).
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, Final

import yaml

from llmcore.audit import _vcr_lines
from llmcore.audit._vcr_lines import Fallback as _Fallback

__all__ = ["load", "load_flagged"]

_RESOLVERS: Final = yaml.resolver.Resolver.yaml_implicit_resolvers
_TAG: Final = "tag:yaml.org,2002:"
_BOOLS: Final = yaml.constructor.SafeConstructor.bool_values
_DECIMAL: Final = re.compile(r"[-+]?(?:0|[1-9][0-9]{0,80})")
_FLOAT: Final = re.compile(r"[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+][0-9]+)?")
_ESCAPE: Final = re.compile(r"\\(x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)")
_DOUBLE: Final = re.compile(
    r"\\(x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|\n[ \n]*|.)|( *\n[ \n]*)"
)
_SPACES: Final = re.compile(" *")
_ESCAPES: Final = {
    "0": "\0",
    "a": "\x07",
    "b": "\x08",
    "t": "\t",
    "\t": "\t",
    "n": "\n",
    "v": "\x0b",
    "f": "\x0c",
    "r": "\r",
    "e": "\x1b",
    " ": " ",
    '"': '"',
    "/": "/",
    "\\": "\\",
    "N": "\x85",
    "_": "\xa0",
    "L": "\u2028",
    "P": "\u2029",
}
# What makes a document fall back as a whole: characters PyYAML's reader refuses, other line
# breaks, tabs, and a document marker at the start of a line.
_REFUSED: Final = re.compile(
    "[^\x0a\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]"
)
_ASCII_KEPT: Final = bytes([0x0A, *range(0x20, 0x7F)])
"""The ASCII bytes a cassette may hold (a line feed and the printable characters)."""
_REFUSED_ENCODED: Final = (
    "\u2028".encode(),
    "\u2029".encode(),
    "\ufeff".encode(),
    "\ufffe".encode(),
    "\uffff".encode(),
)
"""The UTF-8 of the refused characters above U+00FF (surrogates never decode)."""
_C1: Final = re.compile(b"\xc2[\x80-\x9f]")
"""The UTF-8 of U+0080 to U+009F."""
_HIGH: Final = bytes(range(0x80, 0x100))
_MARKERS: Final = ("\n---", "\n...", "\n%")
_MARKER_BYTES: Final = re.compile(b"|".join(re.escape(marker.encode()) for marker in _MARKERS))
"""Any of :data:`_MARKERS` in the bytes (one search, faster than one per marker)."""
_BLOCK_HEADER: Final = re.compile(r"([|>])([-+]?)( *)")
_PLAIN_START: Final = frozenset("-?:,[]{}#&*!|>'\"%@`")


def load(
    data: bytes, *, lines: bool = True, skip_response_headers: bool = False
) -> tuple[Any, list[int]] | None:
    """The document PyYAML's safe loader builds from ``text``, or ``None`` outside the subset.

    Args:
        data: The cassette's bytes (UTF-8, as vcrpy writes them).
        lines: Read with the line loop (:func:`llmcore.audit._vcr_lines.read`) first, and with
            the recursive reader only when it gives up; ``False``: the recursive reader alone.
        skip_response_headers: Leave out the interactions' ``response.headers``, and keep
            only the ``Content-Type`` entries of their ``request.headers``, where the line loop
            can skip them unread (their lines all of the shapes vcrpy writes for headers: see
            :func:`llmcore.audit._vcr_lines.read`); the rest of the document is the same.

    Returns:
        ``(document, lines)``: the document (dicts, lists, ``str``, ``int``, ``float``,
        ``bool``, ``None``) and the 1-based line where each item of the root's first
        ``interactions`` sequence starts — or ``None`` when the text is outside the subset
        (the caller then parses it with PyYAML, which also reports any error).
    """
    got = load_flagged(data, lines=lines, skip_response_headers=skip_response_headers)
    return None if got is None else (got[0], got[1])


def load_flagged(
    data: bytes, *, lines: bool = True, skip_response_headers: bool = False
) -> tuple[Any, list[int], bool] | None:
    """As :func:`load`, with a third value: whether the reader built no ``float`` at all.

    ``True`` proves the document holds no float (a float is only built by resolving a plain
    scalar, and skipped headers hold none: see :func:`llmcore.audit._vcr_lines.read`);
    ``False`` means one was built, perhaps later replaced by a duplicate key's value.
    """
    text = checked_text(data)
    if text is None:
        return None
    if lines:
        reader = _Reader(text)
        try:
            doc, found = _vcr_lines.read(reader, skip_response_headers=skip_response_headers)
        except (_Fallback, IndexError, ValueError, RecursionError):
            pass
        else:
            return doc, found, not reader.floats
    reader = _Reader(text)
    try:
        doc, found = reader.document()
    except (_Fallback, IndexError, ValueError, RecursionError):
        return None
    return doc, found, not reader.floats


def checked_text(data: bytes) -> str | None:
    """The cassette's text when its characters and markers are in the subset, else ``None``.

    A closing document end marker (``...``) is dropped. The characters are checked in the
    bytes (deleting the printable ASCII ones, then looking for the UTF-8 of the others that
    :data:`_REFUSED` names): the answer of searching :data:`_REFUSED` in the text.
    """
    if data.endswith(b"\n...\n"):  # a document end marker closing the file
        data = data[:-4]
    if not data.endswith(b"\n") or data.startswith((b"---", b"...", b"%")):
        return None
    rest = data.translate(None, _ASCII_KEPT)  # the bytes other than LF and printable ASCII
    if not rest:
        return data.decode("ascii") if _MARKER_BYTES.search(data) is None else None
    if rest.translate(None, _HIGH):
        return None  # an ASCII control character or DEL
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if b"\xc2" in rest and _C1.search(data) is not None:
        return None
    # ``rest`` holds every non-ASCII byte of ``data`` in order: a refused character's UTF-8
    # (non-ASCII bytes only) in ``data`` is in ``rest`` too, so ``rest`` is searched first
    if any(one in rest for one in _REFUSED_ENCODED) and any(
        one in data for one in _REFUSED_ENCODED
    ):
        return None
    if _MARKER_BYTES.search(data) is not None:  # ASCII: in the text as in the bytes
        return None
    return text


def _plain(value: str) -> Any:
    """A plain scalar's value, resolved as PyYAML's ``Resolver`` and ``SafeConstructor`` do."""
    if value.isdigit() and value.isascii() and len(value) <= 81 and value[0] != "0":
        return int(value)  # what the resolvers give (only the int one matches): a token count
    resolvers = _RESOLVERS.get(value[0], []) + _RESOLVERS.get(None, [])
    tag = next((tag for tag, pattern in resolvers if pattern.match(value)), None)
    if tag is None:
        return value
    kind = tag.removeprefix(_TAG)
    if kind == "null":
        return None
    if kind == "bool":
        return _BOOLS[value.lower()]
    if kind == "int" and _DECIMAL.fullmatch(value):
        return int(value)
    if kind == "float" and _FLOAT.fullmatch(value):
        return float(value)
    raise _Fallback


def _unescape(segment: str) -> str:
    if "\\" not in segment:
        return segment
    return _ESCAPE.sub(_escaped, segment)


def _escaped(match: re.Match[str]) -> str:
    code = match.group(1)
    if code[0] == "\n":  # an escaped line break, then any blank lines (§7.3.1)
        return "\n" * (code.count("\n") - 1)
    if len(code) == 1:
        if code not in _ESCAPES:
            raise _Fallback
        return _ESCAPES[code]
    point = int(code[1:], 16)
    if 0xD800 <= point <= 0xDFFF or point > 0x10FFFF:  # libyaml refuses these
        raise _Fallback
    return chr(point)


def _line_fold(match: re.Match[str]) -> str:
    if match.group(1) is not None:
        return _escaped(match)
    breaks = match.group(2).count("\n")
    return " " if breaks == 1 else "\n" * (breaks - 1)


def _fold_single(content: str) -> str:
    """A single-quoted scalar's value from the text between its quotes (YAML 1.1 §7.3.2).

    The spaces around each line break go; then one break between two lines is a space, and
    a run of ``n`` breaks is ``n - 1`` (the lines, each stripped, joined in one pass).
    """
    if "\n" in content:
        lines = content.split("\n")
        last = len(lines) - 1
        out = [lines[0].rstrip(" ")]
        breaks = 0
        for number in range(1, last + 1):
            line = lines[number]
            line = line.strip(" ") if number < last else line.lstrip(" ")
            breaks += 1
            if line:
                out.append(" " if breaks == 1 else "\n" * (breaks - 1))
                out.append(line)
                breaks = 0
        if breaks:
            out.append(" " if breaks == 1 else "\n" * (breaks - 1))
        content = "".join(out)
    return content.replace("''", "'")


def _fold_double(content: str) -> str:
    """A double-quoted scalar's value from the text between its quotes (YAML 1.1 §7.3.1)."""
    if "\n" not in content:
        return _unescape(content)
    return _DOUBLE.sub(_line_fold, content)


def _odd_backslashes(text: str) -> bool:
    return (len(text) - len(text.rstrip("\\"))) % 2 == 1


class _Reader:
    """One pass over the lines; ``pos`` is the offset of the next line to read."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.counted = (0, 1)  # (offset, line number there): for the interactions' lines
        self.lines: list[int] | None = []  # until the first `interactions` sequence is read
        self.plains: dict[str, Any] = {}
        self.floats = False  # whether a plain scalar was resolved to a float

    def line_at(self, offset: int) -> int:
        start, number = self.counted
        number += self.text.count("\n", start, offset)
        self.counted = (offset, number)
        return number

    def next_line(self) -> tuple[int, int, int]:
        """Skip blank lines: ``(start, indent, end)`` of the next one (``indent`` -1 at the end)."""
        text = self.text
        while self.pos < len(text):
            start = self.pos
            end = text.index("\n", start)
            indent = _SPACES.match(text, start).end()  # type: ignore[union-attr]
            if indent < end:
                return start, indent - start, end
            self.pos = end + 1
        return self.pos, -1, self.pos

    def document(self) -> tuple[Any, list[int]]:
        _, indent, _ = self.next_line()
        if indent != 0:
            raise _Fallback
        doc = self.mapping(0)
        return doc, self.lines or []

    def plain(self, value: str) -> Any:
        try:
            return self.plains[value]
        except KeyError:
            got = self.plains[value] = _plain(value)
            if type(got) is float:
                self.floats = True
            return got

    def mapping(self, indent: int) -> dict[Any, Any]:
        """A block mapping whose keys start at column ``indent``, from the next line on."""
        out: dict[Any, Any] = {}
        while True:
            start, column, end = self.next_line()
            if column < indent:
                return out
            if column > indent:
                raise _Fallback
            self.entry(out, start + column, end, indent)

    def entry(self, out: dict[Any, Any], at: int, end: int, indent: int) -> None:
        """Read ``key: value`` starting at offset ``at`` (column ``indent``) into ``out``."""
        key, value_at = self.key(at, end)
        if value_at < end:
            out[key] = self.scalar(value_at, end, indent)
            return
        self.pos = end + 1
        out[key] = self.nested(key, indent)

    def nested(self, key: Any, indent: int) -> Any:
        """The value of ``key:`` (at column ``indent``) ending its line: a node below, or null."""
        text = self.text
        start, column, _ = self.next_line()
        dash = column >= 0 and text.startswith("- ", start + column)
        if column > indent and not dash:
            return self.mapping(column)
        if not dash or column < indent:
            return None
        items = self.lines if indent == 0 and key == "interactions" else None
        if items is not None:
            self.lines = None  # only the first `interactions` sequence counts
        value = self.sequence(column, items)
        if items is not None:
            self.lines = items
        return value

    def key(self, at: int, end: int) -> tuple[Any, int]:
        """A key on its line: its value, and the offset after ``: `` (or ``end``)."""
        text = self.text
        first = text[at]
        if first == "'" or first == '"':
            close = self.closing(at)
            if close > end or not text.startswith(":", close + 1):
                raise _Fallback
            raw = text[at + 1 : close]
            key: Any = raw.replace("''", "'") if first == "'" else _unescape(raw)
            colon = close + 1
        else:
            colon = text.find(": ", at, end)
            if colon < 0:
                colon = end - 1 if text[end - 1] == ":" else -1
            if colon <= at or not _plain_starts(text, at) or " #" in text[at:colon]:
                raise _Fallback
            if text[colon - 1] == " ":
                raise _Fallback
            key = self.plain(text[at:colon])
        after = colon + 1
        if after < end:
            if text[after] != " ":
                raise _Fallback
            after = _SPACES.match(text, after).end()  # type: ignore[union-attr]
        return key, after

    def sequence(self, indent: int, lines: list[int] | None) -> list[Any]:
        """A block sequence whose ``- `` marks are at column ``indent``."""
        text = self.text
        out: list[Any] = []
        while True:
            start, column, end = self.next_line()
            if column != indent or not text.startswith("- ", start + column):
                if column > indent:
                    raise _Fallback
                return out
            at = _SPACES.match(text, start + column + 2).end()  # type: ignore[union-attr]
            if at >= end or text.startswith("- ", at) or text[at] == "-" and at + 1 == end:
                raise _Fallback  # an empty item, or a sequence in a sequence
            if lines is not None:
                lines.append(self.line_at(at))
            out.append(self.item(at, end, column, at - start))

    def starts_key(self, at: int, end: int) -> bool:
        """Whether the line's text from ``at`` to ``end`` starts a mapping key (``k: …``)."""
        text = self.text
        first = text[at]
        if first == "'" or first == '"':
            close = self.closing(at)
            return close < end and text.startswith(":", close + 1)
        return text.find(": ", at, end) >= 0 or text[end - 1] == ":"

    def item(self, at: int, end: int, dash: int, column: int) -> Any:
        """One sequence item: a mapping whose first key is on the dash's line, or a scalar."""
        if not self.starts_key(at, end):
            return self.scalar(at, end, dash)
        out: dict[Any, Any] = {}
        self.entry(out, at, end, column)
        for key, value in self.mapping(column).items():
            out[key] = value  # a later duplicate key wins, as in PyYAML
        return out

    def closing(self, at: int) -> int:
        """The offset of the quote that closes the quoted scalar opening at ``at``."""
        text = self.text
        quote = text[at]
        find = at + 1
        while True:
            close = text.index(quote, find)
            if quote == "'":
                if text.startswith("'", close + 1):
                    find = close + 2
                    continue
                return close
            before = close
            while text[before - 1] == "\\":
                before -= 1
            if (close - before) % 2 == 0:
                return close
            find = close + 1

    def scalar(self, at: int, end: int, indent: int) -> Any:
        """A scalar starting at ``at`` on a line ending at ``end``, in a block at ``indent``."""
        text = self.text
        first = text[at]
        if first == "'" or first == '"':
            return self.quoted(at, end, indent)
        if first == "|" or first == ">":
            return self.block(at, end, indent)
        if first == "!":
            return self.binary(at, end, indent)
        self.pos = end + 1
        value = text[at:end].rstrip(" ")
        if value == "{}":
            return {}
        if value == "[]":
            return []
        if not _plain_starts(text, at):
            raise _Fallback
        if ": " in value or " #" in value or value[-1] == ":":
            raise _Fallback
        if text.startswith(" " * (indent + 1), self.pos) or text.startswith("\n", self.pos):
            value = self.plain_rest(value, indent)
        return self.plain(value)

    def quoted(self, at: int, end: int, indent: int) -> str:
        """A single- or double-quoted scalar opening at ``at``, alone on its last line."""
        text = self.text
        close = self.closing(at)
        line_end = text.index("\n", close)
        if line_end > close + 1 and text[close + 1 : line_end].strip(" "):
            raise _Fallback
        self.pos = line_end + 1
        if close > end and _shallow(indent).search(text, end, close) is not None:
            raise _Fallback  # a further line not indented past the block
        content = text[at + 1 : close]
        return _fold_single(content) if text[at] == "'" else _fold_double(content)

    def binary(self, at: int, end: int, indent: int) -> bytes:
        """A ``!!binary`` scalar (block or quoted): its base64 text decoded."""
        text = self.text
        if not text.startswith("!!binary ", at):
            raise _Fallback
        at = _SPACES.match(text, at + 9).end()  # type: ignore[union-attr]
        if at >= end or text[at] not in "|>'\"":
            raise _Fallback
        value = self.scalar(at, end, indent)
        try:
            return base64.decodebytes(value.encode("ascii"))
        except (UnicodeEncodeError, binascii.Error):
            raise _Fallback from None

    def plain_rest(self, value: str, indent: int) -> str:
        """Fold a plain scalar's further lines (indented past ``indent``) onto ``value``."""
        text = self.text
        out = [value]
        breaks = 0
        pos = self.pos
        while pos < len(text):
            end = text.index("\n", pos)
            line = text[pos:end]
            stripped = line.strip(" ")
            if not stripped:
                breaks += 1
                pos = end + 1
                continue
            if len(line) - len(line.lstrip(" ")) <= indent:
                break
            if stripped[0] == "#" or ": " in stripped or " #" in stripped or stripped[-1] == ":":
                raise _Fallback
            out.append("\n" * breaks if breaks else " ")
            out.append(stripped)
            breaks = 0
            pos = self.pos = end + 1
        return "".join(out)

    def block(self, at: int, end: int, indent: int) -> str:
        """A literal (``|``) or folded (``>``) block scalar, its indentation detected (§8.1)."""
        text = self.text
        header = _BLOCK_HEADER.fullmatch(text, at, end)
        if header is None:
            raise _Fallback
        self.pos = end + 1
        lines: list[str] = []
        width = -1
        longest_blank = 0
        while self.pos < len(text):
            stop = text.index("\n", self.pos)
            line = text[self.pos : stop]
            spaces = len(line) - len(line.lstrip(" "))
            if spaces == len(line) and (width < 0 or spaces <= width):
                longest_blank = max(longest_blank, spaces) if width < 0 else longest_blank
                lines.append("")
            elif width < 0:
                if spaces <= indent or spaces < longest_blank:
                    raise _Fallback  # an empty block scalar, or blank lines indented past it
                width = spaces
                lines.append(line[width:])
            elif spaces >= width:
                lines.append(line[width:])
            else:
                break
            self.pos = stop + 1
        if width < 0:
            raise _Fallback
        return _chomped(lines, header.group(1) == ">", header.group(2))


def _plain_starts(text: str, at: int) -> bool:
    """Whether a plain scalar may start at ``at`` (``-``, ``?``, ``:`` only before a non-space)."""
    first = text[at]
    if first not in _PLAIN_START:
        return True
    return first in "-?:" and text[at + 1] not in " \n"


def _shallow(indent: int) -> re.Pattern[str]:
    """A line break followed by a line indented ``indent`` columns or less (not blank)."""
    pattern = _SHALLOW.get(indent)
    if pattern is None:
        pattern = _SHALLOW[indent] = re.compile(f"\\n {{0,{indent}}}[^ \\n]")
    return pattern


_SHALLOW: dict[int, re.Pattern[str]] = {}


def _chomped(lines: list[str], folded: bool, chomp: str) -> str:
    """A block scalar's value from its lines (blank ones empty) and its chomping (§8.1.1.2)."""
    count = len(lines)
    while not lines[count - 1]:
        count -= 1
    trailing = len(lines) - count
    lead = 0
    while not lines[lead]:
        lead += 1
    body = lines[lead:count]
    text = "\n" * lead + (_folded(body) if folded else "\n".join(body))
    if chomp == "-":
        return text
    if chomp == "+":
        return text + "\n" * (trailing + 1)
    return text + "\n"


def _folded(lines: list[str]) -> str:
    """Join a folded block scalar's lines: one break between two text lines is a space."""
    out = [lines[0]]
    breaks = 0
    previous = lines[0]
    for line in lines[1:]:
        if not line:
            breaks += 1
            continue
        if previous[0] != " " and line[0] != " ":
            out.append("\n" * breaks if breaks else " ")
        else:
            out.append("\n" * (breaks + 1))
        out.append(line)
        previous, breaks = line, 0
    return "".join(out)
