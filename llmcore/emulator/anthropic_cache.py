"""Anthropic prompt-cache accounting (PROVIDER-RULES §1.2–§1.6, §6 first row).

A validated Messages body is linearized into prefix items: each tool definition, each
``system`` block (a string ``system`` is one item), each content block of each message (a
string ``content`` is one item). The cache key after item ``i`` is a SHA-256 chain over
(model, organization, each item's role tag and bytes up to ``i``); message items also hash the
*messages-level salt* — ``tool_choice``, ``thinking`` and whether any image is in the request —
so toggling those keeps the tools and system levels and misses the messages level (§1.6).

Breakpoints are the items carrying ``cache_control`` (a marker nested in a ``tool_result``'s
content marks its block), plus, in automatic mode (top-level ``cache_control``), the last
cacheable item. At most 4 (a 5th is refused), and a ``1h`` one never after a ``5m`` one.

For each breakpoint ``b`` the lookup checks the entry after ``b``, then up to
:data:`~llmcore.emulator.tables.LOOKBACK_BLOCKS` earlier boundaries; the longest live prefix
over all breakpoints is the read ``A``. Writes go to every breakpoint whose prefix reaches the
model's minimum; below it nothing is read or written and no error is raised. Billing: ``B`` is
the prefix at the highest 1-hour breakpoint after ``A`` (else ``A``), ``C`` the prefix at the
last breakpoint (``A`` when none reaches the minimum); read ``A``, 1-hour write ``B−A``, 5-minute
write ``C−B``, ``input_tokens`` = total − ``C``.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from llmcore import jsonbytes
from llmcore.emulator.errors import Rejection
from llmcore.emulator.prefix import Kind
from llmcore.emulator.scan import MEMO, Spans
from llmcore.emulator.store import KeyStore, MemoryBudget
from llmcore.emulator.tables import (
    ANTHROPIC_TTL_SECONDS,
    LOOKBACK_BLOCKS,
    MAX_BREAKPOINTS,
    anthropic_min_tokens,
    anthropic_token_scale,
)
from llmcore.emulator.tokencount import tool_prompt_tokens

__all__ = ["AnthropicCache", "AnthropicPlan", "AnthropicUsage", "PrefixItem", "linearize"]

_UNCACHEABLE = frozenset({"thinking", "redacted_thinking"})
_TTL_ORDER = (
    "a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. "
    "Note that blocks are processed in the following order: `tools`, `system`, `messages`."
)


@dataclass(frozen=True, slots=True, kw_only=True)
class PrefixItem:
    """One block of an Anthropic request's prefix."""

    path: str
    """Where it sits in the body, in the API's error notation (``messages.3.content.0``)."""
    level: str
    """``tools``, ``system`` or ``messages``."""
    tag: bytes
    """Role and message-boundary tag hashed before the bytes (``b""`` outside messages)."""
    data: bytes
    """Cache-key bytes: compact JSON without cache markers (:mod:`llmcore.emulator.prefix`)."""
    tokens: int
    """Estimated tokens (:mod:`llmcore.emulator.tokencount`)."""
    images: int
    """Images inside the item."""
    cacheable: bool
    """Whether it may carry a breakpoint (not empty text, not thinking)."""
    markers: tuple[tuple[str, str], ...]
    """``(path of the cache_control, ttl)`` for each marker on or inside the item."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AnthropicUsage:
    """Input-side usage in tokens, as the API reports it (PROVIDER-RULES §1.5)."""

    input_tokens: int
    """Tokens after the last breakpoint (neither read nor written)."""
    cache_read: int
    """``cache_read_input_tokens`` (A)."""
    cache_write_5m: int
    """``ephemeral_5m_input_tokens`` (C−B)."""
    cache_write_1h: int
    """``ephemeral_1h_input_tokens`` (B−A)."""

    @property
    def cache_write(self) -> int:
        """``cache_creation_input_tokens`` = 5-minute + 1-hour writes."""
        return self.cache_write_5m + self.cache_write_1h


@dataclass(frozen=True, slots=True, kw_only=True)
class AnthropicPlan:
    """What a request reads and the entries it writes when its response starts."""

    usage: AnthropicUsage
    """The usage to report."""
    writes: tuple[tuple[bytes, float], ...]
    """``(key, ttl seconds)`` to put, the hit entry included (its refresh)."""


def _ttl(marker: Any) -> str:
    ttl = marker.get("ttl", "5m") if isinstance(marker, dict) else "5m"
    return ttl if isinstance(ttl, str) else "5m"


def _markers(block: Any, path: str) -> tuple[tuple[str, str], ...]:
    """Return the cache markers on ``block`` and on its nested ``tool_result`` content."""
    if not isinstance(block, dict):
        return ()
    found: list[tuple[str, str]] = []
    if block.get("cache_control") is not None:  # a null cache_control is no breakpoint
        found.append((f"{path}.cache_control", _ttl(block["cache_control"])))
    inner = block.get("content")
    if block.get("type") == "tool_result" and isinstance(inner, list):
        for index, sub in enumerate(inner):
            if isinstance(sub, dict) and sub.get("cache_control") is not None:
                found.append((f"{path}.content.{index}.cache_control", _ttl(sub["cache_control"])))
    return tuple(found)


def _cacheable(block: Any) -> bool:
    if isinstance(block, str):
        return block != ""
    kind = block.get("type")
    if isinstance(kind, str) and kind in _UNCACHEABLE:  # "type" may be any JSON value
        return False
    return not (block.get("type") == "text" and block.get("text") == "")


def _item(path: str, level: str, tag: bytes, block: Any, spans: Spans) -> PrefixItem:
    kind: Kind = "anthropic_tool" if level == "tools" else "anthropic"
    data, tokens, images = MEMO.measure(block, spans, kind)
    return PrefixItem(
        path=path,
        level=level,
        tag=tag,
        data=data,
        tokens=tokens,
        images=images,
        cacheable=_cacheable(block),
        markers=_markers(block, path),
    )


def _message_items(messages: list[Any], spans: Spans) -> Iterator[PrefixItem]:
    for m_index, message in enumerate(messages):
        role = str(message.get("role", "")).encode("utf-8")
        content = message.get("content")
        blocks = [content] if isinstance(content, str) else content
        for b_index, block in enumerate(blocks):
            tag = b"m:" + role + (b":start" if b_index == 0 else b"")
            path = (
                f"messages.{m_index}"
                if isinstance(content, str)
                else (f"messages.{m_index}.content.{b_index}")
            )
            yield _item(path, "messages", tag, block, spans)


def linearize(body: dict[str, Any], spans: Spans | None = None) -> list[PrefixItem]:
    """Split a validated Messages body into prefix items: tools → system → messages.

    Args:
        body: The parsed request body (already checked by the validator).
        spans: Item source texts from :func:`~llmcore.emulator.scan.scan_body` (memo keys).

    Returns:
        The items in prefix order, whatever the key order of the body. Tools marked
        ``defer_loading: true`` are not among them: "Deferred tools are not included in the
        system-prompt prefix" (Anthropic, *Tool use with prompt caching*). With ``tools``, the
        first item and the first message block also count the tool-use system prompt
        (:func:`~llmcore.emulator.tokencount.tool_prompt_tokens`); a model with a newer
        tokenizer scales every count (:data:`~llmcore.emulator.tables.ANTHROPIC_TOKEN_SCALE`).
    """
    spans = spans if spans is not None else {}
    items = [
        _item(f"tools.{index}", "tools", b"", tool, spans)
        for index, tool in enumerate(body.get("tools") or ())
        if not (isinstance(tool, dict) and tool.get("defer_loading") is True)
    ]
    system = body.get("system")
    if isinstance(system, str) and system:
        items.append(_item("system", "system", b"", system, spans))
    elif isinstance(system, list):
        items.extend(
            _item(f"system.{i}", "system", b"", block, spans) for i, block in enumerate(system)
        )
    items.extend(_message_items(body.get("messages") or [], spans))
    model = str(body.get("model", ""))
    scale = anthropic_token_scale(model)
    if scale != 1.0:
        items = [replace(item, tokens=math.ceil(item.tokens * scale)) for item in items]
    if body.get("tools") and items:
        shared, by_choice = tool_prompt_tokens(model, body.get("tool_choice"))
        items[0] = replace(items[0], tokens=items[0].tokens + shared)
        first = next((i for i, item in enumerate(items) if item.level == "messages"), 0)
        items[first] = replace(items[first], tokens=items[first].tokens + by_choice)
    return items


def breakpoints(body: dict[str, Any], items: list[PrefixItem]) -> list[tuple[int, str]]:
    """Return ``(item index, ttl)`` of each breakpoint, checking the count and TTL order.

    Raises:
        Rejection: More than 4 markers (``A maximum of 4 blocks with cache_control may be
            provided. Found N.``), or a ``1h`` marker after a ``5m`` one (PROVIDER-RULES §1.2,
            §1.4).
    """
    found: list[tuple[int, str, str]] = []
    for index, item in enumerate(items):
        found.extend((index, ttl, path) for path, ttl in item.markers)
    auto = body.get("cache_control")
    if isinstance(auto, dict):
        last = max((i for i, item in enumerate(items) if item.cacheable), default=None)
        if last is not None and not items[last].markers:
            found.append((last, _ttl(auto), f"{items[last].path}.cache_control"))
    if len(found) > MAX_BREAKPOINTS:
        raise Rejection(
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {len(found)}."
        )
    seen_5m = False
    for _, ttl, path in found:
        if ttl == "1h" and seen_5m:
            raise Rejection(f"{path}.ttl: {_TTL_ORDER}")
        seen_5m = seen_5m or ttl == "5m"
    by_index: dict[int, str] = {}
    for index, ttl, _ in found:
        by_index[index] = "1h" if ttl == "1h" or by_index.get(index) == "1h" else ttl
    return sorted(by_index.items())


def messages_salt(body: dict[str, Any], items: list[PrefixItem]) -> bytes:
    """Return what the messages level hashes besides its blocks (PROVIDER-RULES §1.6)."""
    choice = body.get("tool_choice", {"type": "auto"})
    thinking = body.get("thinking", {"type": "disabled"})
    images = any(item.images for item in items)
    return jsonbytes.dumps([choice, thinking, images])


def tool_set_digest(items: list[PrefixItem]) -> bytes:
    """Return a digest of every tool definition in the prefix, hashed into every key.

    "Modifying tool definitions (names, descriptions, parameters) invalidates the entire
    cache" (PROVIDER-RULES §1.6, [A-PC] "What invalidates the cache": tool definitions ✘ for
    tools, system and messages): a changed tool misses every level, even at boundaries before
    it (recorded: a tool's ``"strict": false`` → ``true`` read nothing).
    """
    tools = hashlib.sha256()
    for item in items:
        if item.level == "tools":
            tools.update(len(item.data).to_bytes(8, "big") + item.data)
    return b"\x00tools:" + tools.digest()


def chain_keys(seed: bytes, salt: bytes, items: list[PrefixItem]) -> list[bytes]:
    """Return the cumulative cache key after each item."""
    keys: list[bytes] = []
    state = hashlib.sha256(seed).digest()
    salted = False
    for item in items:
        if item.level == "messages" and not salted:
            state = hashlib.sha256(state + b"salt:" + salt).digest()
            salted = True
        step = hashlib.sha256(state)
        step.update(item.level.encode() + b"|" + item.tag + b"|")
        step.update(item.data)
        state = step.digest()
        keys.append(state)
    return keys


class AnthropicCache:
    """The Anthropic cache of one emulator: entries per organization, model and prefix.

    Args:
        budget: The memory budget its entries are charged to (default: a private one).
    """

    def __init__(self, budget: MemoryBudget | None = None) -> None:
        self.store = KeyStore(budget)

    def plan(
        self, body: dict[str, Any], org: str, now: float, spans: Spans | None = None
    ) -> AnthropicPlan:
        """Decide what ``body`` reads and writes at time ``now`` (seconds).

        Args:
            body: A validated Messages body.
            spans: Item source texts (memo keys), when the body was read with ``scan_body``.
            org: The organization the cache is isolated by (the API key the client sent).
            now: The emulator clock.

        Returns:
            The usage and the writes to commit when the response starts.

        Raises:
            Rejection: The breakpoints break the count or TTL-order rules.
        """
        items = linearize(body, spans)
        points = breakpoints(body, items)
        model = str(body.get("model", ""))
        seed = b"anthropic\x00" + org.encode("utf-8") + b"\x00" + model.encode("utf-8")
        seed += tool_set_digest(items)
        keys = chain_keys(seed, messages_salt(body, items), items)
        totals: list[int] = []
        running = 0
        for item in items:
            running += item.tokens
            totals.append(running)
        minimum = anthropic_min_tokens(model)
        hit = self._lookup(points, keys, totals, minimum, now)
        return bill_plan(points, keys, totals, minimum, hit, running)

    def _lookup(
        self,
        points: list[tuple[int, str]],
        keys: list[bytes],
        totals: list[int],
        minimum: int,
        now: float,
    ) -> int:
        """Return the index of the longest live entry reachable from a breakpoint, or -1."""
        best = -1
        for point, _ in points:
            for index in range(point, max(point - LOOKBACK_BLOCKS, 0) - 1, -1):
                if index <= best or totals[index] < minimum:
                    break
                if self.store.live(keys[index], now):
                    best = index
                    break
        return best

    def commit(self, plan: AnthropicPlan, now: float) -> None:
        """Make ``plan``'s entries visible and refresh its hit (the response has started)."""
        for key, ttl in plan.writes:
            self.store.put(key, now, ttl)


def bill_plan(
    points: list[tuple[int, str]],
    keys: list[bytes],
    totals: list[int],
    minimum: int,
    hit: int,
    total: int,
) -> AnthropicPlan:
    """Apply the mixed-TTL billing rule (PROVIDER-RULES §1.4) to a lookup result."""
    eligible = [(index, ttl) for index, ttl in points if totals[index] >= minimum]
    read = totals[hit] if hit >= 0 else 0
    last = totals[eligible[-1][0]] if eligible else read
    one_hour = [totals[index] for index, ttl in eligible if ttl == "1h" and index > hit]
    upper_1h = max(one_hour, default=read)
    writes = [(keys[index], ANTHROPIC_TTL_SECONDS[ttl]) for index, ttl in eligible]
    if hit >= 0 and all(index != hit for index, _ in eligible):
        writes.append((keys[hit], ANTHROPIC_TTL_SECONDS["5m"]))
    usage = AnthropicUsage(
        input_tokens=total - last,
        cache_read=read,
        cache_write_5m=last - upper_1h,
        cache_write_1h=upper_1h - read,
    )
    return AnthropicPlan(usage=usage, writes=tuple(writes))
