"""Recorded field values for the auditor's readers: what a value is, text as UTF-8, times.

Shared by the cassette (:mod:`llmcore.audit._cassette`) and JSONL envelope
(:mod:`llmcore.audit._envelope`) readers of :mod:`llmcore.audit.inputs`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final

from llmcore import jsonbytes
from llmcore.audit.report import AuditInputError


def _shown(value: Any) -> str:
    """``repr(value)``, cut after 20 characters when longer than 40; a long integer by size.

    An integer over 128 bits is shown as ``an integer of N digits``
    (:func:`~llmcore.jsonbytes.integer_size`): YAML hex, octal and binary integers have no
    length limit, and ``repr()`` refuses one of over 4,300 digits with a ``ValueError``.
    """
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return jsonbytes.integer_size(value)
    text = repr(value)
    if len(text) <= 40:
        return text
    return f"{text[:20]}… ({len(text):,} characters)"


def _kind(value: Any) -> str:
    """``an integer of 3 digits``, ``a list``, ``a float``…: what a value is, never its text."""
    if isinstance(value, int) and not isinstance(value, bool):
        return jsonbytes.integer_size(value)
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _utf8(text: str, where: str) -> bytes:
    r"""Encode a recorded body; a lone surrogate (from a ``\ud800`` escape) is refused."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise AuditInputError(
            f"lone surrogate \\u{ord(text[exc.start]):04x} at character {exc.start} is not "
            "valid Unicode, so the body cannot have been sent as UTF-8",
            location=where,
        ) from None


_EARLIEST: Final = datetime.min.replace(tzinfo=UTC).timestamp()


_LATEST: Final = datetime.max.replace(tzinfo=UTC, microsecond=0).timestamp()
"""Whole seconds: the float of ``datetime.max`` itself rounds up to the next second."""


def _timestamp(value: Any, where: str) -> float | None:
    """``recorded_at`` as seconds since the epoch: a number, ISO 8601 text or a YAML timestamp.

    Raises:
        AuditInputError: Not a time, or a number that is not finite or outside the years 1 to
            9999 (a time Python's ``datetime`` cannot hold; too large for a float included).
    """
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        # Compared before any float(): a 400-digit integer would overflow it; NaN fails both.
        if _EARLIEST <= value <= _LATEST:
            return float(value)
        raise AuditInputError(
            f"recorded_at {_shown(value)} is not a time in the years 1 to 9999 "
            "(seconds since 1970)",
            location=where,
        )
    when = value
    if isinstance(value, str):
        try:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise AuditInputError(
                f"recorded_at {_shown(value)} is not an ISO 8601 time", location=where
            ) from None
    if not isinstance(when, datetime):
        raise AuditInputError(f"recorded_at {_shown(value)} is not a time", location=where)
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()
