"""The collector's thresholds while an audit runs, and after it."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from llmcore.audit import audit_paths
from llmcore.audit._collector import THRESHOLD, fewer_collections
from llmcore.audit.jobs import audit_jobs

REAL = Path(__file__).resolve().parent.parent / "real_traffic"


@pytest.fixture
def thresholds() -> Iterator[tuple[int, int, int]]:
    """The caller's own thresholds (not the default), put back after the test."""
    saved = gc.get_threshold()
    gc.set_threshold(1234, 5, 6)
    yield (1234, 5, 6)
    gc.set_threshold(*saved)


def test_the_block_runs_with_the_audit_thresholds_and_the_callers_come_back(thresholds):
    with fewer_collections():
        assert gc.get_threshold() == THRESHOLD
        with fewer_collections():
            assert gc.get_threshold() == THRESHOLD
        assert gc.get_threshold() == THRESHOLD
    assert gc.get_threshold() == thresholds


def test_an_error_in_the_block_still_gives_the_thresholds_back(thresholds):
    with pytest.raises(KeyError), fewer_collections():
        raise KeyError("x")
    assert gc.get_threshold() == thresholds


def test_audits_in_two_threads_give_back_the_thresholds_the_first_found(thresholds):
    """The first thread ends while the second still runs: the audit's thresholds stay."""
    inside = threading.Barrier(2)
    first_done = threading.Event()
    seen: list[tuple[int, int, int]] = []

    def first() -> None:
        with fewer_collections():
            inside.wait()
        first_done.set()

    def second() -> None:
        with fewer_collections():
            inside.wait()
            first_done.wait()
            seen.append(gc.get_threshold())

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == [THRESHOLD]
    assert gc.get_threshold() == thresholds


def test_audit_paths_and_audit_jobs_leave_the_callers_thresholds(thresholds):
    files = sorted(REAL.rglob("*.yaml"))[:3]
    audit_paths(files)
    assert gc.get_threshold() == thresholds
    audit_jobs(files, jobs=2, processes=False)
    assert gc.get_threshold() == thresholds
