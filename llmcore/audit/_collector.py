"""How often Python's cyclic garbage collector runs while an audit runs.

An audit allocates many objects that live until it ends (records, the items of every
request's prefix, the theoretical maximum's trie) and few cycles. With the default threshold
(a young-generation collection every 700 allocations) the collector walks those young objects
again and again: about a twentieth of ``llmcore audit``'s time on a keyed log, and a fifth of
the ``--jobs`` merge's. Collecting the youngest generation every 100,000 allocations frees
nothing later than the audit's end would, for a bounded number of young objects.

Leaves out: what an audit computes (:mod:`llmcore.audit._auditor`).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

__all__ = ["THRESHOLD", "fewer_collections"]

THRESHOLD: Final = (100_000, 50, 100)
"""The collector's thresholds while an audit runs (:func:`gc.set_threshold`'s arguments)."""

_lock = threading.Lock()
_running = 0
_saved: tuple[int, int, int] = (700, 10, 10)


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Run the block with :data:`THRESHOLD`; the caller's thresholds come back after it.

    Audits may run in several threads at once: the thresholds the first one found come back
    when the last one ends.
    """
    global _running, _saved
    with _lock:
        if _running == 0:
            _saved = gc.get_threshold()
            gc.set_threshold(*THRESHOLD)
        _running += 1
    try:
        yield
    finally:
        with _lock:
            _running -= 1
            if _running == 0:
                gc.set_threshold(*_saved)
