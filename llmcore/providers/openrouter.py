"""OpenRouter: the OpenAI Chat body plus OpenRouter's prompt-cache markers (SPEC P1–P3).

The body is built by :mod:`llmcore.providers.openai_chat` (same messages, same key order, same
treatments of arguments, ids, errors and parameters); this module adds only ``cache_control``.
Key order beyond the Chat table:

=====================  ================================================================
object                 keys, in order (absent keys are skipped, never sent as ``null``)
=====================  ================================================================
body                   the Chat body keys, then ``cache_control`` (automatic mode), then
                       ``params.extra`` in its own order
text part              ``type, text, cache_control``
image part             ``type, image_url, cache_control``
cache_control          ``type, ttl`` (``ttl`` only for ``1h``)
=====================  ================================================================

Which models get markers (:data:`EXPLICIT_PREFIXES`): those whose upstream caches only at
explicit breakpoints — ``anthropic/`` (Claude) and ``google/gemini`` (Gemini; OpenRouter uses
its last breakpoint). Every other model (``openai/``, ``deepseek/``, …) caches automatically and
gets the plain Chat body; ``cacheMode`` and ``cacheTtl`` are then ignored without a warning.

Breakpoints (P3, mode ``breakpoints``), at most 3 of Anthropic's 4:

* (2) the last system part;
* (3) the last content part of the newest message;
* (4) the last content part of the message before the last assistant message
  (:func:`~llmcore.providers.base.breakpoint_messages`).

A marker goes on the last part of the message's last wire message that has content parts (a
tool message's results are several wire messages); a message with no part (an assistant message
of tool calls only, an empty tool result) gets none. Breakpoint (1), the last tool, is not sent:
OpenRouter documents ``cache_control`` on message content parts only, and the system breakpoint
already covers the tools that precede it. Every content part is already in array form (Chat
module), so adding or moving a marker never changes a message's shape. Mode ``automatic`` sends
one top-level ``cache_control`` for ``anthropic/`` models (OpenRouter's automatic mode, Claude
only) and nothing for Gemini; ``off`` sends none.

Import of recorded OpenRouter bodies is not supported (import them as ``openai-chat``).

Response side: the Chat module's parsers under the name ``openrouter``
(:func:`~llmcore.providers.openai_chat.parse_completion`,
:class:`~llmcore.providers.openai_chat.ChatStreamParser`); ``usage.cost`` (US dollars) becomes
``Usage.reported_cost``, so the cost kind is ``reported`` (PROVIDER-RULES §3,
https://openrouter.ai/docs/use-cases/usage-accounting). ``: OPENROUTER PROCESSING`` keep-alive
lines are SSE comments. Errors are ``{"error": {"code": <HTTP status>, "message", "metadata"}}``;
an error chunk mid-stream takes its status from ``code``.

Source: https://openrouter.ai/docs/features/prompt-caching.
"""

from __future__ import annotations

from collections.abc import Hashable
from functools import partial
from typing import Any, Final

from llmcore import jsonbytes
from llmcore.errors import UserError
from llmcore.messages import Message
from llmcore.providers import _import_common as imp
from llmcore.providers import openai_chat
from llmcore.providers.base import (
    Carry,
    EncodeCache,
    Endpoint,
    ImportResult,
    ResponseMethods,
    ResponseSide,
    breakpoint_options,
    check_request,
)
from llmcore.request import CacheMode, CacheTtl, Request

__all__ = [
    "ENDPOINT",
    "EXPLICIT_PREFIXES",
    "PROVIDER",
    "ImportNotSupportedError",
    "OpenRouterProvider",
    "cache_control",
    "cache_mode",
]

EXPLICIT_PREFIXES: Final = ("anthropic/", "google/gemini")
"""Model-name prefixes whose upstream caches only at ``cache_control`` breakpoints."""
_AUTOMATIC_PREFIXES: Final = ("anthropic/",)


class ImportNotSupportedError(UserError):
    """The provider has no importer for recorded bodies."""


def cache_mode(request: Request) -> CacheMode:
    """Return the cache mode this body applies: the request's for explicit models, else ``off``."""
    mode = request.params.cache_mode
    if not request.model.startswith(EXPLICIT_PREFIXES):
        return "off"
    if mode == "automatic" and not request.model.startswith(_AUTOMATIC_PREFIXES):
        return "off"
    return mode


def cache_control(ttl: CacheTtl) -> dict[str, str]:
    """Return the ``cache_control`` object for a breakpoint of the given TTL."""
    return {"type": "ephemeral", "ttl": "1h"} if ttl == "1h" else {"type": "ephemeral"}


def _mark_last_part(wire: list[dict[str, Any]], ttl: CacheTtl) -> None:
    for item in reversed(wire):
        content = item.get("content")
        if isinstance(content, list) and content:
            content[-1]["cache_control"] = cache_control(ttl)
            return


def _message_values(index: int, message: Message, option: Hashable) -> list[dict[str, Any]]:
    """Chat's wire messages, the last content part marked when ``option`` (a TTL) is given."""
    wire = openai_chat.wire_messages(message)
    if option is not None:
        _mark_last_part(wire, "1h" if option == "1h" else "5m")
    return wire


class OpenRouterProvider(ResponseMethods):
    """The OpenRouter provider (``openrouter``): OpenAI Chat bodies with cache markers."""

    name: Final = "openrouter"

    def build_body(
        self, request: Request, *, cache: EncodeCache | None = None, carry: Carry | None = None
    ) -> bytes:
        """Return the OpenRouter body bytes for ``request`` (key order in the module doc).

        ``carry`` is accepted and ignored, as in the Chat module.

        Raises:
            InvalidRequestError: Unpaired tool calls/results, an unknown tool choice, or a
                ``params.extra`` key that collides with a key this body writes.
            EncodingError: A value cannot be written as JSON.
        """
        check_request(request, cache)
        mode = cache_mode(request)
        ttl = request.params.cache_ttl
        system = openai_chat.system_message(request)
        if system is not None and mode == "breakpoints":
            _mark_last_part([system], ttl)
        options = breakpoint_options(request) if mode == "breakpoints" else {}
        messages = openai_chat.messages_array(
            request, options, _message_values, cache, system, unmarked_as_chat=True
        )
        body = openai_chat.body_fields(request, messages)
        if mode == "automatic":
            body["cache_control"] = cache_control(ttl)
        imp.put_extra(body, request.params)
        return jsonbytes.dumps(body)

    def import_body(
        self, body: Any, *, location: str = "$", raw: bytes | None = None
    ) -> ImportResult:
        """Refuse: recorded OpenRouter bodies are imported with the ``openai-chat`` provider.

        Raises:
            ImportNotSupportedError: Always.
        """
        raise ImportNotSupportedError(
            "importing OpenRouter bodies is not supported; import it with --provider openai-chat",
            location=location,
        )


# --- Response side ---------------------------------------------------------------------------

ENDPOINT: Final = Endpoint(
    base_url="https://openrouter.ai/api",
    path="/v1/chat/completions",
    api_key_env="OPENROUTER_API_KEY",
    auth="bearer",
)
"""The OpenRouter chat endpoint (https://openrouter.ai/docs/api-reference/overview)."""


PROVIDER: Final = OpenRouterProvider(
    ResponseSide(
        endpoint=ENDPOINT,
        parse=partial(openai_chat.parse_completion, provider="openrouter"),
        stream=partial(openai_chat.ChatStreamParser, "openrouter"),
        error=partial(openai_chat.error_from_body, provider="openrouter"),
    )
)  # the Chat parsers under OpenRouter's name; usage.cost is read as the reported cost
"""The registered instance."""
