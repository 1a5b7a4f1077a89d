"""The emulator's cache entry stores: keyed entries (Anthropic) and prompt entries (OpenAI).

Both are thread-safe and hold expiry times on the emulator's clock. Entries become visible only
when :meth:`KeyStore.put` / :meth:`PromptStore.put` is called, which the server does when the
response that wrote them starts (PROVIDER-RULES §1.2 "Concurrency"): two identical requests in
flight together both miss.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from llmcore.tokens import BYTES_PER_TOKEN, common_prefix_len

__all__ = ["KeyStore", "PromptEntry", "PromptStore", "shared_prefix_tokens"]

_PRUNE_EVERY = 4096
"""Writes between two sweeps of expired entries."""


@dataclass(slots=True)
class _Expiry:
    expires: float
    ttl: float


class KeyStore:
    """Entries named by a hash key, each with a sliding expiry (Anthropic, PROVIDER-RULES §1.4)."""

    def __init__(self) -> None:
        self._entries: dict[bytes, _Expiry] = {}
        self._lock = threading.Lock()
        self._writes = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def live(self, key: bytes, now: float) -> bool:
        """Return whether ``key`` names an entry that has not expired at ``now`` (seconds)."""
        with self._lock:
            entry = self._entries.get(key)
            return entry is not None and now < entry.expires

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
                self._entries = {k: e for k, e in self._entries.items() if now < e.expires}

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._entries.clear()


@dataclass(slots=True)
class PromptEntry:
    """One cached OpenAI prompt: its items' bytes and tokens, and its expiry."""

    items: tuple[bytes, ...]
    """Each prefix item's bytes, in body order."""
    tokens: tuple[int, ...]
    """Each item's tokens (tokens.py)."""
    expires: float
    """Expiry on the emulator clock, seconds since the epoch."""
    ttl: float
    """Idle lifetime in seconds, restarted on every hit."""


def shared_prefix_tokens(
    items: tuple[bytes, ...], tokens: tuple[int, ...], entry: PromptEntry
) -> int:
    """Return the tokens two prompts share from the start (tokens.py, OpenAI rule).

    Every leading item that is byte-identical counts whole; inside the first item that differs,
    ``floor(common leading bytes / 4)`` tokens count.
    """
    total = 0
    for index, (mine, theirs) in enumerate(zip(items, entry.items, strict=False)):
        if mine == theirs:
            total += tokens[index]
            continue
        return total + common_prefix_len(mine, theirs) // BYTES_PER_TOKEN
    return total


class PromptStore:
    """Whole prompts per routing salt, matched by longest common prefix (PROVIDER-RULES §2.1)."""

    def __init__(self) -> None:
        self._entries: dict[bytes, list[PromptEntry]] = {}
        self._lock = threading.Lock()

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

    def touch(self, entry: PromptEntry, now: float) -> None:
        """Restart ``entry``'s idle lifetime at ``now`` (a hit)."""
        with self._lock:
            entry.expires = max(entry.expires, now + entry.ttl)

    def put(
        self, salt: bytes, items: tuple[bytes, ...], tokens: tuple[int, ...], now: float, ttl: float
    ) -> None:
        """Store a prompt; drop expired entries and live ones it extends that expire sooner."""
        new = PromptEntry(items=items, tokens=tokens, expires=now + ttl, ttl=ttl)
        with self._lock:
            kept = [
                entry
                for entry in self._entries.get(salt, ())
                if now < entry.expires
                and not (entry.expires <= new.expires and items[: len(entry.items)] == entry.items)
            ]
            kept.append(new)
            self._entries[salt] = kept

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._entries.clear()
