"""Exemptions: intended cache boundaries, each with a required reason (SPEC V1).

A project marks the breaks it means (a test that changes the system prompt on purpose) in a
file that ``llmcore audit --exemptions FILE`` reads, YAML or JSON, a list of entries::

    - file: tests/cassettes/test_agent/test_system_prompt_change.yaml   # a path or a glob
      request: 3          # optional: only this request of the file
      reason: the test swaps the system prompt on purpose

``file`` matches a record's file — the path as the audit was given it, so relative to the current
folder when the command line named a relative path — by glob (:func:`fnmatch.fnmatchcase` on the
whole path, or :meth:`pathlib.PurePath.match` from the right: ``test_x.yaml`` matches
``cassettes/test_x.yaml``). ``request`` is the number the record's source shows: a cassette's
interaction index (``interactions[3]`` → 3) or a JSONL line number (``run.jsonl:3`` → 3); without it
every request of the file is covered. ``reason`` is a non-empty string: an exemption without one is
an error, as is any other key.

An exempted break stays a break in the report, with the reason beside it; it no longer fails
the run (:attr:`~llmcore.audit.report.RequestRecord.failing`).

Leaves out: the pytest marker (the plugin builds :class:`Exemption` values itself).
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any, Final

import yaml

from llmcore.audit.report import AuditInputError, AuditReport, RequestRecord, Verdict

__all__ = [
    "ENTRY_KEYS",
    "Exemption",
    "ExemptionError",
    "apply_exemptions",
    "exemption_for",
    "load_exemptions",
    "parse_exemptions",
    "unmatched_exemptions",
]

ENTRY_KEYS: Final = frozenset({"file", "request", "reason"})
"""The keys an exemption entry may have (``file`` and ``reason`` are required)."""


class ExemptionError(AuditInputError):
    """An exemptions file is malformed; ``location`` names the file and the entry index."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Exemption:
    """One intended boundary."""

    file: str
    """A path or glob matched against a record's file."""
    reason: str
    """Why the break is intended (never empty)."""
    request: int | None = None
    """The request's number within the file as its source shows it; ``None``: all of them."""

    def covers(self, record: RequestRecord) -> bool:
        """Whether this exemption applies to ``record`` (any verdict)."""
        if record.file is None:
            return False
        if self.request is not None and record.position != self.request:
            return False
        name = Path(record.file).as_posix()
        return fnmatch.fnmatchcase(name, self.file) or PurePosixPath(name).match(self.file)


def _entry(value: Any, where: str) -> Exemption:
    if not isinstance(value, dict):
        raise ExemptionError("an exemption is a mapping with 'file' and 'reason'", location=where)
    unknown = sorted(str(k) for k in value if k not in ENTRY_KEYS)
    if unknown:
        raise ExemptionError(
            f"unknown key{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} "
            f"(allowed: file, request, reason)",
            location=where,
        )
    file, reason, request = value.get("file"), value.get("reason"), value.get("request")
    if not isinstance(file, str) or not file.strip():
        raise ExemptionError("'file' must be a non-empty path or glob", location=where)
    if not isinstance(reason, str) or not reason.strip():
        raise ExemptionError(
            "'reason' is required: say why this boundary is intended", location=where
        )
    for key, text in (("file", file), ("reason", reason)):
        if not _encodes(text):
            raise ExemptionError(
                f"{key!r} holds a lone surrogate, which has no UTF-8 form",
                location=f"{where}.{key}",
            )
    if request is not None and (
        isinstance(request, bool) or not isinstance(request, int) or request < 0
    ):
        raise ExemptionError("'request' must be a whole number of 0 or more", location=where)
    return Exemption(file=file, reason=reason.strip(), request=request)


def _encodes(text: str) -> bool:
    r"""Whether ``text`` has a UTF-8 form (a JSON ``\ud800`` escape gives one that has not)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def parse_exemptions(entries: Any, source: str) -> tuple[Exemption, ...]:
    """Check parsed exemption entries (a list of mappings).

    Args:
        entries: The file's parsed value.
        source: The file name, for errors.

    Raises:
        ExemptionError: Not a list, or an entry is malformed (``source: entries[3]``).
    """
    if not isinstance(entries, list):
        raise ExemptionError("an exemptions file holds a list of entries", location=source)
    return tuple(_entry(value, f"{source}: entries[{i}]") for i, value in enumerate(entries))


def load_exemptions(path: Path) -> tuple[Exemption, ...]:
    """Read an exemptions file: JSON when it ends in ``.json``, else YAML (safe loader).

    Raises:
        ExemptionError: The file cannot be read, is not valid YAML/JSON, or an entry is
            malformed (names the file and the entry index).
    """
    source = str(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ExemptionError(f"cannot read: {exc.strerror}", location=source) from None
    try:
        if path.suffix.lower() == ".json":
            value = json.loads(data)
        else:
            value = yaml.safe_load(data)
    except (ValueError, yaml.YAMLError, RecursionError) as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        kind = "JSON" if path.suffix.lower() == ".json" else "YAML"
        raise ExemptionError(f"not valid {kind}", location=where) from None
    return parse_exemptions(value, source)


def exemption_for(record: RequestRecord, exemptions: Iterable[Exemption]) -> Exemption | None:
    """Return the first exemption that covers ``record`` (``None`` when none does)."""
    return next((e for e in exemptions if e.covers(record)), None)


def apply_exemptions(report: AuditReport, exemptions: Sequence[Exemption]) -> AuditReport:
    """Mark every break an exemption covers with its reason; other records are unchanged."""
    if not exemptions:
        return report
    records = []
    for record in report.requests:
        found = exemption_for(record, exemptions) if record.verdict is Verdict.BREAK else None
        records.append(replace(record, exemption=found.reason) if found else record)
    return replace(report, requests=tuple(records))


def unmatched_exemptions(report: AuditReport, exemptions: Sequence[Exemption]) -> list[int]:
    """Return the indexes of the exemptions that cover no request of ``report``.

    Such an entry names a file the audit did not read (a typo, or a path relative to another
    folder); ``llmcore audit`` warns about each one.
    """
    return [
        i
        for i, exemption in enumerate(exemptions)
        if not any(exemption.covers(record) for record in report.requests)
    ]
