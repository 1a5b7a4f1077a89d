"""One thread that audits the requests a server has answered, in the order they came (SPEC V6).

The proxy and the emulator's record hand each answered model request to an
:class:`AuditWorker` instead of auditing it in their event loop: the audit of a 300 KB body
takes milliseconds, and no request should wait for another's. The queue is bounded
(:data:`MAX_WAITING`): when the audits fall that far behind, the server waits for a free
place (its memory stays bounded; the requests are slowed, never dropped). A server takes a
:meth:`AuditWorker.ticket` when a request has come in and hands the request over with it
once its answer has ended, so requests are audited in the order they came, not the order their
answers ended: a client that sends request N + 1 right after reading N's answer may have it
answered before the server's task for N has handed N over.
:meth:`AuditWorker.drain` runs what is queued and stops the thread, so the figures read after
a server stops count every request.

:class:`AuditJob` is what the thread does for each request: audit it, tell the observer, count
its answer's usage and id, write its line of the record.

Leaves out: the audit itself (:mod:`llmcore.audit.live`).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any, Final

from llmcore.audit.live import LiveAudit, Observation, RecordWriter
from llmcore.audit.report import AuditInputError
from llmcore.audit.tap import UsageTap

__all__ = ["MAX_WAITING", "AuditJob", "AuditWorker"]

MAX_WAITING: Final = 256
"""Requests queued at most for the audit thread."""
LOG: Final = logging.getLogger("llmcore.proxy")


class AuditWorker:
    """Calls ``job(*args)`` for each :meth:`put`, in ticket order, in one daemon thread.

    A job whose ticket comes before one not handed over yet waits for it; more than
    :data:`MAX_WAITING` waiting jobs, or a :meth:`drain`, run in ticket order without the
    missing ones (each runs when it comes). A ticket that will not be handed over is given
    back with :meth:`skip`.

    Args:
        job: What to run for each request (its exceptions are logged, one traceback each: a
            failure there is a bug, and the next request is still audited).
        name: The thread's name.
    """

    def __init__(self, job: Callable[..., object], name: str = "llmcore-audit") -> None:
        self._job, self._name = job, name
        self._queue: queue.Queue[tuple[int, tuple[Any, ...] | None] | None] = queue.Queue(
            MAX_WAITING
        )
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._tickets = 0
        self._expected = 0
        self._waiting: dict[int, tuple[Any, ...] | None] = {}

    def ticket(self) -> int:
        """Return the next ticket: the place of a request that has come in."""
        with self._lock:
            self._tickets += 1
            return self._tickets - 1

    def put(self, *args: Any, ticket: int | None = None) -> None:
        """Queue ``job(*args)`` at ``ticket`` (a new one when ``None``); wait for a place."""
        self._hand(self.ticket() if ticket is None else ticket, args)

    def skip(self, ticket: int) -> None:
        """Give back ``ticket``: its request will not be handed over (the client left)."""
        self._hand(ticket, None)

    def _hand(self, ticket: int, args: tuple[Any, ...] | None) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True, name=self._name)
                self._thread.start()
        self._queue.put((ticket, args))

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            ticket, args = item
            if ticket < self._expected:  # its place was passed over: it runs as it comes
                self._call(args)
                continue
            self._waiting[ticket] = args
            while self._expected in self._waiting or len(self._waiting) > MAX_WAITING:
                if self._expected not in self._waiting:
                    self._expected = min(self._waiting)
                self._call(self._waiting.pop(self._expected))
                self._expected += 1
        for ticket in sorted(self._waiting):
            self._call(self._waiting.pop(ticket))
            self._expected = ticket + 1

    def _call(self, args: tuple[Any, ...] | None) -> None:
        if args is None:
            return
        try:
            self._job(*args)
        except Exception:
            LOG.exception("llmcore: the audit of a request failed")

    def drain(self) -> None:
        """Run every job queued, then stop the thread (idempotent; :meth:`put` starts anew)."""
        with self._lock:
            if self._thread is not None:
                self._queue.put(None)
                self._thread.join()
                self._thread = None


class AuditJob:
    """Audits one answered request, counts its answer and writes its record line.

    Args:
        audit: The live audit to add to.
        record: The record to write to, or ``None``.
        provider: The upstream's provider name when its path alone does not say it.
        observer: Called with each request as audited (before its answer is counted).
        log_unread: Log one line (WARNING) for a body the auditor cannot read; else skip it
            silently (the emulator refused such a body itself).
    """

    def __init__(
        self,
        audit: LiveAudit,
        record: RecordWriter | None = None,
        *,
        provider: str | None = None,
        observer: Callable[[Observation], object] | None = None,
        log_unread: bool = True,
    ) -> None:
        self.audit, self.record, self.provider = audit, record, provider
        self.observer, self.log_unread = observer, log_unread

    def __call__(self, body: bytes, path: str, status: int, tap: UsageTap | None) -> None:
        """Run for one request: its body, path, the answer's status (0: none) and tap."""
        try:
            observation = self.audit.observe(body, path=path, provider=self.provider)
        except AuditInputError as exc:
            if self.log_unread:
                LOG.warning("llmcore proxy: not audited (%s): %s", path, exc.message)
            return
        if self.observer is not None:
            self.observer(observation)
        usage, named = (tap.finish(), tap.response_id) if tap is not None else (None, None)
        self.audit.answered(observation, status, usage, named)
        if self.record is not None:
            self.record.write(observation, status, usage, named)
