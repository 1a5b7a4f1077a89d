"""The emulator's time source (SPEC V2): the wall clock, or a clock tests move by hand.

Cache entries expire by this clock (PROVIDER-RULES §1.4, §2.1), and the ``created`` /
``created_at`` fields of responses read it. Nothing else in the emulator reads the time.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol

__all__ = ["Clock", "ManualClock", "SystemClock"]


class Clock(Protocol):
    """A source of the current time."""

    def now(self) -> float:
        """Return the current time in seconds since the Unix epoch."""
        ...


class SystemClock:
    """The wall clock (:func:`time.time`)."""

    def now(self) -> float:
        """Return :func:`time.time`."""
        return time.time()


class ManualClock:
    """A clock that only moves when told to; thread-safe.

    Args:
        start: The initial time in seconds since the Unix epoch (default 1,700,000,000).
    """

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._now = start
        self._lock = threading.Lock()

    def now(self) -> float:
        """Return the current manual time in seconds."""
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        """Move the clock forward by ``seconds``.

        Raises:
            ValueError: ``seconds`` is negative.
        """
        if seconds < 0:
            raise ValueError(f"a clock cannot go back ({seconds} s)")
        with self._lock:
            self._now += seconds

    def set(self, when: float) -> None:
        """Set the clock to ``when`` (seconds since the epoch); it may not go back.

        Raises:
            ValueError: ``when`` is earlier than the current time.
        """
        with self._lock:
            if when < self._now:
                raise ValueError(f"a clock cannot go back (from {self._now} to {when})")
            self._now = when
