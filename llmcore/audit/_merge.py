"""Merging partitions' rows into the report one process would give (``--jobs``, the engine).

Rows arrive from every partition (:mod:`llmcore.audit._partition`) and are taken in input
order. Each gets the input's request number (the partitions' own, in its texts too, are
replaced), the conversation number in order of first appearance, and its theoretical maximum
from one :class:`~llmcore.audit._maximum.Maxima` fed in input order, as the in-process
auditor feeds it. Skips come in the in-process order (every file's reading skips in file
order, then the requests the auditor passed over), ``--provider`` warnings once per file
where first met, and errors as one process raises them: the first file that cannot be read
(in file order) before the first request refused.

Leaves out: what a partition computes (:mod:`llmcore.audit._partition`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, Final

from llmcore.audit._maximum import Maxima
from llmcore.audit._partition import FileNote, TaskResult
from llmcore.audit._rows import (
    FIELDS,
    USAGE_AT,
    Position,
    Row,
    Stream,
    inline_rows,
    record_of,
    rows_of,
    usage_of,
)
from llmcore.audit._visible import no_breakpoints, visible_label
from llmcore.audit.report import AuditReport, RequestRecord

__all__ = ["Again", "Merge", "merge_results"]

_AT: Final = {name: n for n, name in enumerate(FIELDS)}
_INDEX, _COMPARED, _CONVERSATION = _AT["index"], _AT["compared_with"], _AT["conversation"]
_SOURCE, _GROUPING, _DETAIL = _AT["source"], _AT["grouping"], _AT["detail"]
_NOTES = _AT["notes"]
_MOST: Final = tuple(
    _AT[name]
    for name in ("max_cacheable_tokens", "ideal_cacheable_tokens", "breakpoints", "not_visible")
)


class Again(Exception):  # noqa: N818 - a signal to the runner, never seen by a caller
    """A file found in a folder failed after part of it was audited: run again without it."""

    def __init__(self, skips: dict[int, str]) -> None:
        super().__init__("run again")
        self.skips = skips
        """File number → the skip line of each such file."""


class Merge:
    """Takes rows in input order and builds the report (see the module)."""

    def __init__(self, group: str | None) -> None:
        self._group = group
        self._maxima = Maxima()
        self._records: list[RequestRecord] = []
        self._numbers: dict[int, list[int]] = {}
        self._conversations: dict[tuple[int, int], int] = {}
        self._marks: dict[int, re.Pattern[str]] = {}
        self._passed_over: list[str] = []
        self._warnings: dict[str, tuple[Position, str]] = {}

    def add_all(self, rows: Stream) -> None:
        """Add rows in input order, each with its task's number and :data:`MARK`."""
        for number, mark, row in rows:
            self.add(number, mark, row)

    def add(self, task: int, mark: str, row: Row) -> None:
        """Add the next row in input order (from task number ``task`` whose mark is ``mark``)."""
        record = row.record
        if record is None:
            assert row.skipped is not None
            self._passed_over.append(row.skipped)
            return
        numbers = self._numbers.setdefault(task, [])
        assert int(record[_INDEX]) == len(numbers), "a task's rows arrive in its order"
        numbers.append(len(self._records))
        pattern = self._marks.get(task)
        if pattern is None:
            pattern = self._marks[task] = re.compile(re.escape(mark) + r"(\d+)\x00")
        self._records.append(self._finish(task, numbers, pattern, row, record))

    def warnings(self, results: Iterable[TaskResult]) -> None:
        """Take every task's ``--provider`` warnings (the first one per file counts)."""
        for result in results:
            for position, key, text in result.warnings:
                known = self._warnings.get(key)
                if known is None or position < known[0]:
                    self._warnings[key] = (position, text)

    def _finish(
        self,
        task: int,
        numbers: list[int],
        mark: re.Pattern[str],
        row: Row,
        fields: tuple[Any, ...],
    ) -> RequestRecord:
        """The record with the input's numbers and its maximum (built once, from the fields)."""

        def text(value: str | None) -> str | None:
            if value is None or "\x00" not in value:
                return value
            return mark.sub(lambda m: str(numbers[int(m.group(1))]), value)

        values = list(fields)
        values[_INDEX] = numbers[-1]
        compared = values[_COMPARED]
        values[_COMPARED] = None if compared is None else numbers[int(compared)]
        number = -1
        if values[_CONVERSATION] >= 0:
            key = (task, values[_CONVERSATION])
            number = self._conversations.setdefault(key, len(self._conversations))
        values[_CONVERSATION] = number
        values[_SOURCE] = text(values[_SOURCE]) or ""
        values[_GROUPING] = text(values[_GROUPING]) or ""
        values[_DETAIL] = text(values[_DETAIL])
        values[_NOTES] = tuple(text(n) or "" for n in values[_NOTES])
        values[USAGE_AT] = usage = usage_of(values[USAGE_AT])
        if row.entry is not None:
            most = self._maxima.add(row.entry)
            values[_MOST[0]], values[_MOST[1]] = most.maximum, most.ideal
            values[_MOST[2]] = most.breakpoints if row.entry.breakpoints else None
            values[_MOST[3]] = visible_label(row.server, usage, most.maximum, row.first)
        return record_of(values)

    def report(self, read_skips: Sequence[str]) -> AuditReport:
        """The report over every row added, after the reading skips ``read_skips``."""
        ordered = sorted(self._warnings.values(), key=lambda found: found[0])
        return AuditReport(
            requests=tuple(self._records),
            conversations=len(self._conversations),
            skipped=(*read_skips, *self._passed_over),
            warnings=tuple(text for _pos, text in ordered),
            group=self._group,
            diagnoses=no_breakpoints(self._records),
        )


def _first_error(
    notes: list[FileNote], planned: tuple[int, BaseException] | None
) -> BaseException | None:
    """The error reading gives in one process: the first file's, in file and line order."""
    found = [(n.ordinal, n.line, n.error) for n in notes if n.error is not None]
    if planned is not None:
        found.append((planned[0], -1, planned[1]))
    if not found:
        return None
    return min(found, key=lambda one: (one[0], one[1]))[2]


def merge_results(
    results: list[TaskResult],
    group: str | None,
    planned: tuple[int, BaseException] | None,
    merged: Merge | None = None,
) -> AuditReport:
    """The report of a run from its tasks' results (see the module).

    Args:
        results: Every task's result.
        group: The run's ``--group``.
        planned: A path error met while listing the inputs (file number, error), or ``None``.
        merged: The rows already merged while the tasks ran (spilled), or ``None`` to merge
            the rows the results hold.

    Raises:
        AuditInputError: The in-process run's error: a file that cannot be read, else the
            first request refused (any other error a worker raised, likewise).
        Again: A file found in a folder must be passed over whole (run again).
    """
    notes = sorted((n for r in results for n in r.notes), key=lambda n: n.ordinal)
    error = _first_error(notes, planned)
    if error is not None:
        raise error
    partial = {n.ordinal: n.skipped[-1] for n in notes if n.partial}
    if partial:
        raise Again(partial)
    refused = [r.error for r in results if r.error is not None]
    if refused:
        raise min(refused, key=lambda one: one[0])[1]
    if merged is None:
        merged = Merge(group)
        merged.add_all(rows_of([inline_rows(r.number, r.mark, r.rows) for r in results]))
    merged.warnings(results)
    return merged.report([line for n in notes for line in n.skipped])
