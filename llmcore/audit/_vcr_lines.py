"""The line loop of the cassette reader: one regular expression per line, an explicit stack.

:mod:`llmcore.audit._vcr_yaml` checks a cassette's characters and holds the scalar readers;
:func:`read` walks the lines. A line of the commonest shapes (``key: value``, ``key:``,
``- value``, ``- key: value``, ``- key:``, the value a plain scalar on one line, a quoted one
without escapes or doubled quotes, ``{}`` or ``[]``) is read by one match of :data:`_LINE`;
any other line (a multi-line scalar, a quoted key, a block scalar, ``!!binary``) by the
reader's general methods, which leave ``pos`` after what they read. Block structure follows
YAML 1.1 §9 as PyYAML applies it: a mapping's keys share one column; a sequence's dashes
share one column, at or past its key's (indentless sequences); ``- key:`` opens a mapping at
the key's column. Anything else raises :class:`Fallback`, and the caller reads the document
another way (the same result, or PyYAML's error).

Leaves out: which characters and scalars are in the subset (:mod:`llmcore.audit._vcr_yaml`).
"""

from __future__ import annotations

import re
import string
from typing import Any, Final, Protocol

import yaml

__all__ = ["Fallback", "read"]


class Fallback(Exception):
    """Internal: outside the subset; read the document another way."""


class _Reader(Protocol):
    """What :func:`read` needs of the scalar reader (:class:`llmcore.audit._vcr_yaml._Reader`)."""

    text: str
    pos: int
    plains: dict[str, Any]

    def next_line(self) -> tuple[int, int, int]: ...
    def line_at(self, offset: int) -> int: ...
    def plain(self, value: str) -> Any: ...
    def key(self, at: int, end: int) -> tuple[Any, int]: ...
    def closing(self, at: int) -> int: ...
    def starts_key(self, at: int, end: int) -> bool: ...
    def scalar(self, at: int, end: int, indent: int) -> Any: ...


_LINE: Final = re.compile(
    r"(?>(?:[ ]*\n)*( *)(-( +))?(?:([A-Za-z_][A-Za-z0-9_.\-/]*):(?: +|(?=\n)))?)"
    r"(?:(['\"{\[][^\n]*+)\n|([^\n]++)\n(?!\n|\1 (?(4)(?(2)\3 )))|\n)"
)
"""One line: indent, dash (and the spaces after it), plain key, then the rest of the line,
which :func:`_simple` reads as a value (:func:`_quoted`, or a plain scalar)
or refuses. The line's parts are matched once (atomic: no backtracking into them); a rest
that is not quoted and is followed by a blank line or a line indented past its node (the
key's column, or the dash's for an item: a plain scalar may go on there) is not matched: the
general path reads it. Matching the rest as any characters and testing it with string
methods is faster than a pattern of the value's shapes (the matcher steps through a negated
class of several characters one character at a time)."""

_PENDING: Final = object()
"""A key ending its line: its value is the node below, or null."""
_NO_KEY: Final = object()
_REFUSED: Final = object()
"""A line's rest :func:`_quoted` does not read: the general path's."""
_RESOLVED: Final = frozenset(yaml.resolver.Resolver.yaml_implicit_resolvers)
"""First characters of the plain scalars PyYAML may resolve to another type (the rest: text)."""
_WORDY: Final = frozenset("FNOTYfnoty")
"""Of those, the letters: PyYAML resolves a plain scalar starting with one only to a boolean
or null, and only when it is one of :data:`_WORDS` (``tests/audit/test_vcr_yaml.py`` checks
the resolvers)."""
_TEXT_KEY_START: Final = frozenset(string.ascii_letters + "_") - _RESOLVED
"""First characters of a plain key :data:`_LINE` matches that make it text, unresolved."""
_WORDS: Final = frozenset(
    "yes Yes YES no No NO true True TRUE false False FALSE on On ON off Off OFF".split()
    + ["null", "Null", "NULL"]
)


def _general(r: _Reader) -> tuple[int, int, bool, int, Any, Any]:
    """Read the next line with the reader's methods.

    Returns ``(start, column, dash, key column, key, value)``; ``column`` is -1 at the end.
    The key is :data:`_NO_KEY` for a scalar item; the value :data:`_PENDING` for a key ending
    its line.
    """
    start, column, end = r.next_line()
    if column < 0:
        return start, -1, False, -1, _NO_KEY, None
    text = r.text
    at = start + column
    dash = text.startswith("- ", at)
    indent = column
    if dash:
        at += 2
        while text[at] == " ":
            at += 1
        if at >= end or text.startswith("- ", at) or text[at] == "-" and at + 1 == end:
            raise Fallback  # an empty item, or a sequence in a sequence
        if not r.starts_key(at, end):
            return start, column, True, at - start, _NO_KEY, r.scalar(at, end, column)
        indent = at - start
    key, value_at = r.key(at, end)
    if value_at < end:
        return start, column, dash, indent, key, r.scalar(value_at, end, indent)
    r.pos = end + 1
    return start, column, dash, indent, key, _PENDING


def read(r: _Reader, *, skip_response_headers: bool = False) -> tuple[dict[Any, Any], list[int]]:
    """The document (a block mapping at column 0) and its ``interactions`` items' lines.

    With ``skip_response_headers``, an interaction's ``response.headers`` whose lines all have
    the shapes vcrpy writes for headers (:func:`_headers_end`) is left out of the document
    unread, and such ``request.headers`` are only their ``Content-Type`` entries (the one
    header the auditor reads); any other is read.

    Raises:
        Fallback: A line outside the subset, or a structure PyYAML reads otherwise or refuses.
    """
    text = r.text
    match = _LINE.match
    tree = _Tree(r, skip_response_headers)
    while True:
        got = match(text, r.pos)
        if got is not None and _simple(r, got, tree):
            continue
        line = _general(r)  # any other line, from the same offset
        if line[1] < 0:
            return tree.document()
        tree.add(*line)


def _simple(r: _Reader, got: re.Match[str], tree: _Tree) -> bool:
    """Place the line :data:`_LINE` matched in ``tree`` (:meth:`_Tree.add`), as :func:`_general`.

    The value is a quoted scalar without escapes or doubled quotes, ``{}`` or ``[]``
    (:func:`_quoted`), a plain scalar on one line (:data:`_PLAIN_FIRST`), or nothing after a key.
    The commonest line, ``key: value`` at the open mapping's column, goes straight into it.

    ``False`` when the general path must read it (nothing is placed, ``r.pos`` is unchanged).
    """
    spaces, dash_text, _, key_text, quoted, plain = got.groups()
    value: Any
    if plain is not None:  # a plain scalar on one line (YAML 1.1 §9.1.3), or the general path's
        first = plain[0]  # not an indicator, or `-` before a character other than a space
        if first not in _PLAIN_FIRST and (first != "-" or plain[1:2] in ("", " ")):
            return False
        if ": " in plain or " #" in plain or plain[-1] in ": ":  # no comment, no key, no end
            return False
        value = plain if first not in _RESOLVED else _resolved(r, plain)
    elif quoted is not None:
        value = _quoted(quoted)
        if value is _REFUSED:
            return False
    elif key_text is not None:
        value = _PENDING
    else:
        return False
    column = len(spaces)
    r.pos = got.end()
    if key_text is None:
        key_column = column + len(dash_text) if dash_text is not None else column
        tree.add(got.start(1), column, dash_text is not None, key_column, _NO_KEY, value)
        return True
    key = key_text if key_text[0] in _TEXT_KEY_START else _resolved(r, key_text)
    if dash_text is None and tree.pending is None and column == tree.indent and tree.mapping:
        if value is _PENDING:
            tree.hold(tree.top, key, column)
        else:
            tree.top[key] = value
    else:
        key_column = column + len(dash_text) if dash_text is not None else column
        tree.add(got.start(1), column, dash_text is not None, key_column, key, value)
    return True


_PLAIN_FIRST: Final = frozenset(string.ascii_letters + string.digits + "_/(.")
"""First characters of a one-line plain scalar :func:`_simple` reads (and ``-`` before
another character than a space); it holds no ``: `` or `` #`` and does not end in ``:`` or a
space. Any other plain scalar (an indicator first, a comment) is the general path's."""


def _quoted(text: str) -> Any:
    """The value of a line's rest starting with a quote or a bracket, or :data:`_REFUSED`.

    Read: a single-quoted scalar without a quote inside (no doubled quotes), a double-quoted
    one without a quote or backslash inside (no escapes), ``{}`` and ``[]``; spaces may
    follow. Anything else is the general path's.
    """
    value = text.rstrip(" ")
    first = value[0]
    if first == "'" or first == '"':
        if len(value) > 1 and value[-1] == first and value.count(first) == 2:
            if first == "'" or "\\" not in value:
                return value[1:-1]
        return _REFUSED
    if value == "{}":
        return {}
    if value == "[]":
        return []
    return _REFUSED


def _resolved(r: _Reader, plain: str) -> Any:
    """The value of the plain scalar ``plain`` (not empty), resolved as PyYAML resolves it."""
    first = plain[0]
    if first not in _RESOLVED or (first in _WORDY and plain not in _WORDS):
        return plain
    value = r.plains.get(plain, _NO_KEY)
    return r.plain(plain) if value is _NO_KEY else value


class _Tree:
    """The nodes open at the current line, innermost last, and the document they build."""

    def __init__(self, r: _Reader, skip_response_headers: bool) -> None:
        self.r = r
        self.skips = skip_response_headers
        self.sections: dict[str, Any] = {}  # the latest interaction's `request`, `response`
        self.section_next: str | None = None  # the pending key is one of those
        self.root: dict[Any, Any] = {}
        self.stack: list[tuple[Any, int, bool]] = []
        self.top: Any = self.root  # the innermost open node: a dict or a list
        self.indent = 0  # its column: a mapping's keys', a sequence's dashes'
        self.mapping = True
        self.pending: dict[Any, Any] | None = None  # the mapping of a key ending its line
        self.pending_key: Any = None
        self.pending_indent = 0
        self.lines: list[int] = []
        self.items: list[Any] | None = None  # the root's first `interactions` sequence
        self.seen: dict[str, dict[Any, Any]] = {}  # a sequence item's text: its mapping

    def document(self) -> tuple[dict[Any, Any], list[int]]:
        """The root mapping and the interactions' lines, once the text is read."""
        if self.pending is not None:
            self.pending[self.pending_key] = None
        if not self.root:
            raise Fallback
        return self.root, self.lines

    def add(
        self, start: int, column: int, dash: bool, key_column: int, key: Any, value: Any
    ) -> None:
        """Place one line (see :func:`_general`) in the tree."""
        if self.pending is not None:
            self.below(column, dash)
        if column != self.indent or dash == self.mapping:
            self.close(column, dash)
        top = self.top
        if self.mapping:
            if key is _NO_KEY:
                raise Fallback  # a scalar where a key belongs
            if value is _PENDING:
                self.hold(top, key, column)
            else:
                top[key] = value
            return
        if top is self.items:
            self.lines.append(self.r.line_at(start))
        if key is _NO_KEY:
            top.append(value)
            return
        item: dict[Any, Any] = {}
        if top is not self.items and self.recurs(start, column, item):
            return
        top.append(item)
        self.open(item, key_column, True)
        if value is _PENDING:
            self.hold(item, key, key_column)
        else:
            item[key] = value

    def recurs(self, start: int, column: int, item: dict[Any, Any]) -> bool:
        """Whether the sequence item opening at ``start`` repeats an earlier item's text.

        The item's dash is at ``column``; its text runs to the next line (not blank) at
        ``column`` or less. An item read without giving up never reads past that line (a
        scalar's further lines are indented past its node, or the reader gives up) and looks
        past it at that line's first character only, so equal texts are equal values: a
        conversation's requests resend its earlier turns and tools. A repeated item's value
        is the earlier item's mapping, added as it is, and its lines are left; else ``item``
        (built from the lines that follow) is recorded under its text.
        """
        r = self.r
        ends = _ITEM_ENDS.get(column)
        if ends is None:
            ends = _ITEM_ENDS[column] = re.compile(f"\\n {{0,{column}}}[^ \\n]")
        after = ends.search(r.text, r.pos - 1)
        end = len(r.text) if after is None else after.start() + 1
        if end <= r.pos:
            return False  # the item is its first line
        text = r.text[start:end]
        same = self.seen.get(text)
        if same is None:
            self.seen[text] = item
            return False
        self.top.append(same)
        r.pos = end
        return True

    def hold(self, mapping: dict[Any, Any], key: Any, indent: int) -> None:
        """A key ending its line: its value comes from the lines below (:meth:`below`)."""
        if key == "headers" and self.skips and self.skipped(mapping, indent):
            return
        self.section_next = None
        if key in _SECTIONS and self.stack and self.stack[-1][0] is self.items:
            self.section_next = key
        self.pending, self.pending_key, self.pending_indent = mapping, key, indent

    def skipped(self, mapping: dict[Any, Any], indent: int) -> bool:
        """Whether the ``headers`` below were skipped, their lines all of header shapes.

        An interaction's response headers are then left out of the document; its request
        headers are only their ``Content-Type`` entries.
        """
        response = mapping is self.sections.get("response")
        if not response and mapping is not self.sections.get("request"):
            return False
        r = self.r
        end = _headers_end(r.text, r.pos, indent)
        if end < 0:
            return False
        if response:
            mapping.pop("headers", None)
        else:
            kept = _content_types(r, r.pos, end)
            if kept is None:
                return False
            mapping["headers"] = kept
        r.pos = end
        return True

    def below(self, column: int, dash: bool) -> None:
        """The value of the pending key, from the line after it (YAML 1.1 §9.2, §9.3)."""
        assert self.pending is not None
        node: Any = None
        if dash and column >= self.pending_indent:
            node = []
            if self.items is None and self.pending is self.root:
                if self.pending_key == "interactions":
                    self.items = node
        elif not dash and column > self.pending_indent:
            node = {}
        self.pending[self.pending_key] = node
        self.pending = None
        if self.section_next is not None:
            self.sections[self.section_next] = node if isinstance(node, dict) else None
            self.section_next = None
        if node is not None:
            self.open(node, column, not dash)

    def open(self, node: Any, indent: int, mapping: bool) -> None:
        self.stack.append((self.top, self.indent, self.mapping))
        self.top, self.indent, self.mapping = node, indent, mapping

    def close(self, column: int, dash: bool) -> None:
        """Close the nodes a line at ``column`` is not part of."""
        while column != self.indent or dash == self.mapping:
            if column > self.indent or (column == self.indent and dash) or not self.stack:
                raise Fallback  # deeper than its node, or a dash at a mapping's keys' column
            self.top, self.indent, self.mapping = self.stack.pop()


_RUN_VALUE: Final = (
    r"(?:'[^'\n]*'|\"[^\"\\\n]*\"|(?:[A-Za-z0-9_/(.]|-(?=[^ \n]))"
    r"[^:#\n]*(?:(?::(?=[^ \n])|(?<! )#)[^:#\n]*)*)"
    r"(?<! )"
)
"""A scalar alone on the rest of its line: quoted without escapes or doubled quotes, or plain
without ``: `` or `` #``, no ``:`` or space ending it (a ``Content-Type`` header's value)."""
_RUN_ITEM: Final = re.compile(r" *- (" + _RUN_VALUE + r")\n")


def _run_scalar(r: _Reader, value: str) -> Any:
    """The value of a scalar :data:`_RUN_VALUE` matched."""
    first = value[0]
    if first == "'" or first == '"':
        return value[1:-1]
    return _resolved(r, value)


_SECTIONS: Final = frozenset({"request", "response"})
_ITEM_ENDS: dict[int, re.Pattern[str]] = {}
"""A line break before a line (not blank) at a column or less, by column."""
_NAME: Final = r"[A-Za-z_][A-Za-z0-9_.\-/]*"
_PLAIN_REST: Final = r"[^:#\n]*(?:(?::(?=[^ \n])|(?<! )#)[^:#\n]*)*"
"""The rest of a plain scalar's line: no ``: `` or `` #``, no ``:`` ending it (written as runs
of other characters between those checks: one step of the matcher per run, not per
character)."""
_HEADER_VALUE: Final = (
    r"(?:'[^'\n]*(?:(?:''|\n{deeper}(?=[^ \n]))[^'\n]*)*'|\"[^\"\\\n]*\""
    r"|(?:[A-Za-z_/(]|[0-9](?![xXbB])(?=[^\n]*?[a-dfgh-su-wyA-DF-SU-WY]))"
    + _PLAIN_REST
    + r"(?: *\n{deeper}(?=[^ \n#])"
    + _PLAIN_REST
    + r")*) *\n"
)
"""A header's value: a single-quoted scalar (its further lines indented past the header's
name), a double-quoted one on one line without escapes, or a plain one (its further lines
indented past the name) without ``: `` or `` #`` that starts with a letter, ``_``, ``/`` or
``(`` (text, a boolean or null), or with a digit not followed by ``x`` or ``b`` and holds a
letter other than ``e``, ``t``, ``x``, ``z`` (either case) — letters no YAML 1.1 integer
(``0x``, ``0b``), float or timestamp holds then (text): never a value PyYAML refuses. No
blank lines."""
_HEADER_BLOCKS: dict[int, re.Pattern[str]] = {}


def _headers_end(text: str, pos: int, indent: int) -> int:
    """Where the header mapping below a key at column ``indent`` ends, or -1 if it must be read.

    The lines from ``pos`` on must be, at one column past ``indent``, ``name: value`` or
    ``name:`` followed by ``- value`` lines at that same column (an indentless sequence), with
    the values of :data:`_HEADER_VALUE`, and be followed by the end of the text or by a line
    (not blank) at column ``indent`` or less. PyYAML reads such lines into a mapping of names
    to texts, booleans, nulls and lists of them, without error: leaving them unread changes
    nothing else in the document or in what PyYAML would report.
    """
    column = _indent_at(text, pos)
    if column <= indent:
        return -1
    pattern = _HEADER_BLOCKS.get(column)
    if pattern is None:
        pad = " " * column
        value = _HEADER_VALUE.replace("{deeper}", f" {{{column + 1},}}")
        pattern = _HEADER_BLOCKS[column] = re.compile(
            f"(?:{pad}{_NAME}:(?: +{value}|\n(?:{pad}- {value})+))+"
        )
    got = pattern.match(text, pos)
    if got is None:
        return -1
    end = got.end()
    if end < len(text):
        after = _indent_at(text, end)
        if after > indent or text[end + after] == "\n":
            return -1
    return end


def _indent_at(text: str, pos: int) -> int:
    """The number of spaces at ``pos``."""
    at = pos
    while at < len(text) and text[at] == " ":
        at += 1
    return at - pos


_CONTENT_TYPES: dict[int, tuple[re.Pattern[str], re.Pattern[str]]] = {}


def _content_types(r: _Reader, pos: int, end: int) -> dict[Any, Any] | None:
    """The ``Content-Type`` entries (any case) of the header lines from ``pos`` to ``end``.

    The lines are those :func:`_headers_end` accepted. ``None`` when an entry's value is not
    one-line scalars (:data:`_RUN_VALUE`): the caller reads the headers then.
    """
    text = r.text
    column = _indent_at(text, pos)
    patterns = _CONTENT_TYPES.get(column)
    if patterns is None:  # each line found by the line break before it (a fast search)
        pad = " " * column
        name = f"\\n{pad}((?i:content-type)):"
        item = f"{pad}- {_RUN_VALUE}"
        entry = re.compile(
            f"{name}(?: ({_RUN_VALUE})|\\n((?:{item}\\n)*{item}))(?=\\n)(?!\\n{pad} |\\n{pad}- )"
        )
        patterns = _CONTENT_TYPES[column] = (re.compile(name), entry)
    names, entry = patterns
    found = entry.findall(text, pos - 1, end)  # the line break ending the `headers:` line
    if len(found) != len(names.findall(text, pos - 1, end)):
        return None
    out: dict[Any, Any] = {}
    for key, value, items in found:
        if value:
            out[key] = _run_scalar(r, value)
        else:
            out[key] = [_run_scalar(r, one) for one in _RUN_ITEM.findall(items + "\n")]
    return out
