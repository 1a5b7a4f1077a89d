"""Per-model defaults: the output-token default (SPEC R1 ``maxTokens``).

A small bundled table, matched by the longest model-name prefix. Unknown models fall back to
:data:`DEFAULT`. Numbers are from the providers' model pages as of 2026-11; they only choose
defaults and never change a body built with an explicit ``maxTokens``. Context windows (C4)
are in :mod:`llmcore.limits`, where an unknown model stays unknown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["DEFAULT", "ModelInfo", "model_info"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelInfo:
    """What llmcore assumes about a model when the caller does not say."""

    max_tokens: int
    """Default ``max_tokens`` sent when the request gives none (tokens)."""


DEFAULT: Final = ModelInfo(max_tokens=4096)
"""Used for models the table does not know."""

_TABLE: Final[dict[str, ModelInfo]] = {
    "claude-opus-4": ModelInfo(max_tokens=8192),
    "claude-sonnet-4": ModelInfo(max_tokens=8192),
    "claude-haiku-4": ModelInfo(max_tokens=8192),
    "claude-3-7-sonnet": ModelInfo(max_tokens=8192),
    "claude-3-5": ModelInfo(max_tokens=8192),
    "claude-3": ModelInfo(max_tokens=4096),
    "claude": ModelInfo(max_tokens=8192),
    "gpt-4o": ModelInfo(max_tokens=4096),
    "gpt-4.1": ModelInfo(max_tokens=8192),
    "gpt-5": ModelInfo(max_tokens=8192),
    "o3": ModelInfo(max_tokens=8192),
    "o4-mini": ModelInfo(max_tokens=8192),
}


def model_info(model: str) -> ModelInfo:
    """Return the table entry whose key is the longest prefix of ``model`` (after any ``vendor/``).

    OpenRouter names such as ``anthropic/claude-sonnet-4`` are looked up without the vendor.
    """
    name = model.rsplit("/", 1)[-1]
    best = ""
    for key in _TABLE:
        if name.startswith(key) and len(key) > len(best):
            best = key
    return _TABLE[best] if best else DEFAULT
