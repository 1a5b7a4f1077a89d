"""A vcrpy / pytest-recording body matcher under P4's normalization (SPEC V3).

Two request bodies match when their exact texts are equal once every ``cache_control`` and
``prompt_cache_breakpoint`` member is deleted (P4, normalization 47): key order, whitespace,
escapes and every other byte count. On a mismatch the matcher raises :class:`AssertionError`
naming the first differing byte in both bodies, the JSON path holding it and a snippet of each
side. Register it with vcrpy::

    vcr.register_matcher("p4_body", body_matcher)
    vcr.match_on = ("method", "uri", "p4_body")

or in pytest-recording's ``vcr_config`` fixture (``{"match_on": [...]}`` plus
``vcr.register_matcher`` in a ``pytest_recording_configure`` hook).

Leaves out: auditing sequences of bodies (:func:`llmcore.audit.audit_bodies`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from llmcore.audit._scan import CACHE_KEYS, common_prefix, find_path, raw_offset, strip_spans

__all__ = ["BodyDifference", "body_matcher", "first_difference", "normalize_body"]

_SNIP: Final = 40


@dataclass(frozen=True, slots=True, kw_only=True)
class BodyDifference:
    """The first difference between two request bodies under P4's normalization."""

    offset_a: int
    """Byte offset of the first differing byte in the first body."""
    offset_b: int
    """Byte offset of the first differing byte in the second body."""
    path: str
    """JSON path of the value holding it in the first body (``messages[3].content[0].input``);
    ``$`` for the top level, empty when a body is not JSON."""
    snippet_a: str
    """Text of the first body around the difference."""
    snippet_b: str
    """Text of the second body around the difference."""

    def __str__(self) -> str:
        return (
            f"request bodies differ under P4 normalization at {self.path or 'raw bytes'}: "
            f"byte {self.offset_a} of the sent body {self.snippet_a} vs byte {self.offset_b} "
            f"of the recorded body {self.snippet_b}"
        )


def _as_bytes(body: Any) -> bytes:
    if body is None:
        return b""
    if isinstance(body, str):  # a lone surrogate keeps its code unit; compared byte for byte
        return body.encode("utf-8", "surrogatepass")
    if isinstance(body, bytes | bytearray | memoryview):
        return bytes(body)
    read = getattr(body, "read", None)
    if callable(read):
        return _as_bytes(read())
    raise TypeError(f"cannot read a request body of type {type(body).__name__}")


def _normalized(text: str) -> tuple[str, tuple[tuple[int, int], ...], int] | None:
    """Return (normalized text, deletions, start of the value), or None when not JSON."""
    start = len(text) - len(text.lstrip(" \t\r\n"))
    try:
        deletions = strip_spans(text, start, keys=CACHE_KEYS)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the walk can go
        return None
    parts, at = [], 0
    for s, e in deletions:
        parts.append(text[at:s])
        at = e
    parts.append(text[at:])
    return "".join(parts), deletions, start


def _snippet(text: str, at: int) -> str:
    return repr(text[max(0, at - 10) : at + _SNIP])


def _byte_at(text: str, at: int) -> int:
    return len(text[:at].encode("utf-8", "surrogatepass"))


def normalize_body(body: bytes) -> bytes:
    """Return ``body`` with every ``cache_control`` / ``prompt_cache_breakpoint`` member deleted.

    A body that is not UTF-8 JSON, or nests too deeply to walk (Python's recursion limit), is
    returned unchanged.
    """
    try:
        got = _normalized(body.decode("utf-8"))
    except UnicodeDecodeError:
        return body
    return body if got is None else got[0].encode("utf-8")


def first_difference(a: bytes, b: bytes) -> BodyDifference | None:
    """Return the first difference between bodies ``a`` and ``b`` under P4, or ``None``.

    Bodies that are not UTF-8 JSON, or nest too deeply to walk (Python's recursion limit), are
    compared byte for byte.
    """
    try:
        ta, tb = a.decode("utf-8"), b.decode("utf-8")
    except UnicodeDecodeError:
        ta = tb = ""
    na, nb = (_normalized(ta), _normalized(tb)) if ta and tb else (None, None)
    if na is None or nb is None:
        if a == b:
            return None
        k = common_prefix(a.decode("latin-1"), b.decode("latin-1"))
        return BodyDifference(
            offset_a=k,
            offset_b=k,
            path="",
            snippet_a=repr(a[max(0, k - 10) : k + _SNIP]),
            snippet_b=repr(b[max(0, k - 10) : k + _SNIP]),
        )
    if na[0] == nb[0]:
        return None
    k = common_prefix(na[0], nb[0])
    at_a, at_b = raw_offset(k, na[1]), raw_offset(k, nb[1])
    return BodyDifference(
        offset_a=_byte_at(ta, at_a),
        offset_b=_byte_at(tb, at_b),
        path=find_path(ta, na[2], at_a, "") or "$",
        snippet_a=_snippet(ta, at_a),
        snippet_b=_snippet(tb, at_b),
    )


def body_matcher(r1: Any, r2: Any) -> None:
    """Match two vcrpy requests: pass when the two requests' bodies match under P4's normalization.

    Args:
        r1: The request being sent (anything with a ``body``: bytes, str or ``None``).
        r2: The recorded request.

    Raises:
        AssertionError: The bodies differ; the message names the first differing byte of
            each, its JSON path and both snippets.
    """
    diff = first_difference(_as_bytes(r1.body), _as_bytes(r2.body))
    if diff is not None:
        raise AssertionError(str(diff))
