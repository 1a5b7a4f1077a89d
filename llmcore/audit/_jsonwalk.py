"""The JSON walk under the scanner and the span finders: whitespace, leaf values, members.

Every function takes the decoded text and a character offset and returns the offset after what
it read. Leaf values (strings, numbers, literals, and whole objects or arrays where a caller
needs no spans inside them) are read by the standard library's C scanner
(:meth:`json.JSONDecoder.scan_once`), which refuses ``NaN`` and ``Infinity`` (not JSON).

Leaves out: splitting a body into items (:mod:`llmcore.audit._scan`), deletion spans and paths
(:mod:`llmcore.audit._spans`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from json import JSONDecodeError
from json.decoder import JSONDecoder, scanstring  # type: ignore[attr-defined]
from typing import Any, Final

from llmcore import jsonbytes

__all__ = ["Malformed", "after_value", "end_of", "expect", "leaf", "member_key", "skip_ws"]

_ws: Final[Callable[[str, int], re.Match[str] | None]] = re.compile(r"[ \t\n\r]*").match


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_DECODER: Final[Any] = JSONDecoder(parse_constant=_refuse_constant)
_scan_once: Final[Callable[[str, int], tuple[Any, int]]] = _DECODER.scan_once


def skip_ws(s: str, i: int) -> int:
    """The offset of the first non-whitespace character at or after ``i``."""
    if i < len(s) and s[i] not in " \t\n\r":
        return i  # compact JSON (orjson's, most recorded bodies): no whitespace to skip
    m = _ws(s, i)
    assert m is not None  # the pattern matches the empty string
    return m.end()


class Malformed(Exception):
    """The text is not valid JSON at ``pos`` (a character offset).

    ``json_ok`` marks valid JSON that Python cannot read (an integer over 4,300 digits).
    """

    def __init__(self, pos: int, what: str, *, json_ok: bool = False) -> None:
        self.pos = pos
        self.what = what
        self.json_ok = json_ok
        super().__init__(what)


def expect(s: str, i: int, ch: str) -> None:
    """Raise :class:`Malformed` unless ``s[i]`` is ``ch``."""
    if s[i : i + 1] != ch:
        raise Malformed(i, f"expected {ch!r}")


def leaf(s: str, i: int) -> tuple[Any, int]:
    """The JSON value at ``i`` and its end.

    Raises:
        Malformed: Not a JSON value there (``json_ok`` for an integer Python refuses).
    """
    try:
        return _scan_once(s, i)
    except StopIteration as exc:
        raise Malformed(i, "expected a JSON value") from exc
    except (JSONDecodeError, ValueError) as exc:
        # int() refuses more than 4,300 digits; say so rather than quote its advice.
        long = jsonbytes.long_integer(exc)
        if long is not None:
            raise Malformed(i, long, json_ok=True) from exc
        raise Malformed(getattr(exc, "pos", i), str(exc).split(":")[0]) from exc


def member_key(s: str, i: int) -> tuple[str, int]:
    """Scan an object key at ``i`` and the colon after it; return (key, value start)."""
    expect(s, i, '"')
    try:
        key, j = scanstring(s, i + 1, True)
    except (JSONDecodeError, ValueError) as exc:
        raise Malformed(i, "bad string") from exc
    j = skip_ws(s, j)
    expect(s, j, ":")
    return key, skip_ws(s, j + 1)


def after_value(s: str, j: int, close: str) -> tuple[bool, int]:
    """After a value ending at ``j``: return (more members follow, next position)."""
    j = skip_ws(s, j)
    c = s[j : j + 1]
    if c == ",":
        return True, skip_ws(s, j + 1)
    if c == close:
        return False, j + 1
    raise Malformed(j, f"expected ',' or {close!r}")


def end_of(s: str, i: int) -> int:
    """The end of the JSON value at ``i``."""
    return leaf(s, i)[1]
