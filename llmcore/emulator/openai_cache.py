"""OpenAI automatic prompt-cache accounting, Chat Completions and Responses (PROVIDER-RULES §2.1).

Prefix items (:mod:`llmcore.emulator.prefix`): the tool definitions as one item, the
``instructions`` string (Responses), each ``messages[i]`` / ``input[i]`` item (a string
``input`` is one item), tools first whatever the key order of the body. A request shares with a
live cached prompt every leading byte-identical item, plus, inside the first differing item, its
tokens in proportion to the leading bytes it shares; the longest share over live prompts is
floored to 1,024 + 128·k (:func:`openai_cacheable`), 0 below 1,024.

The tool definitions are matched as a whole (their item's bytes start with a digest of all of
them): a changed tool shares nothing, not the tools before it nor part of itself (recorded: a
tool's ``"strict": false`` → ``true`` read 0 where a byte-prefix rule read 3,968 tokens). Token
counts are the emulator's own (:mod:`llmcore.emulator.tokencount`); ``prompt_tokens`` also
counts the 3 tokens that prime the reply ("every reply is primed with
<|start|>assistant<|message|>", OpenAI cookbook *How to count tokens with tiktoken*, read
2026-12-02), never cached.

Prompts are routed by a *salt*: the endpoint, organization (API key), ``model``,
``prompt_cache_key`` and the structured-output schema (Chat ``response_format``, Responses
``text``) — a prompt only meets prompts with the same salt. A prompt of at least 1,024 tokens is
stored when its response starts and lives :data:`~llmcore.emulator.tables.OPENAI_RETENTION_SECONDS`
after its last use (``in_memory`` 10 minutes idle, ``24h``). The overflow rerouting above about
15 requests per minute per prefix is not modelled. ``cache_write_tokens`` is always 0
(PROVIDER-RULES §2.2).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Literal

from llmcore import jsonbytes
from llmcore.emulator.scan import MEMO, Spans
from llmcore.emulator.store import MemoryBudget, PromptEntry, PromptStore
from llmcore.emulator.tables import (
    OPENAI_CACHE_MIN,
    OPENAI_REPLY_PRIMING,
    OPENAI_RETENTION_SECONDS,
    openai_cacheable,
)
from llmcore.emulator.tokencount import FUNCTIONS_END

__all__ = ["OpenAICache", "OpenAIPlan", "openai_items", "prompt_tokens"]

Api = Literal["chat", "responses"]


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenAIPlan:
    """What one request reads and stores."""

    prompt_tokens: int
    """All prompt tokens (``prompt_tokens`` / ``input_tokens``, cached ones and the reply's
    priming included)."""
    cached_tokens: int
    """``cached_tokens``: 0 or 1,024 + 128·k."""
    salt: bytes
    """The routing salt."""
    items: tuple[bytes, ...]
    """The prompt's item bytes."""
    tokens: tuple[int, ...]
    """The prompt's item tokens."""
    ttl: float
    """Idle lifetime in seconds of the entry this prompt writes."""
    hit: PromptEntry | None
    """The entry read from, refreshed on commit."""


def openai_items(api: Api, body: dict[str, Any], history: list[Any]) -> list[Any]:
    """Return the parsed prefix items of a validated body, in prefix order.

    Args:
        api: ``"chat"`` or ``"responses"``.
        body: The validated body.
        history: Responses items stored under ``previous_response_id`` (empty otherwise),
            placed before ``input``.
    """
    items: list[Any] = list(body.get("tools") or [])
    if api == "chat":
        items.extend(body["messages"])
        return items
    if isinstance(body.get("instructions"), str):
        items.append(body["instructions"])
    items.extend(history)
    given = body.get("input", [])
    items.extend([given] if isinstance(given, str) else given)
    return items


def _measured(
    api: Api, body: dict[str, Any], history: list[Any], spans: Spans
) -> tuple[tuple[bytes, ...], tuple[int, ...]]:
    """Return the prompt's item bytes and tokens, the tool definitions as one item."""
    tools = list(body.get("tools") or [])
    rest = openai_items(api, body, history)[len(tools) :]
    measured = [MEMO.measure(item, spans, "openai") for item in rest]
    items = [data for data, _, _ in measured]
    tokens = [count for _, count, _ in measured]
    if tools:
        parts = [MEMO.measure(tool, spans, "openai_tool") for tool in tools]
        joined = b"".join(len(data).to_bytes(8, "big") + data for data, _, _ in parts)
        items.insert(0, hashlib.sha256(joined).digest() + joined)
        tokens.insert(0, sum(count for _, count, _ in parts) + FUNCTIONS_END)
    return tuple(items), tuple(tokens)


def prompt_tokens(api: Api, body: dict[str, Any], history: list[Any], spans: Spans) -> int:
    """The prompt tokens a validated body is billed: its items and the reply priming."""
    return sum(_measured(api, body, history, spans)[1]) + OPENAI_REPLY_PRIMING


class OpenAICache:
    """The OpenAI prompt cache of one emulator.

    Args:
        budget: The memory budget its entries are charged to (default: a private one).
    """

    def __init__(self, budget: MemoryBudget | None = None) -> None:
        self.store = PromptStore(budget)

    def plan(
        self,
        api: Api,
        body: dict[str, Any],
        history: list[Any],
        org: str,
        now: float,
        spans: Spans | None = None,
    ) -> OpenAIPlan:
        """Decide what ``body`` reads at ``now`` (seconds) and what it will store.

        Args:
            api: ``"chat"`` or ``"responses"``.
            body: A validated body.
            history: Items from ``previous_response_id`` (Responses), else empty.
            org: The API key the client sent (caches are per organization).
            now: The emulator clock.
            spans: Item source texts (memo keys), when the body was read with ``scan_body``.
        """
        items, tokens = _measured(api, body, history, spans if spans is not None else {})
        schema = body.get("response_format") if api == "chat" else body.get("text")
        salt = jsonbytes.dumps([api, org, body.get("model"), body.get("prompt_cache_key"), schema])
        retention = body.get("prompt_cache_retention") or "in_memory"
        shared, hit = self.store.best(salt, items, tokens, now)
        total = sum(tokens)
        cached = openai_cacheable(shared) if total >= OPENAI_CACHE_MIN else 0
        return OpenAIPlan(
            prompt_tokens=total + OPENAI_REPLY_PRIMING,
            cached_tokens=cached,
            salt=salt,
            items=items,
            tokens=tokens,
            ttl=OPENAI_RETENTION_SECONDS[str(retention)],
            hit=hit if cached else None,
        )

    def commit(self, plan: OpenAIPlan, now: float) -> None:
        """Store ``plan``'s prompt (if ≥ 1,024 tokens) and refresh its hit: the response started."""
        if plan.hit is not None:
            self.store.touch(plan.salt, plan.hit, now)
        if sum(plan.tokens) >= OPENAI_CACHE_MIN:
            self.store.put(plan.salt, plan.items, plan.tokens, now, plan.ttl)
