"""The emulator's cache entry stores: keyed entries (Anthropic) and prompt entries (OpenAI).

Both are thread-safe and hold expiry times on the emulator's clock. Entries become visible only
when :meth:`KeyStore.put` / :meth:`PromptStore.put` is called, which the server does when the
response that wrote them starts (PROVIDER-RULES §1.2 "Concurrency"): two identical requests in
flight together both miss.

Memory is bounded: every entry is charged its estimated size in bytes to a
:class:`MemoryBudget` shared by the stores of one emulator (default
:data:`DEFAULT_CACHE_BYTES`), which evicts the least recently used entries once the total goes
over. A write, a refresh or a hit counts as use. Eviction under memory pressure is a
**deviation** from the real providers, which keep an entry for its whole TTL; with the default
budget it happens only after tens of thousands of distinct cached prompts.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, cast

from llmcore.emulator.tokencount import common_prefix_len

__all__ = [
    "DEFAULT_CACHE_BYTES",
    "KeyStore",
    "MemoryBudget",
    "PromptEntry",
    "PromptStore",
    "ObjectStore",
    "ResponseStore",
    "shared_prefix_tokens",
]

DEFAULT_CACHE_BYTES = 128 * 1024 * 1024
"""Default budget in bytes (128 MiB) for all cache entries and stored Responses of one emulator."""

_PRUNE_EVERY = 4096
"""Writes between two sweeps of expired entries."""
KEY_ENTRY_BYTES = 320
"""Estimated bytes of one Anthropic key entry (32-byte key, expiry record, dict and LRU slots)."""
PROMPT_ENTRY_BYTES = 400
"""Estimated fixed bytes of one OpenAI prompt entry, before its items."""
PROMPT_ITEM_BYTES = 80
"""Estimated bytes per prompt item besides its own bytes (``bytes`` header, token int, slots)."""


class _Evictable(Protocol):
    def _evict(self, key: Hashable) -> None: ...


class MemoryBudget:
    """A least-recently-used ledger of entries, by estimated bytes, over several stores.

    Stores charge each entry they hold (:meth:`charge`), mark it used (:meth:`touch`) and
    release it when they drop it themselves (:meth:`release`). When the total goes over
    :attr:`limit`, the least recently used entries are evicted from their stores (an entry
    larger than the whole budget is evicted at once). Every store sharing a budget uses its
    :attr:`lock`, so one request's lookups and writes see one consistent state.

    Args:
        limit: Most bytes held (estimated); default :data:`DEFAULT_CACHE_BYTES`.

    Raises:
        ValueError: ``limit`` is not positive.
    """

    def __init__(self, limit: int = DEFAULT_CACHE_BYTES) -> None:
        if limit <= 0:
            raise ValueError(f"the cache budget must be positive, not {limit}")
        self.limit = limit
        """Most bytes held, estimated."""
        self.used = 0
        """Bytes held now, estimated."""
        self.evictions = 0
        """Entries evicted so far."""
        self.lock = threading.RLock()
        """The lock of every store sharing this budget."""
        self._order: OrderedDict[tuple[_Evictable, Hashable], int] = OrderedDict()

    def __len__(self) -> int:
        with self.lock:
            return len(self._order)

    def charge(self, owner: _Evictable, key: Hashable, size: int) -> None:
        """Record ``owner``'s entry ``key`` at ``size`` bytes as most recently used; evict.

        Charging a key again replaces its size. Eviction calls ``owner._evict(key)`` on the
        least recently used entries (possibly this one) until the total fits.
        """
        with self.lock:
            slot = (owner, key)
            self.used += size - self._order.pop(slot, 0)
            self._order[slot] = size
            while self.used > self.limit and self._order:
                (victim, victim_key), victim_size = self._order.popitem(last=False)
                self.used -= victim_size
                self.evictions += 1
                victim._evict(victim_key)

    def touch(self, owner: _Evictable, key: Hashable) -> None:
        """Mark ``owner``'s entry ``key`` most recently used (a hit or a refresh)."""
        with self.lock:
            slot = (owner, key)
            if slot in self._order:
                self._order.move_to_end(slot)

    def release(self, owner: _Evictable, key: Hashable) -> None:
        """Forget ``owner``'s entry ``key`` (the store dropped it, e.g. expired)."""
        with self.lock:
            self.used -= self._order.pop((owner, key), 0)

    def release_all(self, owner: _Evictable) -> None:
        """Forget every entry of ``owner`` (the store was cleared)."""
        with self.lock:
            for slot in [slot for slot in self._order if slot[0] is owner]:
                self.used -= self._order.pop(slot)


@dataclass(slots=True)
class _Expiry:
    expires: float
    ttl: float


class KeyStore:
    """Entries named by a hash key, each with a sliding expiry (Anthropic, PROVIDER-RULES §1.4).

    Args:
        budget: The memory budget it shares (default: a private one of the default size).
    """

    def __init__(self, budget: MemoryBudget | None = None) -> None:
        self._budget = budget if budget is not None else MemoryBudget()
        self._entries: dict[bytes, _Expiry] = {}
        self._lock = self._budget.lock
        self._writes = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def _evict(self, key: Hashable) -> None:
        self._entries.pop(cast(bytes, key), None)

    def live(self, key: bytes, now: float) -> bool:
        """Return whether ``key`` names an entry that has not expired at ``now`` (seconds).

        A live entry found counts as used (least-recently-used order).
        """
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or now >= entry.expires:
                return False
            self._budget.touch(self, key)
            return True

    def put(self, key: bytes, now: float, ttl: float) -> None:
        """Write or refresh ``key`` so it lives at least ``ttl`` seconds from ``now``.

        A live entry keeps the longer of its TTL and ``ttl``; an expired one is replaced.
        """
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or now >= entry.expires:
                self._entries[key] = _Expiry(now + ttl, ttl)
            else:
                entry.ttl = max(entry.ttl, ttl)
                entry.expires = max(entry.expires, now + entry.ttl)
            self._writes += 1
            if self._writes % _PRUNE_EVERY == 0:
                self._prune(now)
            self._budget.charge(self, key, KEY_ENTRY_BYTES + len(key))

    def _prune(self, now: float) -> None:
        for key in [k for k, e in self._entries.items() if now >= e.expires]:
            del self._entries[key]
            self._budget.release(self, key)

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._entries.clear()
            self._budget.release_all(self)


@dataclass(slots=True, eq=False)
class PromptEntry:
    """One cached OpenAI prompt: its items' bytes and tokens, and its expiry.

    Compared and hashed by identity (it is a ledger key of :class:`MemoryBudget`).
    """

    items: tuple[bytes, ...]
    """Each prefix item's bytes, in body order."""
    tokens: tuple[int, ...]
    """Each item's estimated tokens (:mod:`llmcore.emulator.tokencount`)."""
    expires: float
    """Expiry on the emulator clock, seconds since the epoch."""
    ttl: float
    """Idle lifetime in seconds, restarted on every hit."""

    @property
    def size(self) -> int:
        """Estimated bytes held by the entry."""
        items = sum(len(item) for item in self.items)
        return PROMPT_ENTRY_BYTES + items + PROMPT_ITEM_BYTES * len(self.items)


def shared_prefix_tokens(
    items: tuple[bytes, ...], tokens: tuple[int, ...], entry: PromptEntry
) -> int:
    """Return the tokens two prompts share from the start (the OpenAI rule).

    Every leading item that is byte-identical counts whole; inside the first item that differs,
    its tokens count in proportion to the leading bytes it shares (floored).
    """
    total = 0
    for index, (mine, theirs) in enumerate(zip(items, entry.items, strict=False)):
        if mine == theirs:
            total += tokens[index]
            continue
        return total + tokens[index] * common_prefix_len(mine, theirs) // max(1, len(mine))
    return total


class PromptStore:
    """Whole prompts per routing salt, matched by longest common prefix (PROVIDER-RULES §2.1).

    Args:
        budget: The memory budget it shares (default: a private one of the default size).
    """

    def __init__(self, budget: MemoryBudget | None = None) -> None:
        self._budget = budget if budget is not None else MemoryBudget()
        self._entries: dict[bytes, list[PromptEntry]] = {}
        self._lock = self._budget.lock

    def __len__(self) -> int:
        with self._lock:
            return sum(len(entries) for entries in self._entries.values())

    def _evict(self, key: Hashable) -> None:
        salt, entry = cast("tuple[bytes, PromptEntry]", key)
        entries = self._entries.get(salt)
        if entries is None:
            return
        kept = [other for other in entries if other is not entry]
        if kept:
            self._entries[salt] = kept
        else:
            del self._entries[salt]

    def best(
        self, salt: bytes, items: tuple[bytes, ...], tokens: tuple[int, ...], now: float
    ) -> tuple[int, PromptEntry | None]:
        """Return the longest shared prefix in tokens with a live entry, and that entry."""
        best, found = 0, None
        with self._lock:
            for entry in self._entries.get(salt, ()):
                if now >= entry.expires:
                    continue
                shared = shared_prefix_tokens(items, tokens, entry)
                if shared > best:
                    best, found = shared, entry
        return best, found

    def touch(self, salt: bytes, entry: PromptEntry, now: float) -> None:
        """Restart ``entry``'s idle lifetime at ``now`` (a hit); it counts as used.

        Args:
            salt: The routing salt it is stored under.
            entry: The entry :meth:`best` returned.
            now: The emulator clock, seconds.
        """
        with self._lock:
            entry.expires = max(entry.expires, now + entry.ttl)
            self._budget.touch(self, (salt, entry))

    def put(
        self, salt: bytes, items: tuple[bytes, ...], tokens: tuple[int, ...], now: float, ttl: float
    ) -> None:
        """Store a prompt; drop expired entries and live ones it extends that expire sooner."""
        new = PromptEntry(items=items, tokens=tokens, expires=now + ttl, ttl=ttl)
        with self._lock:
            kept: list[PromptEntry] = []
            for entry in self._entries.get(salt, ()):
                if now < entry.expires and not (
                    entry.expires <= new.expires and items[: len(entry.items)] == entry.items
                ):
                    kept.append(entry)
                else:
                    self._budget.release(self, (salt, entry))
            kept.append(new)
            self._entries[salt] = kept
            self._budget.charge(self, (salt, new), new.size)

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._entries.clear()
            self._budget.release_all(self)


class ResponseStore:
    """Stored Responses for ``previous_response_id``: id → the conversation's items so far.

    Each stored response is charged the estimated size of its whole item list (items shared
    with the response it continues are counted again, so the estimate errs high). An evicted
    response is gone as if never stored: ``previous_response_id`` naming it gets the same 400
    ``previous_response_not_found`` as an unknown id (PROVIDER-RULES §2.4).

    Args:
        budget: The memory budget it shares (default: a private one of the default size).
    """

    def __init__(self, budget: MemoryBudget | None = None) -> None:
        self._budget = budget if budget is not None else MemoryBudget()
        self._entries: dict[str, tuple[list[Any], int]] = {}
        self._objects: dict[str, tuple[Any, int]] = {}
        self._lock = self._budget.lock

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def _evict(self, key: Hashable) -> None:
        self._entries.pop(str(key), None)
        self._objects.pop(str(key), None)

    def get(self, ident: str) -> tuple[list[Any], int] | None:
        """Return the items stored under ``ident`` and their estimated bytes; counts as use."""
        with self._lock:
            found = self._entries.get(ident)
            if found is not None:
                self._budget.touch(self, ident)
            return found

    def put(
        self, ident: str, items: list[Any], size: int, response: Any = None, inputs: int = 0
    ) -> None:
        """Store ``items`` (the whole conversation so far) under ``ident``, ``size`` bytes.

        Args:
            ident: The response id.
            items: Every item so far (history, this request's input, its output).
            size: Estimated bytes.
            response: The ``response`` object, for ``GET /v1/responses/{id}``.
            inputs: How many of ``items`` are its input items (history and input).
        """
        with self._lock:
            self._entries[ident] = (items, size)
            self._objects[ident] = (response, inputs)
            self._budget.charge(self, ident, size)

    def response(self, ident: str) -> tuple[Any, list[Any]] | None:
        """Return the stored ``response`` object and its input items, or ``None``."""
        with self._lock:
            found = self._objects.get(ident)
            if found is None:
                return None
            self._budget.touch(self, ident)
            return found[0], self._entries[ident][0][: found[1]]

    def delete(self, ident: str) -> bool:
        """Forget the response ``ident``; return whether it was stored."""
        with self._lock:
            if self._entries.pop(ident, None) is None:
                return False
            self._objects.pop(ident, None)
            self._budget.release(self, ident)
            return True

    def clear(self) -> None:
        """Drop every stored response."""
        with self._lock:
            self._entries.clear()
            self._objects.clear()
            self._budget.release_all(self)


T = TypeVar("T")


class ObjectStore(Generic[T]):
    """Objects by id (batches, conversations), charged to a memory budget and evicted with it.

    Subclasses add their objects with :meth:`_add` and read them with :meth:`_find`, holding
    :attr:`_lock` (the budget's lock).

    Args:
        budget: The shared memory budget.
    """

    def __init__(self, budget: MemoryBudget) -> None:
        self._budget = budget
        self._lock: threading.RLock = budget.lock
        self._entries: dict[str, T] = {}
        self._count = 0

    def _evict(self, key: Hashable) -> None:
        self._entries.pop(str(key), None)

    def clear(self) -> None:
        """Forget every object."""
        with self._lock:
            self._entries.clear()
            self._budget.release_all(self)

    def _add(self, ident: str, value: T, size: int) -> None:
        self._entries[ident] = value
        self._budget.charge(self, ident, size)

    def _next(self) -> int:
        self._count += 1
        return self._count

    def _find(self, ident: str) -> T | None:
        found = self._entries.get(ident)
        if found is not None:
            self._budget.touch(self, ident)
        return found

    def _drop(self, ident: str) -> None:
        del self._entries[ident]
        self._budget.release(self, ident)
