"""What a wire body means for each provider: shape, prefix sections, token items, minimums.

The auditor reads bodies on its own (SPEC V4): this module knows the three wire shapes from the
providers' API references, not from llmcore's provider modules.

* provider from the body's shape: Anthropic Messages (https://docs.anthropic.com/en/api/messages),
  OpenAI Chat Completions and Responses (https://platform.openai.com/docs/api-reference);
  OpenRouter bodies look like Chat Completions;
* prefix sections in cache order: Anthropic ``tools`` → ``system`` → ``messages``
  (PROVIDER-RULES §1.2); OpenAI ``tools`` → ``instructions`` → ``messages`` / ``input``;
* token items and counts exactly as :mod:`llmcore.tokens` documents them;
* per-model minimum cacheable prefix (PROVIDER-RULES §1.3) and cache lifetimes (§1.4, §2.1).

Leaves out: comparing bodies (:mod:`llmcore.audit._compare`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from llmcore import jsonbytes, tokens
from llmcore.audit._scan import CACHE_KEYS, ItemInfo, ScannedBody
from llmcore.audit.report import AuditInputError
from llmcore.errors import EncodingError, UnknownProviderError

__all__ = [
    "PROVIDERS",
    "SECTIONS",
    "TokenItem",
    "anthropic_rules",
    "cache_ttl",
    "detect_provider",
    "history_key",
    "item_tokens",
    "minimum_tokens",
    "msg",
    "token_items",
]

PROVIDERS: Final = ("anthropic", "openai-chat", "openai-responses", "openrouter")
"""Provider names the auditor understands (SPEC R2)."""

SECTIONS: Final[Mapping[str, tuple[str, ...]]] = {
    "anthropic": ("tools", "system", "messages"),
    "openai-chat": ("tools", "messages"),
    "openrouter": ("tools", "messages"),
    "openai-responses": ("tools", "instructions", "input"),
}
"""Prefix sections per provider, in cache order (the last one is the history)."""

COMPACTION_HEAD: Final = "# Conversation so far"
"""How a compaction summary message starts (SPEC C1)."""

ANTHROPIC_MIN_TOKENS: Final[Mapping[str, int]] = {
    "claude-opus-4-6": 4096,
    "claude-opus-4-5": 4096,
    "claude-haiku-4-5": 4096,
    "claude-sonnet-4-6": 2048,
    "claude-sonnet-4-5": 1024,
    "claude-opus-4-1": 1024,
    "claude-opus-4": 1024,
    "claude-sonnet-4": 1024,
    "claude-3-7-sonnet": 1024,
    "claude-3-5-haiku": 2048,
    "claude-3-haiku": 2048,
}
"""Anthropic's minimum cacheable prompt per model (tokens), matched by longest name prefix.

Source: PROVIDER-RULES §1.3, a snapshot of https://docs.anthropic.com/en/docs/build-with-claude/
prompt-caching (2025-11 → 2026-02). Models not listed (older Claude 3 Opus / Sonnet) use
:data:`ANTHROPIC_DEFAULT_MIN`.
"""

ANTHROPIC_DEFAULT_MIN: Final = 1024
"""Minimum for Claude models the table does not list (tokens)."""

ANTHROPIC_TTL: Final = 300.0
"""Anthropic's default cache lifetime, refreshed on every hit (seconds, PROVIDER-RULES §1.4)."""
ANTHROPIC_TTL_1H: Final = 3600.0
"""Lifetime when the request marks a breakpoint with ``"ttl": "1h"`` (seconds)."""
OPENAI_TTL: Final = 600.0
"""OpenAI ``in_memory`` retention: "5–10 min idle"; the upper end (seconds, §2.1)."""
OPENAI_TTL_24H: Final = 86400.0
"""OpenAI ``prompt_cache_retention: "24h"`` (seconds)."""

_TTL_1H: Final = re.compile(r'"ttl"\s*:\s*"1h"')

_ANTHROPIC_BLOCKS: Final = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "image", "document"}
)
_CHAT_BLOCKS: Final = frozenset({"image_url", "input_audio", "file"})
_RESPONSES_KEYS: Final = frozenset(
    {"input", "instructions", "prompt", "previous_response_id", "conversation"}
)
_ANTHROPIC_KEYS: Final = frozenset({"system", "stop_sequences", "top_k", "thinking"})
_CHAT_KEYS: Final = frozenset(
    {
        "max_completion_tokens",
        "n",
        "response_format",
        "stream_options",
        "logprobs",
        "frequency_penalty",
        "presence_penalty",
        "seed",
        "parallel_tool_calls",
        "reasoning_effort",
        "modalities",
    }
)

TokenItem = tuple[tuple[Any, ...], bytes, int, str]
"""One prefix item: (comparison key, compact normalized bytes, tokens, section)."""


# --- provider --------------------------------------------------------------------------------


def _block_types(value: Any) -> set[str]:
    content = value.get("content") if isinstance(value, dict) else None
    if not isinstance(content, list):
        return set()
    out: set[str] = set()
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if isinstance(kind, str):
            out.add(kind)
    return out


def _message_vote(info: ItemInfo) -> int:
    """Return +1 for an Anthropic-only message, -1 for a Chat-only one, 0 when either."""
    vote = info.extra.get("vote")
    if vote is None:
        value = info.parsed()
        types = _block_types(value)
        vote = 0
        if types & _ANTHROPIC_BLOCKS:
            vote = 1
        elif isinstance(value, dict) and (
            value.get("role") in ("system", "developer", "tool", "function")
            or "tool_calls" in value
            or "tool_call_id" in value
            or types & _CHAT_BLOCKS
        ):
            vote = -1
        info.extra["vote"] = vote
    assert isinstance(vote, int)
    return vote


def _tools_vote(body: ScannedBody) -> int:
    for info in body.items.get("tools", ()):
        value = info.parsed()
        if isinstance(value, dict):
            if "input_schema" in value:
                return 1
            if "function" in value or value.get("type") == "function":
                return -1
    return 0


def _messages_vote(body: ScannedBody) -> int:
    for info in body.items.get("messages", ()):
        vote = _message_vote(info)
        if vote:
            return vote
    return 0


def _is_anthropic(body: ScannedBody) -> bool:
    keys = body.spans.keys()
    if any(k in _ANTHROPIC_KEYS for k in keys):
        return True
    if any(k in _CHAT_KEYS for k in keys):
        return False
    vote = _tools_vote(body) or _messages_vote(body)
    if vote:
        return vote > 0
    model = body.values.get("model")
    # Nothing provider-only in the body: Claude model ids are Anthropic's; anything else is
    # taken as Chat Completions, the shape OpenAI-compatible servers share.
    return isinstance(model, str) and "claude" in model and "/" not in model


def detect_provider(body: ScannedBody, given: str | None, *, location: str) -> str:
    """Return the provider of ``body``: ``given`` if set, else read from the body's shape.

    Raises:
        UnknownProviderError: ``given`` is not one of :data:`PROVIDERS`.
        AuditInputError: The body has neither ``messages`` nor ``input``/``instructions``.
    """
    if given is not None:
        if given not in PROVIDERS:
            raise UnknownProviderError(
                f"unknown provider {given!r} (expected one of {', '.join(PROVIDERS)})"
            )
        return given
    keys = body.spans.keys()
    if "messages" not in keys:
        if any(k in _RESPONSES_KEYS for k in keys):
            return "openai-responses"
        raise AuditInputError(
            "not a Messages, Chat Completions or Responses request body (no 'messages' or 'input')",
            location=location,
        )
    return "anthropic" if _is_anthropic(body) else "openai-chat"


def history_key(provider: str) -> str:
    """Return the top-level key holding the history (``messages`` or ``input``)."""
    return SECTIONS[provider][-1]


def anthropic_rules(provider: str, model: str, body: ScannedBody) -> bool:
    """Whether caching follows Anthropic's whole-block rule (else OpenAI's token prefix).

    OpenRouter follows the upstream: Anthropic's rule for ``anthropic/…`` models or bodies that
    carry ``cache_control`` (PROVIDER-RULES §3), else OpenAI's automatic rule.
    """
    if provider == "anthropic":
        return True
    if provider != "openrouter":
        return False
    return model.startswith("anthropic/") or '"cache_control"' in body.text


def minimum_tokens(model: str, anthropic: bool) -> int:
    """Return the model's minimum cacheable prefix (tokens; PROVIDER-RULES §1.3, §2.1)."""
    if not anthropic:
        return tokens.OPENAI_CACHE_MIN
    name = model.rsplit("/", 1)[-1]
    best = ""
    for key in ANTHROPIC_MIN_TOKENS:
        if name.startswith(key) and len(key) > len(best):
            best = key
    return ANTHROPIC_MIN_TOKENS[best] if best else ANTHROPIC_DEFAULT_MIN


def cache_ttl(body: ScannedBody, anthropic: bool) -> float:
    """Return how long this request's cache entries live without a hit (seconds)."""
    if anthropic:
        return ANTHROPIC_TTL_1H if _TTL_1H.search(body.text) else ANTHROPIC_TTL
    if body.values.get("prompt_cache_retention") == "24h":
        return OPENAI_TTL_24H
    return OPENAI_TTL


# --- messages --------------------------------------------------------------------------------


class _Msg:
    """Facts about one history item that the comparison and grouping need."""

    __slots__ = ("role", "type", "is_system", "turn_start", "has_thinking", "has_image", "summary")

    def __init__(self, value: Any) -> None:
        obj = value if isinstance(value, dict) else {}
        role, kind = obj.get("role"), obj.get("type")
        self.role = role if isinstance(role, str) else ""
        self.type = kind if isinstance(kind, str) else ""
        self.is_system = self.role in ("system", "developer")
        types = _block_types(obj)
        content = obj.get("content")
        self.turn_start = self.role == "user" and "tool_result" not in types
        self.has_thinking = bool(types & {"thinking", "redacted_thinking"})
        self.has_image = "image" in types
        self.summary = self.role == "user" and _first_text(content).startswith(COMPACTION_HEAD)


def _first_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list) and content and isinstance(content[0], dict):
        text = content[0].get("text")
        return text if isinstance(text, str) else ""
    return ""


def msg(info: ItemInfo) -> _Msg:
    """Return the (cached) history facts of ``info``."""
    facts = info.extra.get("msg")
    if facts is None:
        facts = _Msg(info.parsed())
        info.extra["msg"] = facts
    assert isinstance(facts, _Msg)
    return facts


def messages_level(body: ScannedBody, provider: str) -> tuple[Any, ...]:
    """Return what Anthropic hashes into the messages level besides the blocks themselves.

    PROVIDER-RULES §1.6 ("What invalidates the cache"): adding or removing images anywhere in
    the prompt, changing ``tool_choice``, or the thinking parameters keeps the tools and system
    levels but misses the messages level. The key is (any image block, ``tool_choice``,
    ``thinking``) — the same reading as the emulator's.
    """
    infos = body.items.get(SECTIONS[provider][-1], ())
    has_image = any(msg(info).has_image for info in infos)
    values = body.values
    return (has_image, _compact(values.get("tool_choice")), _compact(values.get("thinking")))


# --- token items (llmcore.tokens) ------------------------------------------------------------


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in CACHE_KEYS}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _compact(value: Any) -> bytes:
    try:
        return jsonbytes.dumps(value)
    except EncodingError:  # a lone surrogate from a \u escape: keep its code unit
        return jsonbytes.dumps_text(value).encode("utf-8", "surrogatepass")


def item_tokens(value: Any, data: bytes) -> int:
    """Return the tokens of one prefix item (the :mod:`llmcore.tokens` rule).

    Args:
        value: The item's parsed value, ``cache_control`` removed.
        data: Its compact JSON bytes.

    Returns:
        ``IMAGE_TOKENS`` per image part (Anthropic ``image``, Chat ``image_url``, Responses
        ``input_image``) plus ``ceil(bytes / 4)`` of ``data`` without the characters of each
        base64 payload (``source.data`` or a ``data:`` URL; its quotes and key still count).
    """
    return tokens.item_tokens(value, data)


def _whole(info: ItemInfo) -> tuple[bytes, int]:
    got = info.extra.get("whole")
    if got is None:
        value = _strip(info.parsed())
        data = _compact(value)
        got = (data, item_tokens(value, data))
        info.extra["whole"] = got
    assert isinstance(got, tuple)
    return got


def _blocks(info: ItemInfo) -> tuple[tuple[bytes, int], ...]:
    got = info.extra.get("blocks")
    if got is None:
        value = info.parsed()
        content = value.get("content") if isinstance(value, dict) else None
        parts = content if isinstance(content, list) else [content]
        out = []
        for part in parts:
            stripped = _strip(part)
            data = _compact(stripped)
            out.append((data, item_tokens(stripped, data)))
        got = tuple(out)
        info.extra["blocks"] = got
    assert isinstance(got, tuple)
    return got


_STRING_ONLY: Final = frozenset({"system", "instructions"})


def _counted(section: str, value: Any) -> bool:
    """Whether a ``system`` / ``instructions`` item is a prefix item (tokens.py).

    ``instructions`` counts only as a string (even empty); ``system`` counts as a non-empty
    string or as blocks (objects).
    """
    if isinstance(value, str):
        return section == "instructions" or value != ""
    return section == "system" and isinstance(value, dict)


def token_items(body: ScannedBody, provider: str, anthropic: bool) -> list[TokenItem]:
    """Return the body's prefix items in cache order, as :mod:`llmcore.tokens` defines them.

    Anthropic rule: each tool, each system block (a string system is one item), each content
    block of each message (a string content is one item); keys carry the message index and role
    so a block moved to another message never matches. OpenAI rule: each tool, the
    instructions, each ``messages[i]`` / ``input[i]`` item.
    """
    out: list[TokenItem] = []
    sections = SECTIONS[provider]
    for section in sections:
        infos = body.items.get(section, ())
        if section == sections[-1] and anthropic:
            for i, info in enumerate(infos):
                role = msg(info).role
                for data, count in _blocks(info):
                    out.append(((i, role, data), data, count, section))
        else:
            for info in infos:
                if section in _STRING_ONLY and not _counted(section, info.parsed()):
                    continue
                data, count = _whole(info)
                out.append(((section, data), data, count, section))
    return out
