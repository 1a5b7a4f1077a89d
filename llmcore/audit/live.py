"""Auditing traffic as it passes, and the record it writes (SPEC V1, V6).

:class:`LiveAudit` puts each request through one :class:`~llmcore.audit.Auditor` (its public
incremental API, so the grouping and verdicts are those of ``llmcore audit``), keeps per
conversation the requests seen, the usage the answers reported and the breaks found, and
bounds its memory: at most ``max_conversations`` conversations are kept, least recently active
dropped first, and every ``4 × max_conversations`` requests the auditor is rebuilt from the
latest request of each conversation kept (a request that continues a dropped conversation
before then keeps its verdict and starts a new row). A kept conversation goes on from the same
baseline (the same verdicts); the theoretical maximum forgets the prefixes of those dropped.

The record (``--record FILE``, :class:`RecordWriter`) is JSONL, one request per line, appended
as each answer ends::

    {"conversation": "c-2", "body": {...}, "status": 200, "usage": {...}, "time":
     "2026-12-02T00:41:07.123456Z", "provider": "anthropic", "path": "/v1/messages"}

``conversation`` is the conversation key the request carried (a header or body key) or the live
conversation's number (``live-3``); ``body`` is the request body as a JSON value when that
value written compactly gives back its exact bytes, else as a JSON string of its exact bytes;
``status`` is the answer's HTTP status (0: no answer); ``usage`` the provider's ``usage`` object
as received (``null``: none); ``time`` when the request arrived, UTC; ``response_id``, only
for an answer that has one the auditor joins on (OpenAI Responses' ``resp_…``: a later
``previous_response_id`` naming it continues this conversation). No header is ever written,
so credentials never reach the record. ``llmcore audit FILE`` reads these lines as envelopes
(:data:`llmcore.audit.inputs.ENVELOPE_KEYS`) with the same verdicts.

Leaves out: HTTP (:mod:`llmcore.proxy`, :mod:`llmcore.audit.hook`), reading usage from bytes
(:mod:`llmcore.audit.tap`).
"""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict, deque
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Final

from llmcore import jsonbytes
from llmcore.audit._auditor import Auditor
from llmcore.audit._shape import shape_from_uri
from llmcore.audit.report import AuditInput, AuditInputError, RequestRecord, Verdict
from llmcore.audit.usage import usage_of
from llmcore.errors import EncodingError

__all__ = [
    "BREAKS_KEPT",
    "MAX_CONVERSATIONS",
    "ConversationRow",
    "LiveAudit",
    "Observation",
    "RecordWriter",
    "record_line",
    "record_uri",
]

MAX_CONVERSATIONS: Final = 1000
"""Conversations a :class:`LiveAudit` keeps by default (least recently active dropped first)."""
BREAKS_KEPT: Final = 5
"""Breaks kept per conversation for display (the latest); all are counted."""
_REBUILD_FACTOR: Final = 4
"""The auditor is rebuilt every ``_REBUILD_FACTOR × max_conversations`` requests."""
_OPENROUTER: Final = "https://openrouter.ai"


def record_uri(provider: str | None, path: str) -> str:
    """The URI the auditor is given for a request to ``path`` (it decides the wire shape).

    The path alone, except for OpenRouter, whose Chat path is told apart by its host
    (:func:`llmcore.audit._shape.shape_from_uri`).
    """
    return _OPENROUTER + path if provider == "openrouter" else path


def is_model_path(path: str) -> bool:
    """Whether a request to ``path`` is one the auditor reads (a model endpoint's body)."""
    return shape_from_uri(path) is not None and not path.rstrip("/").endswith("count_tokens")


@dataclass(frozen=True, slots=True, kw_only=True)
class Observation:
    """One request as the live audit judged it."""

    number: int
    """The request's number among those audited (0-based): line ``number + 1`` of the record
    and index ``number`` of ``llmcore audit RECORD``."""
    conversation: int
    """The live conversation's number (0-based, in order of first appearance)."""
    key: str
    """The record's ``conversation`` value for it (:class:`RecordWriter`)."""
    record: RequestRecord
    """The auditor's findings."""
    time: float
    """When it arrived (seconds since the epoch, whole microseconds)."""
    provider: str | None = None
    """The provider named by the caller (the proxy's upstream), else ``None``."""
    path: str = ""
    """The request path (``/v1/messages``)."""
    body: bytes = b""
    """The request body as sent."""

    @property
    def is_break(self) -> bool:
        """Whether the request broke the prefix of its conversation (verdict ``break``)."""
        return self.record.verdict is Verdict.BREAK

    def describe(self) -> str:
        """One line: ``request 3 (conversation 1): break at messages[0].content[0].text: …``."""
        rec = self.record
        where = f" at {rec.path}" if rec.path else ""
        detail = f": {rec.detail}" if rec.detail else ""
        return (
            f"request {self.number} (conversation {self.conversation}): "
            f"{rec.verdict.value}{where}{detail}"
        )


@dataclass(slots=True)
class _Live:
    number: int
    key: str | None
    provider: str
    model: str
    last: AuditInput
    last_number: int
    auditor: int
    requests: int = 0
    input_tokens: int = 0
    cache_read_tokens: int = 0
    answered: int = 0
    total_tokens: int = 0
    max_cacheable_tokens: int = 0
    break_count: int = 0
    breaks: deque[tuple[int, str]] = field(default_factory=lambda: deque(maxlen=BREAKS_KEPT))
    response_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ConversationRow:
    """A conversation's figures so far, for the live table."""

    conversation: int
    """Its number."""
    key: str | None
    """The conversation key its requests carry, if any."""
    provider: str
    """The wire shape of its requests."""
    model: str
    """The model of its latest request."""
    requests: int
    """Requests audited."""
    recorded_hit_rate: float | None
    """Σ cache read ÷ Σ input tokens over the answers that reported usage (``None``: none)."""
    max_hit_rate: float
    """The auditor's maximum: Σ theoretical maximum cacheable ÷ Σ estimated prompt tokens."""
    break_count: int
    """Breaks found."""
    breaks: tuple[tuple[int, str], ...]
    """The latest breaks (at most :data:`BREAKS_KEPT`): request number and JSON path."""


class LiveAudit:
    """Audits requests one at a time as they pass; thread-safe.

    Args:
        provider: A provider name for every body, or ``None`` to read each body's shape.
        max_conversations: Conversations kept (least recently active dropped first); memory is
            about this many latest request bodies plus the auditor's state for
            ``4 × max_conversations`` requests.

    Raises:
        ValueError: ``max_conversations`` is below 1.
    """

    def __init__(self, provider: str | None = None, *, max_conversations: int = MAX_CONVERSATIONS):
        if max_conversations < 1:
            raise ValueError("max_conversations must be at least 1")
        self._provider = provider
        self._max = max_conversations
        self._lock = threading.Lock()
        self._auditor = Auditor(provider)
        self._numbers: list[int] = []  # this auditor's record index -> request number
        self._by_auditor: dict[int, _Live] = {}  # this auditor's conversation -> live one
        self._lives: OrderedDict[int, _Live] = OrderedDict()  # least recently active first
        self._count = 0
        self._conversations = 0

    @property
    def requests(self) -> int:
        """Requests audited so far."""
        return self._count

    def observe(
        self,
        body: bytes,
        *,
        path: str,
        provider: str | None = None,
        conversation: str | None = None,
        time: float | None = None,
    ) -> Observation:
        """Audit one request body as it is sent.

        Args:
            body: The exact body bytes.
            path: The request path (decides the wire shape unless the body's provider is set).
            provider: The upstream provider's name when known (``openrouter`` needs it).
            conversation: An explicit conversation key (a JSONL envelope's ``conversation``).
            time: Arrival time, seconds since the epoch (default: now); kept to microseconds.

        Raises:
            AuditInputError: The body is not a request the auditor can read (nothing counted).
        """
        when = round(datetime.now(UTC).timestamp() if time is None else time, 6)
        with self._lock:
            inp = AuditInput(
                body=body,
                source=f"request {self._count}",
                timestamp=when,
                uri=record_uri(provider, path),
                conversation_key=conversation,
            )
            record = self._auditor.add(inp)
            number = self._count
            self._count += 1
            self._numbers.append(number)
            live = self._place(record, inp, number, conversation)
            record = replace(
                record,
                index=number,
                conversation=live.number,
                compared_with=(
                    None if record.compared_with is None else self._numbers[record.compared_with]
                ),
            )
            self._count_request(live, record, number)
            while len(self._lives) > self._max:  # the least recently active goes
                _, gone = self._lives.popitem(last=False)
                if self._by_auditor.get(gone.auditor) is gone:
                    del self._by_auditor[gone.auditor]
            if len(self._numbers) > _REBUILD_FACTOR * self._max:
                self._rebuild()
        return Observation(
            number=number,
            conversation=live.number,
            key=conversation or live.key or f"live-{live.number}",
            record=record,
            time=when,
            provider=provider,
            path=path,
            body=body,
        )

    def _place(self, record: RequestRecord, inp: AuditInput, number: int, key: str | None) -> _Live:
        live = self._by_auditor.get(record.conversation)
        if live is None:
            live = _Live(
                number=self._conversations,
                key=key,
                provider=record.provider,
                model=record.model,
                last=inp,
                last_number=number,
                auditor=record.conversation,
            )
            self._conversations += 1
            self._by_auditor[record.conversation] = live
        live.last, live.last_number, live.model = inp, number, record.model
        live.response_id = None
        self._lives[live.number] = live
        self._lives.move_to_end(live.number)
        return live

    @staticmethod
    def _count_request(live: _Live, record: RequestRecord, number: int) -> None:
        live.requests += 1
        live.total_tokens += record.total_tokens
        live.max_cacheable_tokens += record.max_cacheable_tokens
        if record.verdict is Verdict.BREAK:
            live.break_count += 1
            live.breaks.append((number, record.path or "?"))

    def _rebuild(self) -> None:
        """Rebuild the auditor from the latest request of each conversation kept."""
        auditor = Auditor(self._provider)
        numbers: list[int] = []
        by_auditor: dict[int, _Live] = {}
        for live in self._lives.values():  # least recently active first: numbers increase
            try:
                record = auditor.add(replace(live.last, response_id=live.response_id))
            except AuditInputError:  # pragma: no cover - it was read once already
                continue
            numbers.append(live.last_number)
            by_auditor[record.conversation] = live
            live.auditor = record.conversation
        self._auditor, self._numbers, self._by_auditor = auditor, numbers, by_auditor

    def answered(
        self,
        observation: Observation,
        status: int,
        usage: dict[str, Any] | None,
        response_id: str | None = None,
    ) -> None:
        """Count the usage the answer to ``observation`` reported (a status ≥ 400 counts none).

        ``response_id``: the answer's id (an OpenAI Responses ``resp_…``): a later request whose
        ``previous_response_id`` names it joins this conversation
        (:meth:`~llmcore.audit.Auditor.responded`), across the auditor's rebuilds for the
        latest answer of each conversation kept.
        """
        got = usage_of(usage) if status < 400 else None
        with self._lock:
            live = self._lives.get(observation.conversation)
            if response_id is not None and status < 400:
                self._name(observation.number, response_id, live)
            if got is not None and live is not None:
                live.answered += 1
                live.input_tokens += got.input_tokens
                live.cache_read_tokens += got.cache_read_tokens

    def _name(self, number: int, response_id: str, live: _Live | None) -> None:
        at = bisect.bisect_left(self._numbers, number)  # request numbers, in increasing order
        if at < len(self._numbers) and self._numbers[at] == number:
            self._auditor.responded(at, response_id)
        if live is not None and live.last_number == number:
            live.response_id = response_id  # kept across a rebuild

    def rows(self) -> list[ConversationRow]:
        """Every conversation kept, in order of first appearance."""
        with self._lock:
            lives = sorted(self._lives.values(), key=lambda live: live.number)
            return [
                ConversationRow(
                    conversation=live.number,
                    key=live.key,
                    provider=live.provider,
                    model=live.model,
                    requests=live.requests,
                    recorded_hit_rate=(
                        live.cache_read_tokens / live.input_tokens if live.input_tokens else None
                    ),
                    max_hit_rate=(
                        live.max_cacheable_tokens / live.total_tokens if live.total_tokens else 0.0
                    ),
                    break_count=live.break_count,
                    breaks=tuple(live.breaks),
                )
                for live in lives
            ]


def _utc(when: float) -> str:
    return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _body_value(body: bytes) -> jsonbytes.Raw | str:
    """The body as a JSON value when that value gives back its bytes, else its text."""
    try:
        if jsonbytes.dumps(jsonbytes.loads(body)) == body:
            return jsonbytes.Raw(body.decode("utf-8"))
    except (ValueError, RecursionError, EncodingError):
        pass
    return body.decode("utf-8", errors="replace")


def record_line(
    observation: Observation,
    status: int,
    usage: dict[str, Any] | None,
    response_id: str | None = None,
) -> bytes:
    """One line of the record for ``observation`` and its answer (no newline; no header)."""
    line: dict[str, Any] = {
        "conversation": observation.key,
        "body": _body_value(observation.body),
        "status": status,
        "usage": usage,
        "time": _utc(observation.time),
        "provider": observation.provider or observation.record.provider,
        "path": observation.path,
    }
    if response_id is not None:
        line["response_id"] = response_id
    try:
        return jsonbytes.dumps(line)
    except EncodingError:  # a usage value JSON cannot hold: the usage is left out
        return jsonbytes.dumps({**line, "usage": None})


class RecordWriter:
    """Appends record lines to a file in request order, flushed as they go; thread-safe.

    Line ``n + 1`` is request ``n`` (:attr:`Observation.number`), whatever order the answers
    end in: an answer that ends before an earlier one waits in memory until that one is written.

    Args:
        path: The JSONL file (created if missing; an existing file keeps its lines).

    Raises:
        OSError: The file cannot be opened for appending.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[bytes] = path.open("ab")
        self._lock = threading.Lock()
        self._next = 0
        self._waiting: dict[int, bytes] = {}

    def write(
        self,
        observation: Observation,
        status: int,
        usage: dict[str, Any] | None,
        response_id: str | None = None,
    ) -> None:
        """Add the line for ``observation`` and its answer; write every line now in order."""
        line = record_line(observation, status, usage, response_id) + b"\n"
        with self._lock:
            self._waiting[observation.number] = line
            ready = []
            while self._next in self._waiting:
                ready.append(self._waiting.pop(self._next))
                self._next += 1
            if ready and not self._file.closed:
                self._file.write(b"".join(ready))
                self._file.flush()

    def close(self) -> None:
        """Write the lines still waiting (in order) and close the file (idempotent)."""
        with self._lock:
            if not self._file.closed:
                self._file.write(b"".join(v for _, v in sorted(self._waiting.items())))
                self._waiting.clear()
                self._file.close()
