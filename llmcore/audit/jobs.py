"""``llmcore audit --jobs N``: the audit of many files or a keyed log in worker processes.

The input is partitioned where the auditor's grouping allows (:mod:`llmcore.audit._partition`):

* each cassette or HAR file is one partition (its requests are grouped within the file);
* a JSONL file's lines that carry an envelope ``conversation`` are partitioned by that key
  (one conversation's lines stay together, in order, whatever file they are in), keys a
  response chain links (a ``previous_response_id`` naming another key's ``response_id`` in its
  file) together (:mod:`llmcore.audit._links`); its other lines, corpus cases and plain
  bodies (``.json``) and standard input are grouped across the whole input, so they form one
  partition together (with the keys a chain links to them, and with every key's lines when
  standard input holds keyed JSONL lines, whose keys may be any file's);
* under ``--group file`` every file is a partition; under ``--group key`` or ``prefix`` the
  whole input is one (keys and chains cross files there).

Partitions are packed into tasks (one per worker for keyed logs, small runs of files), run by a
process pool (``fork`` from a process that runs one thread, else ``forkserver`` where the
platform has it, else ``spawn``: workers import only the auditor) and merged in input
order into the report one process gives (:mod:`llmcore.audit._merge`): the same records, the
same numbers and texts, the same skips, warnings and errors. The parent reads a keyed JSONL
file once to find each line's key and keeps (offset, length, line) per line, never the lines;
workers read their lines themselves and write large results to a temporary folder.

Leaves out: the cluster engine (:mod:`llmcore.audit.engine`), which runs the same
:func:`~llmcore.audit._partition.run_task`.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.context
import os
import tempfile
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Final

from llmcore.audit._collector import fewer_collections
from llmcore.audit._keyscan import Found, find_range, joined, ranges
from llmcore.audit._links import Links
from llmcore.audit._merge import Again, Merge, merge_results
from llmcore.audit._partition import Task, TaskResult, Unit, run_task, start_worker
from llmcore.audit._rows import rows_of, tail_rows
from llmcore.audit.inputs import STDIN_NAME, envelope_key, input_files
from llmcore.audit.report import AuditInputError, AuditReport

__all__ = ["AUTO_MIN_BYTES", "audit_jobs", "cores", "plan"]

AUTO_MIN_BYTES: Final = 8 * 1024 * 1024
"""Below this much input, the default (``jobs=None``) audits in the calling process: starting
workers costs more than it saves."""

RANGE_MIN: Final = 8 * 1024 * 1024
"""A JSONL file this large has its keys found by the workers, in byte ranges side by side
(:mod:`llmcore.audit._keyscan`); a smaller one by the calling process."""

Finder = Callable[[str, int], Found]
"""Finds a JSONL file's lines by key, given its path and size."""


def cores() -> int:
    """The cores this process may run on (its CPU affinity where the platform tells it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return max(1, os.cpu_count() or 1)


@dataclass(slots=True)
class _Plan:
    """The partitions of an input: one shared one, key buckets and files of their own."""

    shared: list[Unit] = field(default_factory=list)
    """Units whose requests may group across the input (and everything, under key/prefix)."""
    keys: dict[str, list[Unit]] = field(default_factory=dict)
    """Conversation key → its line shares."""
    key_bytes: dict[str, int] = field(default_factory=dict)
    """Conversation key → bytes of its lines."""
    keyed_shared: bool = False
    """Whether every key's lines join the shared partition: standard input holds keyed JSONL
    lines (its keys may be any file's)."""
    links: Links = field(default_factory=Links)
    """The keys response chains join (:mod:`llmcore.audit._links`)."""
    shared_bytes: int = 0
    """Bytes of :attr:`shared` (its lines, or its files' sizes)."""
    own: list[tuple[int, Unit]] = field(default_factory=list)
    """Files that are a partition of their own, with their sizes."""
    planned: tuple[int, BaseException] | None = None
    """A path error met while listing (file number, error); nothing after it is read."""
    size: int = 0
    """Bytes of input."""


def plan(
    paths: Sequence[Path],
    group: str | None,
    stdin: Callable[[], bytes] | None = None,
    skips: dict[int, str] | None = None,
    find: Finder | None = None,
) -> _Plan:
    """Partition ``paths`` (see the module); ``skips`` passes files over whole, by number.

    ``find`` finds a JSONL file's lines by key (default: one scan in this process).
    """
    out = _Plan()
    skips = skips or {}
    ordinal = -1
    files = input_files(paths, stdin is not None)
    while True:
        try:
            path, named = next(files)
        except StopIteration:
            break
        except (AuditInputError, OSError) as exc:
            out.planned = (ordinal + 1, exc)
            break
        ordinal += 1
        _place(out, ordinal, path, named, group, stdin, skips.get(ordinal), find or _find_here)
    return out


def _place(
    out: _Plan,
    ordinal: int,
    path: Path,
    named: bool | None,
    group: str | None,
    stdin: Callable[[], bytes] | None,
    skip: str | None,
    find: Finder,
) -> None:
    """Put one file into the plan."""
    if named is None:
        assert stdin is not None
        data = stdin()
        out.size += len(data)
        out.shared_bytes += len(data)
        out.shared.append(Unit(ordinal, STDIN_NAME, None, data=data))
        out.keyed_shared = out.keyed_shared or _keyed(data)
        return
    unit = Unit(ordinal, str(path), named, skip=skip)
    try:
        size = path.stat().st_size
    except OSError:
        size = 0  # the worker names the error
    out.size += size
    suffix = path.suffix.lower()
    if group in ("key", "prefix") or skip is not None:
        out.shared.append(unit)
        out.shared_bytes += size
    elif group == "file" or suffix in (".yaml", ".yml", ".har"):
        out.own.append((size, unit))
    elif suffix == ".jsonl":
        _split(out, unit, size, find)
    else:
        out.shared.append(unit)
        out.shared_bytes += size


def _find_here(path: str, _size: int) -> Found:
    return find_range(path)


class _Pool:
    """The worker processes of a run, started when first needed (finding keys, or the tasks)."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None

    def get(self) -> ProcessPoolExecutor:
        """The pool (started on the first call)."""
        if self._pool is None:
            self._pool = ProcessPoolExecutor(self.workers, _context(), initializer=start_worker)
        return self._pool

    def find(self, path: str, size: int) -> Found:
        """:data:`Finder` in the workers: byte ranges, two per worker, for a large file."""
        if size < RANGE_MIN or self.workers == 1:
            return find_range(path)
        parts = ranges(size, 2 * self.workers)
        pool = self.get()
        return joined(list(pool.map(find_range, [path] * len(parts), *zip(*parts, strict=True))))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()


def _split(out: _Plan, unit: Unit, size: int, find: Finder) -> None:
    """Share a JSONL file's lines out by envelope key (the others stay shared)."""
    try:
        found = find(unit.path, size)
    except OSError:
        out.shared.append(unit)  # the worker reads it again and names the error
        out.shared_bytes += size
        return
    for link in found.links:
        out.links.add(link)
    out.links.end_file()
    if set(found.lines) <= {None}:
        out.shared.append(unit)  # no keys: the whole file, read as one
        out.shared_bytes += size
        return
    for name, size_of in found.key_bytes.items():
        out.key_bytes[name] = out.key_bytes.get(name, 0) + size_of
    for key, lines in found.lines.items():
        share = replace(unit, lines=tuple(lines))
        if key is None:
            out.shared.append(share)
            out.shared_bytes += sum(length for _offset, length, _number in lines)
        else:
            out.keys.setdefault(key, []).append(share)


def _keyed(data: bytes) -> bool:
    """Whether standard input's bytes hold a JSONL line with a conversation key.

    Not for a cassette (its keys stay within it); JSONL lines are read as
    :func:`~llmcore.audit.inputs.read_stdin` reads them.
    """
    lines = [line for line in data.splitlines() if line.strip()]
    first = next((x for x in lines if not x.startswith(b"#")), b"")
    if first.startswith((b"interactions:", b"---")):
        return False
    return any(envelope_key(line) is not None for line in lines)


def _tasks(
    p: _Plan, provider: str | None, group: str | None, jobs: int, spill: str | None
) -> list[Task]:
    """Pack the partitions into tasks: key buckets first, largest first, then runs of files.

    Runs of files of their own (cassettes, HAR files) are small (an eighth of a worker's
    share) and kept in input order: the pool hands them out as workers free up, so the last
    run leaves little imbalance, and the merge, which takes rows in input order, takes each
    run as it is written rather than after the runs before it in size order.
    """
    buckets: list[tuple[int, list[Unit]]] = []
    shared = p.shared
    if p.keyed_shared:  # keys cross into the shared partition: one partition with it
        shared = [*shared, *(unit for units in p.keys.values() for unit in units)]
    elif p.keys:  # the largest key groups first, each to the least loaded bucket
        groups = _groups(p)
        joined, joined_bytes = groups.pop(None, ([], 0))
        shared = [*shared, *joined]
        count = min(len(groups), jobs)  # one per worker: all run, and merge, at once
        sizes, parts = [0] * count, [list[Unit]() for _ in range(count)]
        pieces = [(size, key, units) for key, (units, size) in groups.items()]
        if shared and count == jobs:  # the shared partition is packed as one more piece
            pieces.append((p.shared_bytes + joined_bytes, "", shared))
            shared = []
        for size, _key, units in sorted(pieces, key=lambda piece: (-piece[0], piece[1])):
            i = min(range(count), key=lambda n: (sizes[n], n))
            sizes[i] += size
            parts[i].extend(units)
        buckets = list(zip(sizes, parts, strict=True))
    if shared:
        buckets.append((p.size, shared))  # its size is unknown: started first
    buckets.sort(key=lambda b: -b[0])
    target = max(1, p.size // (jobs * 8))
    run: list[Unit] = []
    run_size = 0
    for size, unit in p.own:
        run.append(unit)
        run_size += size
        if run_size >= target:
            buckets.append((run_size, run))
            run, run_size = [], 0
    if run:
        buckets.append((run_size, run))
    return [
        Task(
            number=n,
            units=tuple(_merged(units)),
            provider=provider,
            group=group,
            spill=None if spill is None else os.path.join(spill, f"task-{n}.rows"),
        )
        for n, (_size, units) in enumerate(buckets)
    ]


def _groups(p: _Plan) -> dict[str | None, tuple[list[Unit], int]]:
    """The keys' line shares and bytes by the group response chains join them into.

    A group is named by its :meth:`~llmcore.audit._links.Links.root`; ``None`` holds the keys
    joined to the lines without one (they go to the shared partition).
    """
    out: dict[str | None, tuple[list[Unit], int]] = {}
    for key, units in p.keys.items():
        root = p.links.root(key) if p.links.joined() else key
        known, size = out.get(root, ([], 0))
        known.extend(units)
        out[root] = (known, size + p.key_bytes[key])
    return out


def _merged(units: list[Unit]) -> list[Unit]:
    """A task's units in input order, a file's line shares joined into one (lines in order)."""
    by_file: dict[int, Unit] = {}
    shares: dict[int, list[tuple[int, int, int]]] = {}
    for unit in units:
        known = by_file.get(unit.ordinal)
        if known is not None and known.lines is not None and unit.lines is not None:
            shares[unit.ordinal].extend(unit.lines)
            continue
        by_file[unit.ordinal] = unit
        shares.pop(unit.ordinal, None)
        if unit.lines is not None:
            shares[unit.ordinal] = list(unit.lines)
    for ordinal, lines in shares.items():  # sorted once (Timsort joins the sorted shares)
        lines.sort(key=_line_number)
        by_file[ordinal] = replace(by_file[ordinal], lines=tuple(lines))
    return [by_file[k] for k in sorted(by_file)]


def _line_number(line: tuple[int, int, int]) -> int:
    return line[2]


def audit_jobs(
    paths: Sequence[Path],
    provider: str | None = None,
    stdin: Callable[[], bytes] | None = None,
    *,
    group: str | None = None,
    jobs: int | None = None,
    processes: bool = True,
) -> AuditReport:
    """:func:`llmcore.audit.audit_paths` in ``jobs`` worker processes: the same report.

    Args:
        paths: Cassettes, JSONL, corpus cases, HAR files or folders of them, in order.
        provider: A provider for every body, or ``None`` to read each body's shape.
        stdin: Supplies the bytes a path ``-`` stands for.
        group: The grouping override (:data:`~llmcore.audit.GROUPINGS`).
        jobs: Worker processes; ``None``: every core (:func:`cores`), and the calling
            process alone below :data:`AUTO_MIN_BYTES` of input; ``1``: the calling process
            (:func:`~llmcore.audit.audit_paths` itself).
        processes: ``False`` runs the tasks of ``jobs`` workers one after another in the
            calling process (the same partitions and merge, without the processes: tests).

    Raises:
        AuditInputError: As :func:`~llmcore.audit.audit_paths`, the same error (file, line).
        UnknownProviderError: ``provider`` is not a known name.
    """
    from llmcore.audit._auditor import Auditor

    Auditor(provider, group)  # an unknown grouping is refused before any file is read
    if jobs is not None and jobs < 1:
        raise AuditInputError(f"--jobs must be 1 or more, not {jobs}", location="--jobs")
    skips: dict[int, str] = {}
    read = _once(stdin)
    if jobs == 1 and processes:
        from llmcore.audit import audit_paths

        return audit_paths(paths, provider, read, group=group)
    pool = _Pool(jobs or cores())
    try:
        while True:
            # below RANGE_MIN a file's keys are found here; a file above it means
            # AUTO_MIN_BYTES of input, so jobs=None starts every core's worker too
            p = plan(paths, group, read, skips, pool.find if processes else None)
            workers = jobs if jobs is not None else (cores() if p.size >= AUTO_MIN_BYTES else 1)
            if workers == 1 and processes:
                from llmcore.audit import audit_paths

                return audit_paths(paths, provider, read, group=group)
            with (
                tempfile.TemporaryDirectory(prefix="llmcore-audit-") as spill,
                fewer_collections(),
            ):
                tasks = _tasks(p, provider, group, workers, spill if processes else None)
                results, merged = _run(tasks, pool if processes else None, group)
                try:
                    return merge_results(results, group, p.planned, merged)
                except Again as again:
                    skips.update(again.skips)
    finally:
        pool.close()


def _once(stdin: Callable[[], bytes] | None) -> Callable[[], bytes] | None:
    """``stdin`` read at most once (a second pass gets the same bytes)."""
    if stdin is None:
        return None
    got: list[bytes] = []

    def read() -> bytes:
        if not got:
            got.append(stdin())
        return got[0]

    return read


def _run(
    tasks: list[Task], pool: _Pool | None, group: str | None
) -> tuple[list[TaskResult], Merge | None]:
    """Run the tasks: in this process without a pool (or for one task), else in the pool.

    With a pool, the rows are merged while the tasks run (each task writes its spill file as
    it goes), so the merge's share overlaps the workers'.
    """
    if pool is None or len(tasks) <= 1:
        return [run_task(replace(task, spill=None)) for task in tasks], None
    merged = Merge(group)
    executor = pool.get()
    futures = [executor.submit(run_task, task) for task in tasks]
    streams = []
    for task, future in zip(tasks, futures, strict=True):
        assert task.spill is not None
        streams.append(tail_rows(task.number, task.spill, _running(future)))
    starts = [(min(unit.ordinal for unit in task.units), -1) for task in tasks]
    merged.add_all(rows_of(streams, starts))
    return [future.result() for future in futures], merged


def _context() -> multiprocessing.context.BaseContext:
    """How workers start: ``fork`` when this process runs one thread, else ``forkserver``.

    A forked worker starts at once, with the auditor already imported; forking a process
    that runs other threads can copy a lock one of them holds, so then the fork server (or
    ``spawn`` where the platform has none) starts them.
    """
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    if "forkserver" in methods:
        context.set_forkserver_preload(["llmcore.audit._partition"])
    return context


def _running(future: Future[TaskResult]) -> Callable[[], bool]:
    """Whether ``future``'s task still runs (or waits to)."""
    return lambda: not future.done()
