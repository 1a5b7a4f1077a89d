"""Ctrl+C during a turn, taken at one point (SPEC S2, R2).

Python raises ``KeyboardInterrupt`` at whatever bytecode the main thread runs when SIGINT
arrives. Inside a turn that may be rich's live display (its buffer counter entered but not
left, its refresh thread started but not recorded as running), the HTTP client or a lock's
``__enter__``: state left half-changed, and the exit path that needs it (stopping the
spinner, saving the session, printing ``Interrupted``) can then wait forever or print
nothing. :class:`TurnGuard` keeps the interrupt out of that code:

* while a guarded block runs (:meth:`TurnGuard.deferred`), SIGINT only posts a message to a
  queue (``queue.SimpleQueue.put`` is safe in a signal handler) and never raises;
* the turn itself runs in a worker thread (:meth:`TurnGuard.run`), and the main thread waits
  on that queue: the first message is either the turn's outcome or the interrupt. The wait is
  a ``select`` on a socket that the worker writes when it ends and that is the signal wakeup
  fd (:func:`signal.set_wakeup_fd`), so the main thread wakes whichever thread the kernel
  delivered SIGINT to (a lock wait in the main thread would sleep on while the signal is
  taken by the worker, the spinner's refresh thread or the emulator's). On the
  interrupt, :attr:`TurnGuard.cancelled` is set and ``KeyboardInterrupt`` is raised *there*,
  in the main thread's own code; the worker's outcome, whenever it comes, is dropped, and its
  next call into the display raises :class:`TurnCancelled`, so it starts no tool and shows
  nothing after the interrupt;
* an interrupt that arrives after the turn's outcome (while it is committed, saved and shown)
  is raised when the guarded block ends, so a turn that was shown is also saved.

Outside the main thread (signals reach only the main thread) the guard runs the work in the
calling thread and changes nothing. It leaves out what a turn does (:mod:`llmcore.chat.agent`).
"""

from __future__ import annotations

import contextlib
import select
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from queue import Empty, SimpleQueue
from types import FrameType
from typing import Final, TypeVar

__all__ = ["TurnCancelled", "TurnGuard"]

T = TypeVar("T")

_LOCAL: Final = threading.local()
_INTERRUPT: Final = "interrupt"
_DONE: Final = "done"
_FAILED: Final = "failed"


class TurnCancelled(BaseException):  # noqa: N818 - a control-flow signal like KeyboardInterrupt
    """Raised in a turn's worker thread once the turn was interrupted (never reaches a user).

    A ``BaseException``, so a tool's ``except Exception`` does not turn it into a result.
    """


class TurnGuard:
    """Takes Ctrl+C at one point of a turn (see the module doc)."""

    def __init__(self) -> None:
        self._events: SimpleQueue[tuple[str, object]] | None = None
        self._wake: tuple[socket.socket, socket.socket] | None = None
        self.cancelled = threading.Event()
        """Set once an interrupt ended the turn of the current (or last) guarded block."""

    @contextmanager
    def deferred(self) -> Iterator[None]:
        """Run the block with SIGINT deferred; raise ``KeyboardInterrupt`` after it if one came.

        Nested, off the main thread, or when SIGINT has another handler than Python's default
        (ignored in a background job, or the host program's own): the block runs as it is.
        """
        if (
            self._events is not None
            or threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
        ):
            yield
            return
        events: SimpleQueue[tuple[str, object]] = SimpleQueue()

        def on_sigint(signum: int, frame: FrameType | None) -> None:
            events.put((_INTERRUPT, None))

        wake, woken = socket.socketpair()
        for end in (wake, woken):
            end.setblocking(False)
        previous_fd = signal.set_wakeup_fd(woken.fileno(), warn_on_full_buffer=False)
        previous = signal.signal(signal.SIGINT, on_sigint)
        self._events, self._wake = events, (wake, woken)
        self.cancelled = threading.Event()  # a worker left running keeps the one it was given
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)
            signal.set_wakeup_fd(previous_fd)
            self._events, self._wake = None, None
            wake.close()
            woken.close()
        if not self.cancelled.is_set() and _has_interrupt(events):
            raise KeyboardInterrupt

    def run(self, work: Callable[[], T]) -> T:
        """Return ``work()``, run in a worker thread inside :meth:`deferred`.

        Raises:
            KeyboardInterrupt: Ctrl+C came before ``work`` ended; :attr:`cancelled` is set and
                ``work``'s outcome will be dropped.
            BaseException: Whatever ``work`` raised.
        """
        events, ends = self._events, self._wake
        if events is None or ends is None:
            return work()
        cancelled = self.cancelled
        wake, woken = ends

        def worker() -> None:
            _LOCAL.cancelled = cancelled
            try:
                events.put((_DONE, work()))
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting main thread
                events.put((_FAILED, exc))
            with contextlib.suppress(OSError):  # closed once the block ended without it
                woken.send(b"\0")

        threading.Thread(target=worker, name="llmcore-turn", daemon=True).start()
        kind, value = _first(events, wake)
        if kind == _INTERRUPT:
            self.cancelled.set()
            raise KeyboardInterrupt
        if kind == _FAILED:
            assert isinstance(value, BaseException)
            raise value
        return value  # type: ignore[return-value]

    @staticmethod
    def check() -> None:
        """Raise :class:`TurnCancelled` in a turn's worker whose turn was interrupted."""
        cancelled = getattr(_LOCAL, "cancelled", None)
        if cancelled is not None and cancelled.is_set():
            raise TurnCancelled


def _first(events: SimpleQueue[tuple[str, object]], wake: socket.socket) -> tuple[str, object]:
    """The first message: wait on ``wake`` (the worker's byte, or a signal's) between looks."""
    while True:
        try:
            return events.get_nowait()
        except Empty:
            pass
        select.select([wake], [], [])  # a pending signal's handler runs before the next look
        with contextlib.suppress(OSError):
            while wake.recv(4096):
                pass


def _has_interrupt(events: SimpleQueue[tuple[str, object]]) -> bool:
    found = False
    while not events.empty():
        kind, _ = events.get_nowait()
        found = found or kind == _INTERRUPT
    return found
