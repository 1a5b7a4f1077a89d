"""The provider registry: name → provider module instance (SPEC P1).

Adding a provider means adding its module (or a package of ``encode``, ``parse`` and ``importer``
modules, as the built-in ones are) and one line to :data:`_REGISTRY`, nothing else.
Names: ``anthropic``, ``openai-chat``, ``openai-responses``, ``openrouter``, ``gemini``,
``bedrock-converse``.
"""

from __future__ import annotations

import importlib
from typing import Final

from llmcore.errors import UnknownProviderError
from llmcore.providers.base import Provider

__all__ = ["PROVIDER_NAMES", "get_provider"]

_REGISTRY: Final[dict[str, str]] = {
    "anthropic": "llmcore.providers.anthropic",
    "openai-chat": "llmcore.providers.openai_chat",
    "openai-responses": "llmcore.providers.openai_responses",
    "openrouter": "llmcore.providers.openrouter",
    "gemini": "llmcore.providers.gemini",
    "bedrock-converse": "llmcore.providers.bedrock_converse",
}

PROVIDER_NAMES: Final = tuple(_REGISTRY)
"""The registered provider names, in registry order."""


def get_provider(name: str) -> Provider:
    """Return the provider registered as ``name``.

    Each provider module exposes its instance as ``PROVIDER``.

    Raises:
        UnknownProviderError: No provider has that name; the message lists the known ones.
    """
    module_name = _REGISTRY.get(name) if isinstance(name, str) else None
    if module_name is None:
        close = [
            known
            for known in PROVIDER_NAMES
            if isinstance(name, str) and name and (known.startswith(name) or name.startswith(known))
        ]
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        raise UnknownProviderError(
            f"unknown provider {name!r}{hint}; choose one of {', '.join(PROVIDER_NAMES)}"
        )
    provider: Provider = importlib.import_module(module_name).PROVIDER
    return provider
