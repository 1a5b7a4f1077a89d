"""What a wire body means for each provider: shape, prefix sections, token items, minimums.

The auditor reads bodies on its own (SPEC V4): this module knows the wire shapes from the
providers' API references, not from llmcore's provider modules.

* shapes: Anthropic Messages (https://docs.anthropic.com/en/api/messages; Bedrock InvokeModel
  bodies with ``anthropic_version`` are this shape), OpenAI Chat Completions and Responses
  (https://platform.openai.com/docs/api-reference; OpenRouter bodies look like Chat
  Completions), Gemini ``generateContent`` / ``streamGenerateContent``
  (https://ai.google.dev/api/generate-content) and Bedrock Converse / ConverseStream
  (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html);
* the shape comes from the request URI when there is one (:func:`shape_from_uri`), else from
  the body (:func:`body_shape`); a Converse body is never taken for an Anthropic one;
* prefix sections in cache order: Anthropic ``tools`` → ``system`` → ``messages``
  (PROVIDER-RULES §1.2); OpenAI ``tools`` → ``instructions`` → ``messages`` / ``input``; Bedrock
  Converse ``toolConfig.tools`` → ``system`` → ``messages`` (``toolConfig.toolChoice`` counts
  like Anthropic's ``tool_choice``); Gemini ``cachedContent`` →
  ``systemInstruction`` → ``tools`` → ``toolConfig`` → ``contents``;
* token items and counts exactly as :mod:`llmcore.tokens` documents them;
* per-model minimum cacheable prefix (PROVIDER-RULES §1.3; Gemini and Bedrock from their docs,
  see :data:`GEMINI_MIN_TOKENS`, :data:`BEDROCK_NOVA_MIN`) and cache lifetimes (§1.4, §2.1).

Telling the shape and the ``--provider`` conflict warnings live in :mod:`llmcore.audit._detect`
and are re-exported here. Leaves out: comparing bodies (:mod:`llmcore.audit._compare`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from llmcore import jsonbytes, tokens
from llmcore.audit._detect import (
    BEDROCK_INVOKE as BEDROCK_INVOKE,
)
from llmcore.audit._detect import (
    PROVIDERS,
    _block_types,
    body_shape,
    conflict_message,
    detect_provider,
    model_from_uri,
    model_of,
    note_conflict,
    shape_conflict,
    shape_from_uri,
    wire_conflict,
    wire_shape,
)
from llmcore.audit._detect import (
    _content as _content,
)
from llmcore.audit._scan import (
    CACHE_KEYS,
    CONVERSE_TOOLS,
    ItemInfo,
    ScannedBody,
    is_cache_point,
)
from llmcore.errors import EncodingError

__all__ = [
    "PROVIDERS",
    "SECTIONS",
    "TokenItem",
    "anthropic_rules",
    "body_shape",
    "cache_ttl",
    "canonical",
    "compact",
    "conflict_message",
    "detect_provider",
    "history_key",
    "minimum_tokens",
    "model_from_uri",
    "model_of",
    "msg",
    "note_conflict",
    "shape_conflict",
    "shape_from_uri",
    "strip",
    "wire_conflict",
    "wire_shape",
]

COMPACTION_HEAD: Final = "# Conversation so far"
"""How a compaction summary message starts (SPEC C1)."""

SECTIONS: Final[Mapping[str, tuple[str, ...]]] = {
    "anthropic": ("tools", "system", "messages"),
    "openai-chat": ("tools", "messages"),
    "openrouter": ("tools", "messages"),
    "openai-responses": ("tools", "instructions", "input"),
    "gemini": ("cachedContent", "systemInstruction", "tools", "toolConfig", "contents"),
    "bedrock-converse": (CONVERSE_TOOLS, "system", "messages"),
}
"""Prefix sections per provider, in cache order (the last one is the history).

Bedrock Converse caches ``tools`` (each element of ``toolConfig.tools``), ``system`` and
``messages`` in that order, as Anthropic does (https://docs.aws.amazon.com/bedrock/latest/
userguide/prompt-caching.html); ``toolConfig.toolChoice`` is no prefix item but part of the
messages-level key, like Anthropic's ``tool_choice`` (:func:`messages_level`). Gemini's
explicit cache (``cachedContent``) holds the start of the prompt; the order of the other
sections is not documented, and any change in them misses the cache either way: the order only
decides which change is named first.
"""

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

GEMINI_MIN_TOKENS: Final[Mapping[str, int]] = {
    "gemini-3.8-flash": 4096,
    "gemini-3.7-flash": 4096,
    "gemini-3.6-flash": 4096,
    "gemini-3.5-flash": 4096,
    "gemini-3.1-pro": 4096,
    "gemini-2.5-flash": 0,
    "gemini-2.5-pro": 2048,
}
"""Gemini's minimum input for context caching per model (tokens), by longest name prefix.

Source: https://ai.google.dev/gemini-api/docs/caching ("Implicit caching", table "Min token
limit", page updated 2026-07-07; read 2026-12-02). Gemini 2.5 Flash: the page said 1,024 on
2026-05-07 and 2,048 on 2026-07-07, but recorded usage shows it reading 330 of a 557-token
prompt and 375 of 727 (the traffic issue 19 was measured on), below either: no minimum is
assumed, so the maximum stays an upper bound. Models not listed use :data:`GEMINI_DEFAULT_MIN`.
"""

GEMINI_DEFAULT_MIN: Final = 4096
"""Minimum for Gemini models the table does not list: the largest listed (tokens)."""

GEMINI_TTL: Final = 3600.0
"""Gemini's explicit cache default TTL (seconds; https://ai.google.dev/gemini-api/docs/caching,
"Explicit caching"); implicit-cache lifetimes are not published, so the same is assumed."""

BEDROCK_NOVA_MIN: Final = 1000
"""Bedrock's minimum tokens per cache checkpoint for Amazon Nova models (Micro, Lite, Pro,
Premier); Claude models on Bedrock use Anthropic's minimums (:data:`ANTHROPIC_MIN_TOKENS`).
Source: https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html, "Supported
models, Regions, and limits"."""

NO_CACHE_MIN: Final = 2**62
"""The minimum for Bedrock models without prompt caching (Llama, Mistral, …): unreachable, so
their theoretical maximum cacheable prefix is 0."""

_BEDROCK_ID: Final = re.compile(r"^(?:(?:us|eu|apac|global|jp|au|ca|us-gov)\.)?([a-z]+)\.(.+)$")
"""A Bedrock model id: an optional cross-Region prefix, the vendor, the model
(``us.anthropic.claude-3-7-sonnet-20250219-v1:0``, ``amazon.nova-pro-v1:0``)."""

ANTHROPIC_TTL: Final = 300.0
"""Anthropic's default cache lifetime, refreshed on every hit (seconds, PROVIDER-RULES §1.4)."""
ANTHROPIC_TTL_1H: Final = 3600.0
"""Lifetime when the request marks a breakpoint with ``"ttl": "1h"`` (seconds)."""
OPENAI_TTL: Final = 600.0
"""OpenAI ``in_memory`` retention: "5–10 min idle"; the upper end (seconds, §2.1)."""
OPENAI_TTL_24H: Final = 86400.0
"""OpenAI ``prompt_cache_retention: "24h"`` (seconds)."""

_TTL_1H: Final = re.compile(r'"ttl"\s*:\s*"1h"')

TokenItem = tuple[tuple[Any, ...], bytes, int, str]
"""One prefix item: (comparison key, compact normalized bytes, tokens, section)."""


# --- provider --------------------------------------------------------------------------------


def history_key(provider: str) -> str:
    """Return the top-level key holding the history (``messages`` or ``input``)."""
    return SECTIONS[provider][-1]


_WHOLE_ITEM: Final = frozenset({"anthropic", "gemini", "bedrock-converse"})


def anthropic_rules(provider: str, model: str, body: ScannedBody) -> bool:
    """Whether caching counts whole prefix items above a per-model minimum.

    Else OpenAI's token prefix rule applies (floored to 1,024 + 128·k).
    Anthropic, Bedrock Converse (cache checkpoints, https://docs.aws.amazon.com/bedrock/latest/
    userguide/prompt-caching.html) and Gemini (https://ai.google.dev/gemini-api/docs/caching;
    its implicit cache matches a token prefix, estimated here item by item) use the whole-item
    rule with their own minimums (:func:`minimum_tokens`). OpenRouter follows the upstream:
    Anthropic's rule for ``anthropic/…`` models or bodies that carry ``cache_control``
    (PROVIDER-RULES §3), else OpenAI's automatic rule.
    """
    if provider in _WHOLE_ITEM:
        return True
    if provider != "openrouter":
        return False
    return model.startswith("anthropic/") or '"cache_control"' in body.text


_OPENAI_MODEL: Final = re.compile(r"^(?:openai/)?(?!gpt-oss)(?:gpt-|o\d|chatgpt-|codex-)")
"""OpenAI's own models, whose prompts cache from 1,024 tokens (PROVIDER-RULES §2.1). Other
models behind the Chat Completions shape have their own rules: DeepSeek caches in 64-token
units ("The cache storage unit is 64 tokens", https://api-docs.deepseek.com/guides/kv_cache,
read 2026-12-02) and Groq's recorded usage reads 256 of 336 tokens (pydantic-ai
``test_groq/test_tool_use_failed_error``): no minimum is assumed for them (an upper bound)."""


def minimum_tokens(model: str, anthropic: bool) -> int:
    """Return the model's minimum cacheable prefix (tokens; PROVIDER-RULES §1.3, §2.1).

    With ``anthropic`` (the whole-item rule): ``gemini-…`` models use
    :data:`GEMINI_MIN_TOKENS`; Bedrock ids (``us.anthropic.claude-…``, ``amazon.nova-…``) use
    Anthropic's table for Claude, :data:`BEDROCK_NOVA_MIN` for Nova and :data:`NO_CACHE_MIN`
    for other vendors; anything else Anthropic's table. Without it, OpenAI's 1,024.
    """
    if not anthropic:
        return tokens.OPENAI_CACHE_MIN if _OPENAI_MODEL.match(model) else 0
    name = model.rsplit("/", 1)[-1]
    if name.startswith("gemini"):
        return _by_prefix(GEMINI_MIN_TOKENS, name, GEMINI_DEFAULT_MIN)
    bedrock = _BEDROCK_ID.match(name)
    if bedrock is not None:
        vendor, name = bedrock[1], bedrock[2]
        if vendor == "amazon" and name.startswith("nova"):
            return BEDROCK_NOVA_MIN
        if vendor != "anthropic":
            return NO_CACHE_MIN
    return _by_prefix(ANTHROPIC_MIN_TOKENS, name, ANTHROPIC_DEFAULT_MIN)


def _by_prefix(table: Mapping[str, int], name: str, default: int) -> int:
    best = ""
    for key in table:
        if name.startswith(key) and len(key) > len(best):
            best = key
    return table[best] if best else default


def cache_ttl(body: ScannedBody, anthropic: bool) -> float:
    """Return how long this request's cache entries live without a hit (seconds).

    Gemini bodies (``contents``): :data:`GEMINI_TTL`. Bedrock checkpoints live 5 minutes (or an
    hour with ``"ttl": "1h"``), as Anthropic's breakpoints do.
    """
    if "contents" in body.spans:
        return GEMINI_TTL
    if anthropic:
        return ANTHROPIC_TTL_1H if _TTL_1H.search(body.text) else ANTHROPIC_TTL
    if body.values.get("prompt_cache_retention") == "24h":
        return OPENAI_TTL_24H
    return OPENAI_TTL


# --- messages --------------------------------------------------------------------------------


_TOOL_RESULTS: Final = frozenset({"tool_result", "toolResult", "functionResponse"})
"""Block kinds that answer a tool call (Anthropic, Converse, Gemini): not a new turn."""


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
        content = _content(obj)
        self.turn_start = self.role == "user" and types.isdisjoint(_TOOL_RESULTS)
        self.has_thinking = bool(types & {"thinking", "redacted_thinking"})
        self.has_image = "image" in types
        self.summary = self.type == "compaction" or (
            self.role == "user" and _first_text(content).startswith(COMPACTION_HEAD)
        )


_SHORTHAND_KEYS: Final = frozenset({"type", "text", "cache_control"})


def text_shorthand(value: Any) -> Any:
    """Return a message with a lone text part written as the plain string it stands for.

    Anthropic: "Using a string for content is shorthand for an array of one content block of
    type "text"" (https://docs.anthropic.com/en/api/messages). OpenRouter sends
    ``[{"type": "text", "text": t, "cache_control": …}]`` and ``t`` to the model as the same
    prompt: recorded usage shows the whole earlier prompt read from the cache after a breakpoint
    moved off a message and it went back to the string form (pydantic-ai's OpenRouter cache
    cassettes). Other values are returned unchanged.
    """
    if not isinstance(value, dict):
        return value
    content = value.get("content")
    if not (isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict)):
        return value
    part = content[0]
    if part.get("type") != "text" or not isinstance(part.get("text"), str):
        return value
    if not _SHORTHAND_KEYS.issuperset(part):
        return value
    return {**value, "content": part["text"]}


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
    choice = values.get("tool_choice")
    config = values.get("toolConfig")
    if choice is None and isinstance(config, dict):  # Converse: toolConfig.toolChoice
        choice = config.get("toolChoice")
    return (has_image, _compact(choice), _compact(values.get("thinking")))


# --- item values ------------------------------------------------------------------------


def _strip(value: Any) -> Any:
    """``value`` without breakpoints: ``cache_control`` members and ``cachePoint`` blocks."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in CACHE_KEYS}
    if isinstance(value, list):
        return [_strip(v) for v in value if not is_cache_point(v)]
    return value


def _compact(value: Any) -> bytes:
    try:
        return jsonbytes.dumps(value)
    except EncodingError:  # a lone surrogate from a \u escape: keep its code unit
        return jsonbytes.dumps_text(value).encode("utf-8", "surrogatepass")


def compact(value: Any) -> bytes:
    """Return ``value`` as compact JSON bytes in its key order (one text per JSON value)."""
    return _compact(value)


def strip(value: Any) -> Any:
    """Return ``value`` without breakpoints (``cache_control`` members, ``cachePoint`` blocks)."""
    return _strip(value)


def canonical(info: ItemInfo) -> bytes:
    """Return an item's compact JSON without breakpoints.

    Equal for two texts of one JSON value (escapes and whitespace between tokens aside),
    different for any other difference, key order included.
    """
    got = info.extra.get("canonical")
    if got is None:
        got = info.extra["canonical"] = _compact(_strip(info.parsed()))
    assert isinstance(got, bytes)
    return got


def deferred(info: ItemInfo) -> bool:
    """Whether a tool definition is marked ``defer_loading: true`` (Anthropic tool search).

    Such a tool is not part of the cached prefix: "Deferred tools are not included in the
    system-prompt prefix" (Anthropic, *Tool use with prompt caching*,
    https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-use-with-prompt-caching).
    """
    got = info.extra.get("deferred")
    if got is None:
        value = info.parsed()
        got = isinstance(value, dict) and value.get("defer_loading") is True
        info.extra["deferred"] = got
    return bool(got)
