"""The line loop's one-line step reads exactly the lines the pattern of value shapes read.

:data:`llmcore.audit._vcr_lines._LINE` matches a line's rest as any characters and
:func:`~llmcore.audit._vcr_lines._simple` tells the value's shape with string methods. The
pattern it replaced (below, as first written: one alternative per value shape) is the oracle:
for any line, and any line after it, both take the line or both leave it to the general path,
and a line taken is placed with the same column, dash, key and value and leaves the reader at
the same offset. The property tests of ``test_vcr_yaml.py`` compare whole documents with PyYAML.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore.audit import _vcr_lines, _vcr_yaml
from tests.examples import examples

SHAPES = re.compile(
    r"(?:[ ]*\n)*( *)(-( +))?"
    r"(?:([A-Za-z_][A-Za-z0-9_.\-/]*):(?: +|(?=\n)))?"
    r"(?:'([^'\n]*)' *\n|\"([^\"\\\n]*)\" *\n|(\{\}|\[\]) *\n"
    r"|((?:[A-Za-z0-9_/(.]|-(?=[^ \n]))[^:#\n]*(?:(?::(?=[^ \n])|(?<! )#)[^:#\n]*)*(?<! ))\n"
    r"(?!\n|\1 (?(4)(?(2)\3 )))"
    r"|\n)"
)
"""The line pattern as first written: a value is single-quoted, double-quoted, ``{}``/``[]``
or plain (no ``: `` or `` #``, no ``:`` or space ending it, not followed by a blank line or a
line indented past its node)."""


class _Placed:
    """A tree that records what :func:`_vcr_lines._simple` places (never its direct path)."""

    pending = None
    indent = -1
    mapping = False

    def __init__(self) -> None:
        self.lines: list[tuple[Any, ...]] = []

    def add(self, *line: Any) -> None:
        self.lines.append(line)


def _read(step: Any, text: str) -> tuple[Any, ...] | None:
    """``step(text)``, or ``("Fallback",)`` when it hands the document to PyYAML (a plain
    scalar outside the subset, such as ``0x1``)."""
    try:
        return step(text)  # type: ignore[no-any-return]
    except _vcr_lines.Fallback:
        return ("Fallback",)


def _by_shapes(text: str) -> tuple[Any, ...] | None:
    """What the pattern of shapes reads at offset 0: ``(start, column, dash, key column, key,
    value, end)``, or ``None`` for the general path."""
    got = SHAPES.match(text)
    if got is None:
        return None
    spaces, dash, _, key_text, single, double, empty, plain = got.groups()
    r = _vcr_yaml._Reader(text)
    value: Any
    if single is not None:
        value = single
    elif double is not None:
        value = double
    elif plain is not None:
        value = _vcr_lines._resolved(r, plain)
    elif empty is not None:
        value = {} if empty == "{}" else []
    elif key_text is not None:
        value = _vcr_lines._PENDING
    else:
        return None
    column = len(spaces)
    key_column = column + len(dash) if dash is not None else column
    key: Any = _vcr_lines._NO_KEY
    if key_text is not None:
        key = _vcr_lines._resolved(r, key_text)
    return (got.start(1), column, dash is not None, key_column, key, value, got.end())


def _by_rest(text: str) -> tuple[Any, ...] | None:
    """What :data:`_vcr_lines._LINE` and :func:`_vcr_lines._simple` read at offset 0."""
    got = _vcr_lines._LINE.match(text)
    if got is None:
        return None
    r = _vcr_yaml._Reader(text)
    tree = _Placed()
    if not _vcr_lines._simple(r, got, tree):  # type: ignore[arg-type]
        assert (r.pos, tree.lines) == (0, [])  # nothing placed, nothing read
        return None
    (line,) = tree.lines
    return (*line, r.pos)


_PIECES = ["a", "b1", "x.y", "-", "- ", " ", "  ", ":", ": ", "#", " #", "'", "''", '"', "\\"]
_PIECES += ["{}", "[]", "{", "]", "!", "&", "*", "|", ">", "%", "@", "`", "(", "/", ".", "\t"]
_PIECES += ["1", "0x1", "1.5", "~", "null", "yes", "No", "é", "?", ",", "="]
_VALUES = st.lists(st.sampled_from(_PIECES), max_size=6).map("".join)
_KEYS = st.sampled_from(["", "a", "key", "Content_Type", "x.y-z/w", "1", "yes", "_"])


@pytest.mark.full_count
@settings(max_examples=examples(full=20_000, sample=800), deadline=None)
@given(
    st.sampled_from(["", "\n", "  \n"]),
    st.integers(0, 4),
    st.sampled_from(["", "- ", "-  "]),
    _KEYS,
    st.sampled_from([" ", "  ", ""]),
    _VALUES,
    st.integers(0, 8),
    st.sampled_from(["", "\n", "x", "- x", "k: v"]),
)
def test_the_rest_tested_by_string_methods_reads_what_the_shapes_read(
    blank: str,
    indent: int,
    dash: str,
    key: str,
    gap: str,
    value: str,
    next_indent: int,
    next_line: str,
) -> None:
    head = f"{key}:{gap}" if key else ""
    text = f"{blank}{' ' * indent}{dash}{head}{value}\n{' ' * next_indent}{next_line}\n"
    assert _read(_by_rest, text) == _read(_by_shapes, text), repr(text)


@pytest.mark.parametrize(
    "line",
    [
        "key: value\n",
        "key: 'it''s'\n",
        "key: 'a' 'b'\n",
        'key: "a\\n"\n',
        'key: "plain"  \n',
        "key: {}  \n",
        "key: {a: 1}\n",
        "key: a: b\n",
        "key: a #c\n",
        "key: a#c\n",
        "key: a:\n",
        "key: a:b\n",
        "key: trailing \n",
        "- -1\n",
        "- - x\n",
        "-\n",
        "key:\n",
        "key:   \n",
        "key:value\n",
        "'quoted': key\n",
        "key: plain\n  more\n",
        "key: plain\n\n",
        "- key: plain\n    more\n",
        "- key: plain\n  other: v\n",
        "key: 'quoted'\n  more\n",
        "key: !tag\n",
        "key: &anchor v\n",
        "key: 12\n",
        "\n\n  key: v\n",
        "no newline",
    ],
)
def test_documented_edges_read_as_the_shapes_read(line: str) -> None:
    assert _read(_by_rest, line) == _read(_by_shapes, line)
