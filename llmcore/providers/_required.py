"""Requests a provider refuses for having nothing to answer: an empty history (SPEC R1, R2).

:func:`empty_history` says why, for the providers whose API refuses the body with an empty
message list, so ``llmcore body`` and ``llmcore import`` refuse it too (exit 2) instead of
writing a body the provider answers with HTTP 400:

* ``anthropic``: "messages: at least one message is required" (invalid_request_error);
* ``openai-chat`` without a system prompt (which is sent as the first message): "Invalid
  'messages': empty array. Expected an array with minimum length 1" (code ``empty_array``);
* ``gemini``: "GenerateContentRequest.contents: contents is not specified" (INVALID_ARGUMENT;
  the system prompt is ``systemInstruction``, not a content).

OpenAI Responses (``input`` is optional), OpenRouter ("either messages or prompt is
required") and Bedrock Converse (``messages`` is not required: a managed prompt can supply
them) are left to the provider.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from llmcore.request import Request

__all__ = ["HISTORY_KEYS", "empty_history"]

HISTORY_KEYS: Final = {"anthropic": "messages", "openai-chat": "messages", "gemini": "contents"}
"""The body's member holding the history, for each provider that refuses it empty."""

_WHY: Final = {
    "anthropic": 'Anthropic refuses a body without one ("at least one message is required")',
    "openai-chat": (
        'the OpenAI Chat API refuses an empty messages array ("expected an array with minimum '
        'length 1"); a system prompt would be its first message'
    ),
    "gemini": 'Gemini refuses a body without contents ("contents is not specified")',
}


def empty_history(provider: str, request: Request) -> str | None:
    """Return why ``provider`` refuses ``request`` for its empty history, or ``None``.

    The reason names the provider and quotes its error message.

    Args:
        provider: The registry name (``anthropic``, ``openai-chat``, …).
        request: The neutral request; only ``messages`` and ``system`` are read.
    """
    if request.messages or provider not in _WHY:
        return None
    if provider == "openai-chat" and any(request.system):
        return None
    return _WHY[provider]
