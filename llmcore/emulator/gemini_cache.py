"""Gemini context caching in the emulator: implicit prefix caching and ``cachedContents``.

Implicit caching (PROVIDER-RULES §4, §6 "Gemini implicit"): the prompt is the item list
``[systemInstruction + tools + toolConfig as one item, contents[0], contents[1], …]``; a request
shares with a live stored prompt of the same model and API key every leading identical item (and
inside the first differing item, its tokens in proportion to the shared bytes — the OpenAI
rule's :func:`~llmcore.emulator.store.shared_prefix_tokens`). ``cachedContentTokenCount`` is
that share when the prompt has at least the model's minimum (:func:`implicit_minimum`), else 0;
it is part of ``promptTokenCount``. A prompt of at least the minimum is stored when its
response starts and lives :data:`IMPLICIT_TTL_SECONDS` after its last use (the API says only
that implicit caches are short-lived: the emulator's choice).

Explicit caching (https://ai.google.dev/api/caching): ``cachedContents`` objects made by
``POST /v1beta/cachedContents`` hold ``contents``, ``systemInstruction``, ``tools`` and
``toolConfig`` for one model; their ``ttl`` defaults to 1 h (``3600s``) and can be changed by
``PATCH``; a request naming one (``cachedContent``) reads all its tokens, which come before the
request's own ``contents``. A cache below the model's minimum is refused, as the API does.
Storage is billed per token-hour: :meth:`CachedContents.storage_token_hours` adds it up.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from typing import Any, Final

from llmcore import jsonbytes
from llmcore.emulator.errors import Rejection
from llmcore.emulator.gemini_validate import camel
from llmcore.emulator.scan import MEMO, Spans
from llmcore.emulator.store import MemoryBudget, PromptEntry, PromptStore

__all__ = [
    "DEFAULT_TTL_SECONDS",
    "IMPLICIT_TTL_SECONDS",
    "CachedContents",
    "GeminiCache",
    "GeminiPlan",
    "implicit_minimum",
]

DEFAULT_TTL_SECONDS: Final = 3600.0
"""An explicit cache's lifetime when the create call gives none (PROVIDER-RULES §4: 1 h)."""
IMPLICIT_TTL_SECONDS: Final = 300.0
"""The emulator's idle lifetime of an implicit cache entry."""

_MINIMUMS: Final = (("gemini-2.5-flash", 1024), ("gemini-2.5-pro", 4096), ("gemini-3", 4096))
"""Minimum prompt tokens per model family (PROVIDER-RULES §4, snapshot 2025-12)."""


def implicit_minimum(model: str) -> int:
    """Return the fewest prompt tokens ``model`` caches (PROVIDER-RULES §4); 1,024 by default."""
    name = model.removeprefix("models/")
    for prefix, minimum in _MINIMUMS:
        if name.startswith(prefix):
            return minimum
    return 1024


def _head(body: dict[str, Any]) -> dict[str, Any]:
    keys = ("systemInstruction", "tools", "toolConfig")
    return {key: body[key] for key in keys if body.get(key) is not None}


def measure_items(values: list[Any], spans: Spans) -> tuple[tuple[bytes, ...], tuple[int, ...]]:
    """Return the key bytes and tokens of each prompt item (the emulator's own token counts)."""
    measured = [MEMO.measure(value, spans, "openai") for value in values]
    return tuple(m[0] for m in measured), tuple(m[1] for m in measured)


@dataclass(slots=True, kw_only=True)
class StoredCache:
    """One ``cachedContents`` object."""

    name: str
    model: str
    display_name: str
    items: tuple[bytes, ...]
    tokens: int
    create_time: float
    update_time: float
    expires: float
    contents: list[Any] = field(default_factory=list)
    head: dict[str, Any] = field(default_factory=dict)

    def resource(self, stamp: Any) -> dict[str, Any]:
        """Return the API's ``CachedContent`` object (``stamp`` formats a time as RFC 3339)."""
        out: dict[str, Any] = {"name": self.name, "model": self.model}
        if self.display_name:
            out["displayName"] = self.display_name
        out["createTime"] = stamp(self.create_time)
        out["updateTime"] = stamp(self.update_time)
        out["expireTime"] = stamp(self.expires)
        out["usageMetadata"] = {"totalTokenCount": self.tokens}
        return out


def _seconds(value: Any, where: str) -> float:
    if not isinstance(value, str) or not value.endswith("s"):
        raise Rejection(
            f"Invalid value at '{where}' (type.googleapis.com/google.protobuf.Duration)",
            error_type="INVALID_ARGUMENT",
        )
    try:
        seconds = float(value[:-1])
    except ValueError:
        raise Rejection(
            f"Invalid value at '{where}' (type.googleapis.com/google.protobuf.Duration)",
            error_type="INVALID_ARGUMENT",
        ) from None
    if seconds <= 0:
        raise Rejection("ttl must be positive", error_type="INVALID_ARGUMENT")
    return seconds


class CachedContents:
    """The explicit caches of one emulator, by API key (each key is its own project)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._caches: dict[tuple[str, str], StoredCache] = {}
        self._count = 0
        self.token_seconds = 0.0
        """Σ tokens × seconds stored over the caches that have ended (deleted or expired)."""

    def create(self, body: Any, org: str, now: float) -> StoredCache:
        """Create a cache from a ``POST /v1beta/cachedContents`` body.

        Raises:
            Rejection: No model, unknown fields, below the model's minimum.
        """
        allowed = {
            "model",
            "contents",
            "systemInstruction",
            "tools",
            "toolConfig",
            "ttl",
            "expireTime",
            "displayName",
        }
        if not isinstance(body, dict) or {camel(k) for k in body} - allowed:
            unknown = (
                sorted({camel(k) for k in body} - allowed)[0]
                if isinstance(body, dict)
                else "(root)"
            )
            raise Rejection(
                f'Invalid JSON payload received. Unknown name "{unknown}": Cannot find field.',
                error_type="INVALID_ARGUMENT",
            )
        body = {camel(key): value for key, value in body.items()}
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise Rejection("model is required", error_type="INVALID_ARGUMENT")
        model = model if model.startswith("models/") else f"models/{model}"
        head, contents = _head(body), list(body.get("contents") or [])
        items, tokens = measure_items([head, *contents] if head else contents, {})
        total, minimum = sum(tokens), implicit_minimum(model)
        if total < minimum:
            raise Rejection(
                f"Cached content is too small. total_token_count={total}, "
                f"min_total_token_count={minimum}",
                error_type="INVALID_ARGUMENT",
            )
        ttl = _seconds(body.get("ttl", f"{int(DEFAULT_TTL_SECONDS)}s"), "ttl")
        with self._lock:
            self._count += 1
            digest = hashlib.sha256(f"{org}|{self._count}".encode()).hexdigest()[:12]
            cache = StoredCache(
                name=f"cachedContents/{digest}",
                model=model,
                display_name=str(body.get("displayName") or ""),
                items=items,
                tokens=total,
                create_time=now,
                update_time=now,
                expires=now + ttl,
                contents=contents,
                head=head,
            )
            self._caches[(org, cache.name)] = cache
        return cache

    def get(self, name: str, org: str, now: float) -> StoredCache:
        """Return a live cache.

        Raises:
            Rejection: 403 ``PERMISSION_DENIED`` for an unknown or expired name, as the API.
        """
        with self._lock:
            self._expire(now)
            cache = self._caches.get((org, name))
        if cache is None:
            raise Rejection(
                "CachedContent not found (or permission denied)",
                status=403,
                error_type="PERMISSION_DENIED",
            )
        return cache

    def list(self, org: str, now: float) -> list[StoredCache]:
        """Return the live caches of ``org``, oldest first."""
        with self._lock:
            self._expire(now)
            return [c for (owner, _), c in self._caches.items() if owner == org]

    def patch(self, name: str, org: str, body: Any, now: float) -> StoredCache:
        """Set a new ``ttl`` (or ``expireTime`` as seconds from now, ``…s``) on a live cache."""
        cache = self.get(name, org, now)
        if not isinstance(body, dict) or "ttl" not in body:
            raise Rejection("only ttl can be updated", error_type="INVALID_ARGUMENT")
        with self._lock:
            self.token_seconds += cache.tokens * (now - cache.update_time)
            cache.expires = now + _seconds(body["ttl"], "ttl")
            cache.update_time = now
        return cache

    def delete(self, name: str, org: str, now: float) -> None:
        """Delete a live cache; its storage is billed up to ``now``."""
        cache = self.get(name, org, now)
        with self._lock:
            self.token_seconds += cache.tokens * (now - cache.update_time)
            self._caches.pop((org, name), None)

    def _expire(self, now: float) -> None:
        for key, cache in list(self._caches.items()):
            if now >= cache.expires:
                self.token_seconds += cache.tokens * (cache.expires - cache.update_time)
                del self._caches[key]

    def storage_token_hours(self, now: float) -> float:
        """Return Σ tokens × hours stored so far, live caches up to ``now`` (the storage bill)."""
        with self._lock:
            self._expire(now)
            live = sum(c.tokens * (now - c.update_time) for c in self._caches.values())
            return (self.token_seconds + live) / 3600.0

    def clear(self) -> None:
        """Forget every cache."""
        with self._lock:
            self._caches.clear()


@dataclass(frozen=True, slots=True, kw_only=True)
class GeminiPlan:
    """What one request reads and stores."""

    prompt_tokens: int
    """``promptTokenCount``: the explicit cache's tokens, then the request's own."""
    cached_tokens: int
    """``cachedContentTokenCount`` (part of ``prompt_tokens``)."""
    salt: bytes
    items: tuple[bytes, ...]
    tokens: tuple[int, ...]
    minimum: int
    hit: PromptEntry | None
    implicit: bool = True
    """Whether the prompt takes part in implicit caching (not when it names a cache)."""


class GeminiCache:
    """The implicit cache of one emulator (the module doc gives the rule)."""

    def __init__(self, budget: MemoryBudget | None = None) -> None:
        self.store = PromptStore(budget)

    def plan(
        self,
        body: dict[str, Any],
        model: str,
        org: str,
        now: float,
        spans: Spans,
        explicit: StoredCache | None,
    ) -> GeminiPlan:
        """Decide what ``body`` reads at ``now`` (seconds)."""
        head = _head(body)
        values = [head, *body["contents"]] if head else list(body["contents"])
        items, tokens = measure_items(values, spans)
        salt = jsonbytes.dumps(["gemini", org, model.removeprefix("models/")])
        minimum = implicit_minimum(model)
        if explicit is not None:
            total = explicit.tokens + sum(tokens)
            return GeminiPlan(
                prompt_tokens=total,
                cached_tokens=explicit.tokens,
                salt=salt,
                items=items,
                tokens=tokens,
                minimum=minimum,
                hit=None,
                implicit=False,
            )
        shared, hit = self.store.best(salt, items, tokens, now)
        total = sum(tokens)
        cached = shared if total >= minimum and shared >= minimum else 0
        return GeminiPlan(
            prompt_tokens=total,
            cached_tokens=cached,
            salt=salt,
            items=items,
            tokens=tokens,
            minimum=minimum,
            hit=hit if cached else None,
        )

    def commit(self, plan: GeminiPlan, now: float) -> None:
        """Store the prompt (at least the minimum) and refresh its hit: the response started."""
        if plan.hit is not None:
            self.store.touch(plan.salt, plan.hit, now)
        if plan.implicit and sum(plan.tokens) >= plan.minimum:
            self.store.put(plan.salt, plan.items, plan.tokens, now, IMPLICIT_TTL_SECONDS)
