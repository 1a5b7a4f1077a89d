"""One partition of an audit, run where the work is: a worker process or a cluster's worker.

A partition is a set of files and JSONL lines closed under the auditor's grouping scopes (a
cassette file, a conversation key, the whole input for requests without one): no request of
it can join a conversation, or chain to a response, outside it. :func:`run_task` audits one
with the same :class:`~llmcore.audit.Auditor` the in-process path runs, minus what spans
every partition — the theoretical maximum (one trie per provider and model, across
conversations), the request and conversation numbers, the input order of skips and
warnings — which it hands, per request, to the merge (:mod:`llmcore.audit._merge`) as a
:class:`~llmcore.audit._rows.Row` (sent as :mod:`llmcore.audit._rows` says).

Request numbers inside a partition's texts (``joined: … with request 7``) are the partition's
own, written between two marks the merge replaces with the input's numbers: the marks hold
the NUL character and a random 128-bit token per process, which no recorded text holds.

Leaves out: choosing the partitions and running them (:mod:`llmcore.audit.jobs`,
:mod:`llmcore.audit.engine`), the rows' wire form and spill files (:mod:`llmcore.audit._rows`),
merging (:mod:`llmcore.audit._merge`).
"""

from __future__ import annotations

import gc
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from llmcore.audit._auditor import Auditor
from llmcore.audit._collector import THRESHOLD
from llmcore.audit._compare import Prepared
from llmcore.audit._envelope import jsonl_line
from llmcore.audit._maximum import Entry, Maximum, entry_of
from llmcore.audit._rows import Position, Row, Sink, record_fields
from llmcore.audit._scan import ItemCache
from llmcore.audit._visible import server_side
from llmcore.audit.inputs import read_found, read_path, read_stdin
from llmcore.audit.report import AuditInput, AuditInputError

__all__ = [
    "MARK",
    "FileNote",
    "Task",
    "TaskResult",
    "Unit",
    "run_task",
    "start_worker",
]

MARK: Final = f"\x00{secrets.token_hex(16)}:"
"""Opens a partition's own request number in a text; :data:`_CLOSE` closes it."""
_CLOSE: Final = "\x00"


class _Ref(int):
    """A partition's own request number; formats between the marks (see the module)."""

    __slots__ = ()

    def __format__(self, spec: str) -> str:
        return f"{MARK}{int(self)}{_CLOSE}"

    def __str__(self) -> str:
        return self.__format__("")


@dataclass(frozen=True, slots=True)
class Unit:
    """One file of a partition, or the share of a keyed JSONL file's lines it holds."""

    ordinal: int
    """The file's number in the input order."""
    path: str
    """The file (``<stdin>`` for standard input)."""
    named: bool | None
    """``True``: named on the command line (an error ends the run); ``False``: found in a
    folder (listed and passed over); ``None``: standard input (:attr:`data`)."""
    lines: tuple[tuple[int, int, int], ...] | None = None
    """For a keyed JSONL file split by conversation key: (byte offset, length, line number)
    of each line this partition reads; ``None``: the whole file."""
    data: bytes | None = None
    """Standard input's bytes, read by the caller."""
    rows: tuple[tuple[int, bytes], ...] | None = None
    """Lines carried in the task, with their numbers (a cluster engine read them); ``None``:
    read from :attr:`path`."""
    skip: str | None = None
    """A file found in a folder that a first pass found unreadable: listed, not read."""


@dataclass(frozen=True, slots=True)
class Task:
    """A partition to audit (picklable)."""

    number: int
    """The task's number (rows are merged in input order, whatever the task)."""
    units: tuple[Unit, ...]
    """Its files and line shares, in input order."""
    provider: str | None
    """The ``--provider`` of the run."""
    group: str | None
    """The ``--group`` of the run."""
    spill: str | None = None
    """A file to write the rows to as they come (:func:`~llmcore.audit._rows.tail_rows`), or
    ``None`` to return
    them with the result."""


@dataclass(frozen=True, slots=True)
class FileNote:
    """What reading one unit found: skips, and the error that ends the run or the file."""

    ordinal: int
    """The file's number."""
    line: int
    """The line of :attr:`error` (0 unless a JSONL line share failed)."""
    skipped: tuple[str, ...]
    """Interactions and files passed over while reading, in order."""
    error: BaseException | None = None
    """A named file that cannot be read: the run's error, unless an earlier file has one."""
    partial: bool = False
    """A file found in a folder whose line share failed after other lines were audited: the
    merge runs again without the file (it is passed over whole, as in one process)."""


@dataclass(slots=True)
class TaskResult:
    """What a task gives back to the merge."""

    number: int
    """The task's number."""
    mark: str
    """The process's :data:`MARK`."""
    notes: list[FileNote] = field(default_factory=list)
    """One per unit read."""
    error: tuple[Position, BaseException] | None = None
    """The first request the auditor refused (not a skippable one), and where."""
    warnings: list[tuple[Position, str, str]] = field(default_factory=list)
    """``--provider`` warnings: where first met, the file they name, the line."""
    rows: list[tuple[Any, ...]] | None = None
    """The rows in wire form (:func:`~llmcore.audit._rows.inline_rows`), when not spilled."""
    spill: str | None = None
    """The file holding the rows (:func:`~llmcore.audit._rows.tail_rows`), when spilled."""
    count: int = 0
    """How many rows."""


_NONE: Final = Maximum(maximum=0, ideal=0, breakpoints=0)


class _PartAuditor(Auditor):
    """The auditor with its own request numbers and the maximum left to the merge."""

    def __init__(self, provider: str | None, group: str | None) -> None:
        super().__init__(provider, group)
        self.pending: tuple[Entry, str | None, bool] | None = None
        if _worker_items:
            self._cache = _worker_items[0]

    def _next_index(self) -> int:
        return _Ref(len(self._records))

    def _maximum(self, prep: Prepared, inp: AuditInput, first: bool) -> tuple[Maximum, str | None]:
        self.pending = (entry_of(prep), server_side(prep), first)
        return _NONE, None

    def row(self, item: AuditInput, position: Position) -> Row:
        """Audit ``item``; raise what :meth:`Auditor.add` raises."""
        self.pending = None
        record = self.add(item)
        entry, server, first = self.pending or (None, None, False)
        return Row(position, record_fields(record), entry, server, first)

    def warning_count(self) -> int:
        return len(self._warnings)

    def last_warning(self) -> tuple[str, str]:
        key = next(reversed(self._warnings))
        return key, self._warnings[key]


def _lines(unit: Unit) -> Iterator[tuple[int, bytes]]:
    """A line share's lines, read one at a time, with their numbers.

    Raises:
        AuditInputError: The file cannot be read (names it).
    """
    if unit.rows is not None:
        yield from unit.rows
        return
    assert unit.lines is not None
    try:
        with open(unit.path, "rb") as file:
            for offset, length, number in unit.lines:
                file.seek(offset)
                yield number, file.read(length)
    except OSError as exc:
        raise AuditInputError(f"cannot read: {exc.strerror}", location=unit.path) from exc


def _whole(unit: Unit, skipped: list[str]) -> list[AuditInput]:
    if unit.named is None:
        assert unit.data is not None
        return read_stdin(unit.data, skipped)
    if unit.named:
        return read_path(Path(unit.path), skipped, strict=True)
    return read_found(Path(unit.path), skipped)


_worker_items: list[ItemCache] = []
"""In a worker process of ``--jobs``: the item cache every task it runs shares."""


def start_worker() -> None:
    """Set up a worker process of ``--jobs``: one item cache, and a collector that runs less.

    The tasks a worker runs share one :class:`~llmcore.audit._scan.ItemCache`, as every file
    shares one in a single process: what is derived from an item's text (its normalized form,
    token counts, shape facts) is computed once per worker, not once per task (cassettes of
    one suite repeat their system prompts and tools). A partition's objects live until its
    task ends, so collecting the youngest generation every 100,000 allocations instead of 700
    saves about a tenth of the scan's time and frees nothing later than the task's end would.
    """
    gc.set_threshold(*THRESHOLD)
    _worker_items[:] = [ItemCache()]


def run_task(task: Task) -> TaskResult:
    """Audit one partition (see the module); the same function for ``--jobs`` and the engine.

    Never raises for bad input: a file that cannot be read, and the first request the auditor
    refuses, are returned where they stand, for the merge to raise the one an in-process run
    would (the first unreadable file before any refused request: reading comes first there).
    """
    auditor = _PartAuditor(task.provider, task.group)
    sink = Sink(task.spill, MARK)
    result = TaskResult(number=task.number, mark=MARK)
    try:
        for unit in task.units:
            note = _run_unit(unit, auditor, sink, result)
            result.notes.append(note)
            if note.error is not None:
                break  # the run ends with this error or an earlier file's
    finally:
        result.rows = sink.close()
    result.spill, result.count = sink.path, sink.count
    return result


def _run_unit(unit: Unit, auditor: _PartAuditor, sink: Sink, result: TaskResult) -> FileNote:
    """Read one unit and audit its inputs (after a refused request, only read)."""
    if unit.skip is not None:
        return FileNote(unit.ordinal, 0, (unit.skip,))
    skipped: list[str] = []
    line = 0
    try:
        if unit.lines is not None or unit.rows is not None:
            for line, data in _lines(unit):
                inp = jsonl_line(data, unit.path, line)
                inp = inp if unit.named else replace(inp, skippable=True)
                _audit(auditor, inp, (unit.ordinal, line), sink, result)
        else:
            for k, inp in enumerate(_whole(unit, skipped)):
                _audit(auditor, inp, (unit.ordinal, k), sink, result)
    except AuditInputError as exc:
        if unit.named is not False:
            return FileNote(unit.ordinal, line, tuple(skipped), error=exc)
        skipped.append(f"{exc.location or unit.path}: {exc.message}")
        split = unit.lines is not None or unit.rows is not None
        return FileNote(unit.ordinal, line, tuple(skipped), partial=split)
    return FileNote(unit.ordinal, 0, tuple(skipped))


def _audit(
    auditor: _PartAuditor, inp: AuditInput, position: Position, sink: Sink, result: TaskResult
) -> None:
    """Audit one input into ``sink``: a refused one is a skip row or the task's error."""
    if result.error is not None:
        return
    count = auditor.warning_count()
    try:
        row = auditor.row(inp, position)
    except AuditInputError as exc:
        if inp.skippable:
            sink.add(Row(position, None, skipped=f"{exc.location}: {exc.message}"))
        else:
            result.error = (position, exc)
        return
    except Exception as exc:  # an unknown provider name, or a bug: raised where it stands
        result.error = (position, exc)
        return
    if auditor.warning_count() > count:
        result.warnings.append((position, *auditor.last_warning()))
    sink.add(row)
