"""Ctrl+C mid-turn never hangs (SPEC S2, R2): the interrupt is taken at one point of the main
thread, whatever the turn's worker is doing; the cut turn is dropped, a finished one is kept."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator

import pytest

from llmcore.chat.interrupt import TurnCancelled, TurnGuard

pytestmark = pytest.mark.skipif(
    threading.current_thread() is not threading.main_thread(),
    reason="signals reach only the main thread",
)


@pytest.fixture(autouse=True)
def _foreground_sigint() -> Iterator[None]:
    """Python's own SIGINT handler, as in a terminal's foreground, restored after each test.

    A process started in the background by a non-interactive shell inherits SIGINT ignored
    (POSIX, "Signals and Error Handling"), and then :meth:`TurnGuard.deferred` rightly leaves the
    block as it is; these tests are about the foreground, so they set the handler themselves.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def test_ctrl_c_while_the_turn_is_blocked_is_taken_at_once_and_the_turn_dropped() -> None:
    guard = TurnGuard()
    blocked, release, after = threading.Event(), threading.Event(), []

    def work() -> str:
        signal.raise_signal(signal.SIGINT)  # Ctrl+C, then a read that never ends by itself
        blocked.set()
        release.wait()
        try:
            TurnGuard.check()
        except TurnCancelled:
            after.append("cancelled")
        return "finished"

    with pytest.raises(KeyboardInterrupt), guard.deferred():
        guard.run(work)
    assert guard.cancelled.is_set()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    release.set()
    for thread in threading.enumerate():
        if thread.name == "llmcore-turn":
            thread.join()
    assert after == ["cancelled"]  # the worker's next display call would raise


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="needs pthread_kill")
def test_ctrl_c_delivered_to_another_thread_still_wakes_the_main_thread() -> None:
    """The kernel may hand SIGINT to any thread; the main thread must not sleep through it."""
    guard = TurnGuard()
    release = threading.Event()
    safety = threading.Timer(60, release.set)  # a safety net only: a regression fails, not hangs
    safety.start()

    def work() -> str:
        main = threading.main_thread().ident
        while getattr(sys._current_frames().get(main), "f_code", None) not in waits:
            pass  # until the main thread is in its wait (a barrier on its frame, not a delay)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)  # taken by this worker thread
        release.wait()
        return "finished"

    waits = {fn.__code__ for fn in _wait_functions()}

    try:
        with pytest.raises(KeyboardInterrupt), guard.deferred():
            guard.run(work)
        assert not release.is_set()  # woken by the signal, not by the safety net
    finally:
        safety.cancel()
        release.set()


def _wait_functions() -> list:
    from llmcore.chat import interrupt

    return [f for f in (getattr(interrupt, "_first", None), TurnGuard.run) if f is not None]


def test_ctrl_c_after_the_turn_ended_is_raised_once_the_block_is_done() -> None:
    guard = TurnGuard()
    done = []
    with pytest.raises(KeyboardInterrupt), guard.deferred():
        assert guard.run(lambda: "result") == "result"
        signal.raise_signal(signal.SIGINT)  # while the turn is saved and shown
        done.append("saved and shown")
    assert done == ["saved and shown"] and not guard.cancelled.is_set()


def test_errors_of_the_turn_reach_the_caller_and_the_handler_is_restored() -> None:
    guard = TurnGuard()

    def fail() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"), guard.deferred():
        guard.run(fail)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_off_the_main_thread_the_work_runs_in_place() -> None:
    seen = []

    def other() -> None:
        guard = TurnGuard()
        with guard.deferred():
            seen.append(guard.run(threading.current_thread))

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert seen == [thread]


def test_with_sigint_ignored_the_block_runs_as_it_is_and_the_signal_stays_ignored() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a background job of a non-interactive shell
    guard = TurnGuard()
    with guard.deferred():
        signal.raise_signal(signal.SIGINT)
        assert guard.run(threading.current_thread) is threading.main_thread()
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    assert not guard.cancelled.is_set()
