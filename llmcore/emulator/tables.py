"""The numbers the emulator's cache rules use, in one table each (PROVIDER-RULES §1, §2, §6).

Provider documents drift; each number is as of the snapshot PROVIDER-RULES cites. Changing one
here changes the emulator's accounting and nothing else.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ANTHROPIC_DEFAULT_MIN_TOKENS",
    "ANTHROPIC_MIN_TOKENS",
    "ANTHROPIC_TTL_SECONDS",
    "LOOKBACK_BLOCKS",
    "MAX_BREAKPOINTS",
    "OPENAI_RETENTION_SECONDS",
    "anthropic_min_tokens",
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

OPENAI_RETENTION_SECONDS: Final[dict[str, float]] = {"in_memory": 600.0, "24h": 86400.0}
"""OpenAI cache lifetime by ``prompt_cache_retention`` (PROVIDER-RULES §2.1).

``in_memory`` is documented as 5–10 minutes idle; the emulator uses 10 minutes, refreshed on
every hit. ``24h`` is 24 hours from the last use.
"""


def anthropic_min_tokens(model: str) -> int:
    """Return the minimum cacheable tokens for an Anthropic ``model`` id.

    The longest table prefix that ``model`` starts with wins (``claude-opus-4-5-20251101``
    → ``claude-opus-4-5`` → 4096); an unlisted model gets
    :data:`ANTHROPIC_DEFAULT_MIN_TOKENS`.
    """
    best = ""
    found = ANTHROPIC_DEFAULT_MIN_TOKENS
    for prefix, tokens in ANTHROPIC_MIN_TOKENS:
        if model.startswith(prefix) and len(prefix) > len(best):
            best, found = prefix, tokens
    return found
