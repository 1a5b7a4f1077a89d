"""Bedrock Converse prompt-cache accounting (PROVIDER-RULES §5, §6 last row).

A validated Converse body is linearized into prefix items — each ``toolConfig.tools`` element,
each ``system`` block, each content block of each message, in that order — and every
``cachePoint`` block marks the item before it as a checkpoint (its ``ttl``: ``5m`` by default,
``1h`` where given). The rest is the Anthropic rule (:mod:`llmcore.emulator.anthropic_cache`):
a SHA-256 chain over (model, account, each item's bytes), the longest live prefix reachable
from a checkpoint within 20 boundaries is read, writes at every checkpoint whose prefix reaches
the model's minimum (Claude: the Anthropic table by model name; Nova: 1,000 tokens; nothing is
cached for other models), 5-minute entries refreshed on a hit
(https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html: "Cache checkpoints
have a minimum and maximum number of tokens", "The cache has a five minute Time To Live").

Usage (``inputTokens`` excludes both): ``cacheReadInputTokens`` = read, ``cacheWriteInputTokens``
= written, ``inputTokens`` = total − the last eligible checkpoint's prefix.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from llmcore import jsonbytes
from llmcore.emulator.anthropic_cache import (
    AnthropicCache,
    AnthropicPlan,
    PrefixItem,
    bill_plan,
    chain_keys,
)
from llmcore.emulator.tables import anthropic_min_tokens
from llmcore.emulator.tokencount import image_tokens, json_tokens, text_tokens

__all__ = ["NOVA_MIN_TOKENS", "ConverseCache", "converse_min_tokens", "linearize"]

NOVA_MIN_TOKENS: Final = 1000
"""Minimum tokens per checkpoint for Amazon Nova models (PROVIDER-RULES §5)."""


def converse_min_tokens(model: str) -> int | None:
    """Return the checkpoint minimum for a Bedrock model id, or ``None`` (no caching)."""
    lowered = model.lower()
    if "anthropic." in lowered:
        return anthropic_min_tokens(lowered.split("anthropic.", 1)[1])
    if "amazon.nova" in lowered:
        return NOVA_MIN_TOKENS
    return None


def _tokens(block: dict[str, Any]) -> tuple[int, int]:
    """Return (tokens, images) of one content block, tool or system block."""
    ((kind, value),) = block.items() if len(block) == 1 else (("other", block),)
    if kind == "text":
        return text_tokens(str(value)), 0
    if kind == "image":
        source = value.get("source") if isinstance(value, dict) else None
        data = source.get("bytes") if isinstance(source, dict) else None
        return image_tokens("anthropic", data if isinstance(data, str) else None), 1
    if kind == "toolResult" and isinstance(value, dict):
        texts = [c.get("text", "") for c in value.get("content", []) if isinstance(c, dict)]
        return sum(text_tokens(str(t)) for t in texts) + 4, 0
    return json_tokens(value), 0


def _item(path: str, level: str, tag: bytes, block: Any, ttl: list[str]) -> PrefixItem:
    tokens, images = _tokens(block) if isinstance(block, dict) else (0, 0)
    return PrefixItem(
        path=path,
        level=level,
        tag=tag,
        data=jsonbytes.dumps(block),
        tokens=tokens,
        images=images,
        cacheable=True,
        markers=tuple((f"{path}.cachePoint", t) for t in ttl),
    )


def _blocks(level: str, path: str, blocks: list[Any], tag: bytes) -> Iterator[PrefixItem]:
    """Yield the items of one array; a cachePoint marks the item before it."""
    pending: tuple[str, Any] | None = None
    for index, block in enumerate(blocks):
        if isinstance(block, dict) and "cachePoint" in block:
            point = block["cachePoint"]
            ttl = point.get("ttl", "5m") if isinstance(point, dict) else "5m"
            if pending is not None:
                yield _item(pending[0], level, tag, pending[1], [str(ttl)])
                pending = None
            continue
        if pending is not None:
            yield _item(pending[0], level, tag, pending[1], [])
        pending = (f"{path}.{index}", block)
    if pending is not None:
        yield _item(pending[0], level, tag, pending[1], [])


def linearize(body: dict[str, Any]) -> list[PrefixItem]:
    """Split a validated Converse body into prefix items: tools → system → messages."""
    config = body.get("toolConfig") or {}
    items = list(_blocks("tools", "toolConfig.tools", config.get("tools") or [], b""))
    items += _blocks("system", "system", body.get("system") or [], b"")
    for index, message in enumerate(body["messages"]):
        tag = b"m:" + str(message["role"]).encode("utf-8")
        items += _blocks("messages", f"messages.{index}.content", message["content"], tag)
    return items


class ConverseCache(AnthropicCache):
    """The Converse cache of one emulator: entries per account, model and prefix."""

    def plan_converse(
        self, body: dict[str, Any], model: str, org: str, now: float
    ) -> AnthropicPlan:
        """Decide what ``body`` reads and writes at time ``now`` (seconds)."""
        items = linearize(body)
        minimum = converse_min_tokens(model)
        points = [(index, item.markers[0][1]) for index, item in enumerate(items) if item.markers]
        if minimum is None:  # a model without prompt caching: nothing is read or written
            points, minimum = [], 0
        seed = b"converse\x00" + org.encode("utf-8") + b"\x00" + model.encode("utf-8")
        choice = (body.get("toolConfig") or {}).get("toolChoice")
        keys = chain_keys(seed, jsonbytes.dumps([choice]), items)
        totals: list[int] = []
        running = 0
        for item in items:
            running += item.tokens
            totals.append(running)
        hit = self._lookup(points, keys, totals, minimum, now)
        return bill_plan(points, keys, totals, minimum, hit, running)
