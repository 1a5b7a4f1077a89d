"""The audit thread runs requests in the order they came, not the order their answers ended."""

from __future__ import annotations

import threading

from llmcore.proxy.worker import MAX_WAITING, AuditWorker


def _worker() -> tuple[AuditWorker, list[str]]:
    ran: list[str] = []
    return AuditWorker(ran.append), ran


def test_a_request_answered_after_a_later_one_is_still_audited_first() -> None:
    worker, ran = _worker()
    first, second = worker.ticket(), worker.ticket()
    worker.put("second", ticket=second)  # its answer ended first
    worker.put("first", ticket=first)
    worker.drain()
    assert ran == ["first", "second"]


def test_a_skipped_ticket_lets_the_next_run_and_drain_runs_what_waits() -> None:
    worker, ran = _worker()
    left, kept, waiting = worker.ticket(), worker.ticket(), worker.ticket()
    missing = worker.ticket()  # taken, never handed over before the drain
    worker.put("waiting", ticket=waiting)
    worker.put("kept", ticket=kept)
    worker.skip(left)
    worker.put("after", ticket=worker.ticket())
    worker.drain()
    assert ran == ["kept", "waiting", "after"]
    worker.put("late", ticket=missing)  # a place passed over runs as it comes
    worker.drain()
    assert ran == ["kept", "waiting", "after", "late"]


def test_a_ticket_never_handed_over_holds_back_at_most_max_waiting_jobs() -> None:
    ran: list[int] = []
    reached = threading.Event()

    def job(n: int) -> None:
        ran.append(n)
        reached.set()

    worker = AuditWorker(job)
    stuck = worker.ticket()
    for n in range(MAX_WAITING + 1):
        worker.put(n, ticket=worker.ticket())
    assert reached.wait(60)  # the overflow runs the waiting jobs without the stuck one
    worker.drain()
    assert ran == list(range(MAX_WAITING + 1))
    worker.skip(stuck)
    worker.drain()
