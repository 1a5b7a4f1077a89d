"""The numbers the emulator's cache rules use, in one table each (PROVIDER-RULES §1, §2, §6).

Provider documents drift; each number is as of the snapshot PROVIDER-RULES cites. Changing one
here changes the emulator's accounting and nothing else.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ANTHROPIC_DEFAULT_MIN_TOKENS",
    "ANTHROPIC_MIN_TOKENS",
    "ANTHROPIC_TOKEN_SCALE",
    "ANTHROPIC_TTL_SECONDS",
    "LOOKBACK_BLOCKS",
    "MAX_BREAKPOINTS",
    "OPENAI_CACHE_MIN",
    "OPENAI_CACHE_STEP",
    "OPENAI_REPLY_PRIMING",
    "OPENAI_RETENTION_SECONDS",
    "anthropic_min_tokens",
    "anthropic_token_scale",
    "openai_cacheable",
]

MAX_BREAKPOINTS: Final = 4
"""Most ``cache_control`` blocks one Anthropic request may carry (PROVIDER-RULES §1.2)."""

LOOKBACK_BLOCKS: Final = 20
"""Block boundaries walked back from each breakpoint (PROVIDER-RULES §1.2, §6).

The breakpoint's own boundary is checked first, then up to this many earlier ones: a
breakpoint after block ``b`` (0-based) can hit an entry after any block ``b-20 … b``.
"""

ANTHROPIC_TTL_SECONDS: Final[dict[str, float]] = {"5m": 300.0, "1h": 3600.0}
"""Anthropic cache TTLs by ``cache_control.ttl``; refreshed on every hit (PROVIDER-RULES §1.4)."""

ANTHROPIC_MIN_TOKENS: Final[tuple[tuple[str, int], ...]] = (
    ("claude-opus-4-6", 4096),
    ("claude-opus-4-5", 4096),
    ("claude-haiku-4-5", 4096),
    ("claude-sonnet-4-6", 2048),
    ("claude-sonnet-4-5", 1024),
    ("claude-opus-4-1", 1024),
    ("claude-opus-4", 1024),
    ("claude-sonnet-4", 1024),
    ("claude-3-7-sonnet", 1024),
    ("claude-3-5-haiku", 2048),
    ("claude-3-haiku", 2048),
)
"""Minimum cacheable prefix in tokens per model-id prefix (PROVIDER-RULES §1.3, [A-PC]).

Looked up by the longest matching prefix of the request's ``model``; below it a breakpoint
neither writes nor reads, and no error is raised.
"""

ANTHROPIC_DEFAULT_MIN_TOKENS: Final = 1024
"""Minimum for a model the table does not list."""

ANTHROPIC_TOKEN_SCALE: Final[tuple[tuple[str, float], ...]] = (
    ("claude-opus-4-7", 1.3),
    ("claude-opus-4-8", 1.3),
)
"""Tokens per text estimate, by model-id prefix, for models with a newer tokenizer.

Opus 4.7 "uses an updated tokenizer": the same text maps to "1.0–1.35x" as many tokens
depending on the content (Anthropic, *What's new in Claude Opus 4.7*,
https://platform.claude.com/docs/en/about-claude/models/whats-new-claude-4-7, as quoted by
https://www.nxcode.io/resources/news/claude-opus-4-7-developer-guide-api-claude-code-migration-2026,
read 2026-12-02). 1.3 is calibrated on a recorded cassette:
``tests/real_traffic/pydantic-ai/tests/models/cassettes/test_anthropic_mid_conversation_system/``
``test_inline_system_prompt_cache_prefix_is_reused.yaml`` (claude-opus-4-8, 1,592 input
tokens, 1,590 read; the emulator's Claude 4 estimate of the same body is 1,287, and runs about
6% above the recorded counts of Claude Sonnet 4 bodies). Unlisted models: 1.0."""

OPENAI_RETENTION_SECONDS: Final[dict[str, float]] = {"in_memory": 600.0, "24h": 86400.0}
"""OpenAI cache lifetime by ``prompt_cache_retention`` (PROVIDER-RULES §2.1).

``in_memory`` is documented as 5–10 minutes idle; the emulator uses 10 minutes, refreshed on
every hit. ``24h`` is 24 hours from the last use.
"""


OPENAI_CACHE_MIN: Final = 1024
"""OpenAI caches prompts of at least this many tokens (PROVIDER-RULES §2.1, [O-PC])."""

OPENAI_CACHE_STEP: Final = 128
"""OpenAI cache hits grow in steps of this many tokens above the minimum ("You can get a match
until the first mismatched token in 128 token blocks", [O-201])."""

OPENAI_REPLY_PRIMING: Final = 3
"""Tokens OpenAI counts in ``prompt_tokens`` to prime the reply (OpenAI cookbook, *How to count
tokens with tiktoken*: "every reply is primed with <|start|>assistant<|message|>"); never
cached."""


def openai_cacheable(prefix_tokens: int) -> int:
    """Floor a shared prefix of ``prefix_tokens`` to what OpenAI reports as cached.

    Returns 0 below :data:`OPENAI_CACHE_MIN`, else ``1024 + 128·k`` ≤ ``prefix_tokens``.
    """
    if prefix_tokens < OPENAI_CACHE_MIN:
        return 0
    return OPENAI_CACHE_MIN + OPENAI_CACHE_STEP * (
        (prefix_tokens - OPENAI_CACHE_MIN) // OPENAI_CACHE_STEP
    )


def _longest(model: str, table: tuple[tuple[str, float], ...], default: float) -> float:
    best, found = "", default
    for prefix, value in table:
        if model.startswith(prefix) and len(prefix) > len(best):
            best, found = prefix, value
    return found


def anthropic_token_scale(model: str) -> float:
    """Return :data:`ANTHROPIC_TOKEN_SCALE`'s factor for ``model`` (longest prefix; else 1.0)."""
    return _longest(model, ANTHROPIC_TOKEN_SCALE, 1.0)


def anthropic_min_tokens(model: str) -> int:
    """Return the minimum cacheable tokens for an Anthropic ``model`` id.

    The longest table prefix that ``model`` starts with wins (``claude-opus-4-5-20251101``
    → ``claude-opus-4-5`` → 4096); an unlisted model gets
    :data:`ANTHROPIC_DEFAULT_MIN_TOKENS`.
    """
    return int(_longest(model, ANTHROPIC_MIN_TOKENS, ANTHROPIC_DEFAULT_MIN_TOKENS))
