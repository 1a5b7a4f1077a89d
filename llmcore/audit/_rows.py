"""A partition's rows on their way to the merge: plain tuples, each prefix item sent once.

A worker (:mod:`llmcore.audit._partition`) gives one :class:`Row` per request. What crosses
to the merge is built for the merge's share of the work, which runs in one process while the
workers run in many: records travel as the tuple of their field values (one record is built,
by the merge, with the input's numbers), and the prefix items of the theoretical maximum
(:class:`~llmcore.audit._maximum.Entry`: an item's trie key and its compact bytes) travel as
numbers into a table each task sends once per distinct item, so a conversation's history is
pickled, read and hashed once rather than once per request that repeats it.

A spill file holds frames: an 8-byte big-endian length, then a pickle; length 0 ends the file.
The first frame is the worker process's request-number mark
(:data:`~llmcore.audit._partition.MARK`), then lists of encoded rows, in order.

Leaves out: what a row holds and how it is computed (:mod:`llmcore.audit._partition`), the
merge (:mod:`llmcore.audit._merge`).
"""

from __future__ import annotations

import heapq
import operator
import os
import pickle
import struct
import time
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import fields
from typing import Any, BinaryIO, Final, NamedTuple, TypeVar

from llmcore.audit._maximum import Entry
from llmcore.audit.report import RequestRecord
from llmcore.audit.usage import RecordedUsage

__all__ = [
    "FIELDS",
    "USAGE_AT",
    "Encoder",
    "Position",
    "Row",
    "Sink",
    "Stream",
    "inline_rows",
    "record_fields",
    "record_of",
    "rows_of",
    "tail_rows",
    "usage_of",
]

Position = tuple[int, int]
"""Where an input stands in the whole input: (file number, input or line number in the file)."""

FIELDS: Final = tuple(f.name for f in fields(RequestRecord))
""":class:`~llmcore.audit.report.RequestRecord`'s fields, in order (:func:`record_fields`)."""

USAGE_AT: Final = FIELDS.index("usage")
_T = TypeVar("_T")
_USAGE_FIELDS: Final = tuple(f.name for f in fields(RecordedUsage))
_values: Final[Callable[[RequestRecord], tuple[Any, ...]]] = operator.attrgetter(*FIELDS)
_usage_values: Final[Callable[[RecordedUsage], tuple[Any, ...]]] = operator.attrgetter(
    *_USAGE_FIELDS
)


def record_fields(record: RequestRecord) -> tuple[Any, ...]:
    """A record's field values in :data:`FIELDS` order, its usage as its own field values.

    Plain tuples pickle and load without the dataclasses' per-field state calls; the merge
    builds the record from them (:func:`usage_of` for the usage).
    """
    values = _values(record)
    usage = values[USAGE_AT]
    if usage is None:
        return values
    return (*values[:USAGE_AT], _usage_values(usage), *values[USAGE_AT + 1 :])


def _builder(cls: type[_T]) -> Callable[[Sequence[Any]], _T]:
    """Builds a slotted dataclass from its field values in order, its ``__init__`` not run.

    For values :func:`record_fields` took from an instance (neither class checks anything
    in ``__init__``): each slot is set by its descriptor, which a frozen class's
    ``__setattr__`` does one by one, at about a third of the cost.
    """
    setters = tuple(getattr(cls, f.name).__set__ for f in fields(cls))  # type: ignore[arg-type]
    new = object.__new__

    def build(values: Sequence[Any]) -> _T:
        instance = new(cls)
        for put, value in zip(setters, values, strict=True):
            put(instance, value)
        return instance

    return build


record_of: Final = _builder(RequestRecord)
"""The record of :data:`FIELDS` values (its usage a :class:`RecordedUsage`, or ``None``)."""
_usage_of: Final = _builder(RecordedUsage)


def usage_of(values: tuple[Any, ...] | None) -> RecordedUsage | None:
    """The recorded usage :func:`record_fields` gave as field values."""
    if values is None:
        return None
    return _usage_of(values)


SPILL_ROWS: Final = 200
"""Rows per frame of a spill file: the merge reads a frame once it is whole, so what it has left
when the workers end is about a frame per worker."""

_HEADER: Final = struct.Struct(">Q")


class Row(NamedTuple):
    """One request of a partition: its record so far, or why it was passed over."""

    position: Position
    """Where the input stands in the whole input."""
    record: tuple[Any, ...] | None
    """The record's field values (:func:`record_fields`) with the partition's own numbers and
    no maximum yet; ``None``: skipped."""
    entry: Entry | None = None
    """What the maximum needs (``None`` for a rejected request, which has none)."""
    server: str | None = None
    """Its :func:`~llmcore.audit._visible.server_side` reason."""
    first: bool = False
    """Whether it is the first of its scope for its provider and model."""
    skipped: str | None = None
    """For a body found in a folder that the auditor cannot read: the skip line."""


_Wire = tuple[Any, ...]
"""A row as sent: :class:`Row` with its entry as (new table values, the conversation whose
last entry it extends or ``None``, how many of that entry's items it starts with, the entry's
fields with the other ``keys`` and ``toks`` as table numbers)."""

RECENT: Final = 4096
"""Conversations per task whose last entry a row may extend (the most recently used)."""

_CONVERSATION: Final = FIELDS.index("conversation")


class _Recent:
    """The last entry of each recently used conversation: the same steps on both sides.

    The encoder and the decoder each keep one and call :meth:`take` and :meth:`put` for the
    same rows in the same order, so both keep (and drop) the same conversations.
    """

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: dict[int, tuple[Any, ...]] = {}

    def take(self, conversation: int) -> tuple[Any, ...] | None:
        return self._last.pop(conversation, None)

    def put(self, conversation: int, value: tuple[Any, ...]) -> None:
        last = self._last
        last[conversation] = value
        if len(last) > RECENT:
            del last[next(iter(last))]


def _extends(keys: tuple[Any, ...], toks: tuple[Any, ...], last: tuple[Any, ...] | None) -> int:
    """How many items of ``last``'s (keys, toks) start ``keys`` and ``toks``: all or none."""
    if last is None:
        return 0
    n = len(last[0])
    if n == 0 or len(keys) < n or keys[:n] != last[0] or toks[:n] != last[1]:
        return 0
    return n


class Encoder:
    """Turns a task's rows into wire rows, numbering each distinct key and item once.

    A request that extends its conversation's last one (the common case: a history that
    grows) sends only its new items' numbers, after how many it shares.
    """

    __slots__ = ("_numbers", "_recent")

    def __init__(self) -> None:
        self._numbers: dict[Hashable, int] = {}
        self._recent = _Recent()

    def _ids(self, values: tuple[Any, ...], new: list[Any]) -> tuple[int, ...]:
        numbers = self._numbers
        got: list[int | None] = list(map(numbers.get, values))  # most were sent before
        try:
            start = got.index(None)  # a growing history's new items come last
        except ValueError:
            return tuple(got)  # type: ignore[arg-type]  # no None in it
        for k in range(start, len(got)):
            if got[k] is None:
                value = values[k]
                n = numbers.get(value)  # the same item twice in one row
                if n is None:
                    n = numbers[value] = len(numbers)
                    new.append(value)
                got[k] = n
        return tuple(got)  # type: ignore[arg-type]  # every None replaced

    def encode(self, row: Row) -> _Wire:
        """The wire form of ``row`` (rows must be decoded in the order they were encoded)."""
        e = row.entry
        if e is None:
            return tuple(row)
        conversation = row.record[_CONVERSATION] if row.record is not None else -1
        base: int | None = None
        shared = 0
        if conversation >= 0:
            shared = _extends(e.keys, e.toks, self._recent.take(conversation))
            self._recent.put(conversation, (e.keys, e.toks))
            base = conversation
        new: list[Any] = []
        keys = self._ids(e.keys[shared:], new)
        toks = self._ids(e.toks[shared:], new)
        entry = (
            *(e.provider, e.model, e.timestamp, e.anthropic, e.breakpoints),
            *(keys, toks, e.marks, e.minimum, e.ttl),
        )
        packed = (tuple(new), base, shared, entry)
        return (row.position, row.record, packed, row.server, row.first, row.skipped)


class _Decoder:
    """Turns one task's wire rows back into rows, in the order they were encoded."""

    __slots__ = ("_recent", "_table")

    def __init__(self) -> None:
        self._table: list[Any] = []
        self._recent = _Recent()

    def decode(self, wire: _Wire) -> Row:
        position, record, packed, server, first, skipped = wire
        if packed is None:
            return Row(position, record, None, server, first, skipped)
        new, base, shared, fields = packed
        provider, model, timestamp, anthropic, breakpoints, keys, toks, *rest = fields
        table = self._table
        table.extend(new)
        item = table.__getitem__
        keys, toks = tuple(map(item, keys)), tuple(map(item, toks))
        if base is not None:
            last = self._recent.take(base)
            if shared:
                assert last is not None, "the encoder's conversations are the decoder's"
                keys, toks = last[0][:shared] + keys, last[1][:shared] + toks
            self._recent.put(base, (keys, toks))
        entry = Entry(provider, model, timestamp, anthropic, breakpoints, keys, toks, *rest)
        return Row(position, record, entry, server, first, skipped)


class Sink:
    """Collects a task's rows; with a spill file, writes them as they come, in flushed frames.

    Args:
        path: The spill file, or ``None`` to keep the rows (:attr:`rows`, wire form).
        mark: The process's request-number mark, the file's first frame.
    """

    def __init__(self, path: str | None, mark: str) -> None:
        self.rows: list[_Wire] = []
        self.count = 0
        self.path = path
        self._encoder = Encoder()
        self._file: BinaryIO | None = None
        if path is not None:
            self._file = open(path, "wb")  # noqa: SIM115 - closed in close()
            self._frame(mark)

    def _frame(self, value: object) -> None:
        assert self._file is not None
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        self._file.write(_HEADER.pack(len(data)) + data)
        self._file.flush()

    def add(self, row: Row) -> None:
        """Take the task's next row."""
        self.rows.append(self._encoder.encode(row))
        self.count += 1
        if self._file is not None and len(self.rows) >= SPILL_ROWS:
            self._frame(self.rows)
            self.rows = []

    def close(self) -> list[_Wire] | None:
        """End the file (and return ``None``), or return the rows kept."""
        if self._file is None:
            return self.rows
        if self.rows:
            self._frame(self.rows)
        self._file.write(_HEADER.pack(0))
        self._file.close()
        self.rows = []
        return None


Stream = Iterator[tuple[int, str, Row]]
"""A task's rows in order, each with the task's number and its process's mark."""


def inline_rows(number: int, mark: str, rows: list[_Wire] | None) -> Stream:
    """The rows a task returned (:meth:`Sink.close`), as task ``number`` with ``mark``."""
    decode = _Decoder().decode
    for wire in rows or ():
        yield number, mark, decode(wire)


def tail_rows(number: int, path: str, running: Callable[[], bool], wait: float = 0.002) -> Stream:
    """A spill file's rows, read while its task still writes it; the file is deleted after.

    Args:
        number: The task's number.
        path: Its spill file.
        running: Whether the task still runs: a frame not yet whole is waited for while it
            does; once it has stopped, the rows end at the last whole frame (a task that
            failed gives its error with its result).
        wait: Seconds between two looks at a frame not yet whole.
    """
    while not os.path.exists(path):
        if not running() and not os.path.exists(path):
            return
        time.sleep(wait)
    decode = _Decoder().decode
    try:
        with open(path, "rb") as file:
            mark: str | None = None
            while (frame := _next_frame(file, running, wait)) is not None:
                if mark is None:
                    mark = frame
                    continue
                for wire in frame:
                    yield number, mark, decode(wire)
    finally:
        os.unlink(path)


def _next_frame(file: BinaryIO, running: Callable[[], bool], wait: float) -> Any:
    """The next frame's value, or ``None`` at the end (an empty frame, or a stopped task)."""
    start = file.tell()
    while True:
        stopped = not running()  # looked at before reading: a stopped task wrote everything
        head = file.read(_HEADER.size)
        if len(head) == _HEADER.size:
            (size,) = _HEADER.unpack(head)
            if size == 0:
                return None
            data = file.read(size)
            if len(data) == size:
                return pickle.loads(data)
        if stopped:
            return None
        file.seek(start)
        time.sleep(wait)


def rows_of(streams: list[Stream], starts: list[Position] | None = None) -> Stream:
    """Every task's rows merged into input order (each task's rows are in order).

    Args:
        streams: The tasks' rows.
        starts: For each stream, a position at or before its first row (``None``: read
            every stream's first row at once). A stream is first read when the merge reaches
            its start, so the rows of the tasks before it are merged while it waits to run.
    """
    heap: list[tuple[Position, int, tuple[int, str, Row] | None]] = [
        (start, i, None) for i, start in enumerate(starts or [(-1, -1)] * len(streams))
    ]
    heapq.heapify(heap)
    while heap:
        _pos, i, got = heapq.heappop(heap)
        if got is not None:
            yield got
        following = next(streams[i], None)
        if following is not None:
            heapq.heappush(heap, (following[2].position, i, following))
