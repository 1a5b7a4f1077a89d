"""The audit on a Dask cluster: gateway logs of any size, from local paths or any fsspec URL.

``llmcore audit --engine dask --scheduler ADDRESS PATH…`` and :func:`audit_dask` read JSONL
(``.jsonl``), gzipped JSONL (``.jsonl.gz``) and Parquet (``.parquet``) files, or folders of
them, from local paths or any URL fsspec opens (``s3://``, ``gs://``, ``abfs://``, ``hdfs://``,
``memory://``…). Each line (a row of Parquet) becomes a JSONL envelope
(:data:`~llmcore.audit.inputs.ENVELOPE_KEYS`) read as ``llmcore audit`` reads one, so the same
file as JSONL gives the same report as ``--jobs 1``.

The work, on the cluster:

1. every file (a Parquet row group) is read by one task, each line given its partition: its
   envelope ``conversation`` key's bucket (lines without a key share one partition, as they
   share one grouping scope; see :mod:`llmcore.audit.jobs`). When a line names a
   ``previous_response_id`` (a response chain may cross keys), a first pass over the pieces
   reads every line's key, ``response_id`` and link, and the keys a chain links share the
   partition of the key that leads their group (:class:`~llmcore.audit._links.Links`), as
   ``--jobs`` does;
2. the bag of lines is grouped by partition (``dask.bag.groupby``: the engine's shuffle);
3. each partition is audited by :func:`llmcore.audit._partition.run_task`, the function
   ``--jobs`` runs in its worker processes;
4. the rows come back to the caller and are merged into the report
   (:func:`llmcore.audit._merge.merge_results`): the same table and JSON.

Parquet columns are named by :class:`Columns`: the body (a string or binary column holding the
exact request body, or a struct written back as compact JSON), the conversation key, the
recorded usage (a struct in the provider's usage shape, or its JSON text), the send time (a
timestamp, seconds since the epoch, or ISO 8601 text) and the HTTP status; only the body is
required, and a null is a field not recorded (a request that got no response, an envelope's
``"status": null``, has no Parquet form). A row's source is ``FILE:ROW`` (1-based, across row
groups).

Dask rather than Ray: ``dask[distributed]`` is pure Python and installs in seconds, a
:class:`distributed.LocalCluster` of 2 in-process workers starts in about 0.2 s (the tests use
one), it reads fsspec URLs and Parquet (pyarrow) natively, and a bag's ``groupby`` is the
shuffle by key this needs; Ray ships a large binary runtime (a raylet and a GCS server) whose
``ray.init`` starts separate processes, seconds each time.

Needs the ``scale`` extra (``pip install 'llmcore[scale]'``: dask, distributed, pyarrow,
fsspec); without it, :func:`audit_dask` raises :class:`~llmcore.errors.MissingDependencyError`
naming the extra.

Leaves out: YAML cassettes and HAR files (``--jobs`` audits those on one machine).
"""

from __future__ import annotations

import importlib.util
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from llmcore import jsonbytes
from llmcore.audit._links import Link, Links, line_links
from llmcore.audit._merge import Again, merge_results
from llmcore.audit._partition import Task, TaskResult, Unit, run_task
from llmcore.audit.inputs import envelope_key
from llmcore.audit.report import AuditInputError, AuditReport
from llmcore.errors import LLMCoreError, MissingDependencyError, missing_extra_message

if TYPE_CHECKING:
    from distributed import Client

__all__ = ["SCALE_MODULES", "SUFFIXES", "Columns", "audit_dask"]

SCALE_MODULES: Final = ("dask", "distributed", "pyarrow", "fsspec")
"""The modules of the ``scale`` extra."""

SUFFIXES: Final = (".jsonl", ".jsonl.gz", ".parquet")
"""The files the engine reads (a folder: every such file below it, by relative path)."""

_SHARED: Final = -1
"""The partition of lines without a conversation key."""
_CHAIN: Final = b"previous_response_id"
"""In a line, the name of a response chain's link (the chain may cross keys)."""

Aliases = dict[str, str | None]
"""A key a response chain joins → the key leading its group (``None``: the shared partition)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Columns:
    """The Parquet columns of each envelope field (see the module); ``None``: not recorded."""

    body: str = "body"
    """The request body (required)."""
    conversation: str | None = "conversation"
    """The conversation key."""
    usage: str | None = "usage"
    """The recorded usage."""
    time: str | None = "time"
    """When the request was sent."""
    status: str | None = "status"
    """The HTTP status answered (null: no response)."""


@dataclass(frozen=True, slots=True)
class _Piece:
    """One file, or one row group of a Parquet file, read by one task."""

    ordinal: int
    url: str
    named: bool
    group: int | None = None
    first_row: int = 0


def _require() -> None:
    for module in SCALE_MODULES:
        if importlib.util.find_spec(module) is None:
            message = missing_extra_message("scale", module)
            raise MissingDependencyError(f"llmcore audit --engine dask {message}")


def _files(paths: Sequence[str]) -> Iterator[tuple[str, bool]]:
    """Each input file in order (``named``: given itself, not found in a folder).

    Raises:
        AuditInputError: A path that does not exist.
    """
    import fsspec

    for path in paths:
        fs, root = fsspec.core.url_to_fs(path)
        if fs.isdir(root):
            found = sorted(
                _relative(p, root) for p in fs.find(root) if p.lower().endswith(SUFFIXES)
            )
            yield from ((_child(path, rel), False) for rel in found)
        elif fs.exists(root):
            yield path, True
        else:
            raise AuditInputError("no such file or folder", location=path)


def _relative(found: str, root: str) -> str:
    return found[len(root) :].lstrip("/") if found.startswith(root) else found


def _child(folder: str, relative: str) -> str:
    """A file found in ``folder``, named as the folder was given (a URL or a local path)."""
    if "://" in folder:
        return f"{folder.rstrip('/')}/{relative}"
    return str(Path(folder) / relative)


def _pieces(paths: Sequence[str]) -> list[_Piece]:
    out = []
    for ordinal, (url, named) in enumerate(_files(paths)):
        if url.lower().endswith(".parquet"):
            out.extend(_row_groups(ordinal, url, named))
        else:
            out.append(_Piece(ordinal, url, named))
    return out


def _row_groups(ordinal: int, url: str, named: bool) -> list[_Piece]:
    import fsspec
    import pyarrow.parquet as pq

    with fsspec.open(url, "rb") as file:
        meta = pq.ParquetFile(file).metadata
    first, out = 0, []
    for group in range(meta.num_row_groups):
        out.append(_Piece(ordinal, url, named, group, first))
        first += meta.row_group(group).num_rows
    return out


def _lines(piece: _Piece, columns: Columns) -> Iterator[tuple[int, bytes]]:
    """The piece's non-blank lines (Parquet rows written as envelopes) and their numbers."""
    import fsspec

    if piece.group is not None:
        yield from _parquet_lines(piece, columns)
        return
    with fsspec.open(piece.url, "rb", compression="infer") as file:
        data = file.read()
    for number, line in enumerate(data.split(b"\n"), start=1):
        line = line.removesuffix(b"\r")
        if line.strip():
            yield number, line


def _parquet_lines(piece: _Piece, columns: Columns) -> Iterator[tuple[int, bytes]]:
    import fsspec
    import pyarrow.parquet as pq

    fields = {
        "body": columns.body,
        "conversation": columns.conversation,
        "usage": columns.usage,
        "time": columns.time,
        "status": columns.status,
    }
    with fsspec.open(piece.url, "rb") as file:
        reader = pq.ParquetFile(file)
        names = set(reader.schema_arrow.names)
        if columns.body not in names:
            raise AuditInputError(
                f"no body column {columns.body!r} (columns: {', '.join(sorted(names))})",
                location=piece.url,
            )
        wanted = {k: v for k, v in fields.items() if v is not None and v in names}
        table = reader.read_row_group(piece.group or 0, columns=list(wanted.values()))
    for offset, row in enumerate(table.to_pylist()):
        number = piece.first_row + offset + 1
        try:
            envelope = {
                k: _plain(k, row[v]) for k, v in wanted.items() if k == "body" or row[v] is not None
            }
            line = jsonbytes.dumps(envelope)
        except (ValueError, RecursionError, LLMCoreError) as exc:  # JSON cannot hold a value
            raise AuditInputError(
                f"row cannot be read as an envelope: {exc}", location=f"{piece.url}:{number}"
            ) from None
        yield number, line


def _plain(field: str, value: Any) -> Any:
    """A Parquet value as an envelope value: bytes as text, usage text parsed, a time as seconds.

    Raises:
        ValueError: A usage column's text is not JSON.
    """
    if field == "usage" and isinstance(value, str | bytes):
        return jsonbytes.loads(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogatepass")
    if isinstance(value, datetime):
        return value.timestamp() if value.tzinfo is not None else value.isoformat()
    return value


def _read(
    piece: _Piece, columns: Columns, buckets: int, group: str | None, aliases: Aliases | None
) -> list[Any]:
    """The piece's lines, each as (partition, piece, line number, bytes)."""
    out = []
    for number, line in _lines(piece, columns):
        out.append((_bucket(line, piece.ordinal, buckets, group, aliases), piece, number, line))
    return out


def _chains(piece: _Piece, columns: Columns) -> tuple[int, list[Link]]:
    """The piece's file number and its lines' links, when a line names a response (else none)."""
    lines = list(_lines(piece, columns))
    if not any(_CHAIN in line for _number, line in lines):
        return piece.ordinal, []
    return piece.ordinal, [line_links(line) for _number, line in lines if b"response_id" in line]


def _aliases(found: list[tuple[int, list[Link]]]) -> Aliases:
    """The keys the pieces' response chains join (within a file), each to its group's lead."""
    links, keys = Links(), set()
    by_file: dict[int, list[Link]] = {}
    for ordinal, lines in found:
        by_file.setdefault(ordinal, []).extend(lines)
    for ordinal in sorted(by_file):
        for link in by_file[ordinal]:
            links.add(link)
            if link[0] is not None:
                keys.add(link[0])
        links.end_file()
    return {key: links.root(key) for key in keys if links.root(key) != key}


def _bucket(
    line: bytes, ordinal: int, buckets: int, group: str | None, aliases: Aliases | None
) -> int:
    if group == "file":
        return ordinal
    if group in ("key", "prefix"):
        return _SHARED
    key = envelope_key(line)
    if aliases and key in aliases:
        key = aliases[key]
    return _SHARED if key is None else zlib.crc32(key.encode("utf-8", "surrogatepass")) % buckets


def _audit(
    found: tuple[int, list[Any]],
    provider: str | None,
    group: str | None,
    skips: dict[int, str],
) -> TaskResult:
    """Audit one partition: its lines, by file and line, as :class:`Unit` rows."""
    bucket, lines = found
    by_file: dict[int, list[tuple[int, bytes]]] = {}
    pieces: dict[int, _Piece] = {}
    for _bucket_of, piece, number, line in lines:
        by_file.setdefault(piece.ordinal, []).append((number, line))
        pieces[piece.ordinal] = piece
    units = []
    for ordinal in sorted(by_file):
        piece = pieces[ordinal]
        rows = tuple(sorted(by_file[ordinal], key=lambda x: x[0]))
        units.append(Unit(ordinal, piece.url, piece.named, rows=rows, skip=skips.get(ordinal)))
    task = Task(number=bucket + 1, units=tuple(units), provider=provider, group=group)
    return run_task(task)


def audit_dask(
    paths: Sequence[str],
    *,
    scheduler: str | Client | None = None,
    provider: str | None = None,
    group: str | None = None,
    columns: Columns | None = None,
    partitions: int | None = None,
) -> AuditReport:
    """Audit JSONL, JSONL.gz and Parquet logs on a Dask cluster (see the module).

    Args:
        paths: Files or folders, local paths or fsspec URLs, in order.
        scheduler: A scheduler's address (``tcp://host:8786``), a :class:`distributed.Client`,
            or ``None`` for a local cluster of one worker process per core.
        provider: A provider for every body, or ``None`` to read each body's shape.
        group: The grouping override (:data:`~llmcore.audit.GROUPINGS`).
        columns: The Parquet column names (default :class:`Columns`).
        partitions: How many key partitions (default: twice the cluster's worker threads).

    Returns:
        The report ``llmcore audit --jobs 1`` gives for the same lines as JSONL files.

    Raises:
        MissingDependencyError: The ``scale`` extra is not installed.
        AuditInputError: A path is missing, a file cannot be read, a line is refused (the
            file and line, as one process names them).
        UnknownProviderError: ``provider`` is not a known name.
    """
    _require()
    from llmcore.audit._auditor import Auditor

    Auditor(provider, group)  # an unknown grouping is refused before any file is read
    with _client(scheduler) as client:
        count = partitions or max(2, 2 * sum(client.nthreads().values()))
        pieces = _pieces(paths)
        skips: dict[int, str] = {}
        while True:
            results = _compute(pieces, columns or Columns(), count, provider, group, skips)
            try:
                return merge_results(results, group, None)
            except Again as again:
                skips.update(again.skips)


def _compute(
    pieces: list[_Piece],
    columns: Columns,
    count: int,
    provider: str | None,
    group: str | None,
    skips: dict[int, str],
) -> list[TaskResult]:
    import dask.bag as db

    if not pieces:
        return []
    bag = db.from_sequence(pieces, npartitions=len(pieces))
    aliases = _aliases(bag.map(_chains, columns=columns).compute()) if group is None else None
    lines = bag.map(_read, columns=columns, buckets=count, group=group, aliases=aliases)
    grouped = lines.flatten().groupby(_partition_of, npartitions=count)
    audited = grouped.map(_audit, provider=provider, group=group, skips=skips)
    results: list[TaskResult] = audited.compute()
    return results


def _partition_of(line: tuple[Any, ...]) -> int:
    return int(line[0])


class _client:  # noqa: N801 - a context manager named for what it gives
    """The client of ``scheduler``; a local cluster started (and closed) for ``None``."""

    def __init__(self, scheduler: str | Client | None) -> None:
        self._scheduler = scheduler
        self._own: list[Any] = []

    def __enter__(self) -> Client:
        from distributed import Client, LocalCluster

        if isinstance(self._scheduler, Client):
            return self._scheduler
        if self._scheduler is None:
            cluster = LocalCluster(threads_per_worker=1, dashboard_address=":0")
            self._own.append(cluster)
            client = Client(cluster)
        else:
            client = Client(self._scheduler)
        self._own.insert(0, client)
        return client

    def __exit__(self, *exc: object) -> None:
        for thing in self._own:
            thing.close()
