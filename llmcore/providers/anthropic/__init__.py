"""Anthropic Messages API: request bodies and the import of recorded bodies (SPEC P1–P3).

The package holds one concern per module:

* :mod:`.encode` — the request body encoder and its key-order table;
* :mod:`.parse` — the response parser (JSON bodies and server-sent events);
* :mod:`.importer` — the import of recorded request bodies.

Every public name of those modules is re-exported here.
"""

from __future__ import annotations

from typing import Any, Final

from llmcore.providers.anthropic import encode
from llmcore.providers.anthropic.encode import breakpoint_dict, cache_control, tool_input, wire_id
from llmcore.providers.anthropic.importer import _Importer
from llmcore.providers.anthropic.parse import (
    ENDPOINT,
    AnthropicStreamParser,
    error_from_body,
    map_stop_reason,
    parse_message,
    parse_usage,
)
from llmcore.providers.base import Carry, EncodeCache, ImportResult, ResponseMethods, ResponseSide
from llmcore.request import Request

__all__ = [
    "AnthropicProvider",
    "AnthropicStreamParser",
    "ENDPOINT",
    "PROVIDER",
    "breakpoint_dict",
    "cache_control",
    "error_from_body",
    "map_stop_reason",
    "parse_message",
    "parse_usage",
    "tool_input",
    "wire_id",
]


class AnthropicProvider(ResponseMethods):
    """The Anthropic Messages provider (``anthropic``)."""

    name: Final = "anthropic"

    def build_body(
        self, request: Request, *, cache: EncodeCache | None = None, carry: Carry | None = None
    ) -> bytes:
        """Return the Messages API body bytes for ``request`` (key order in the module doc).

        ``carry`` holds the running turn's thinking blocks by message index (M4); they open
        that assistant message's ``content`` unchanged and never carry a breakpoint.

        Raises:
            InvalidRequestError: Unpaired tool calls/results, an unknown tool choice, or a
                ``params.extra`` key that collides with a key this body writes.
            EncodingError: A value cannot be written as JSON.
        """
        return encode.build_body(request, cache=cache, carry=carry)

    def import_body(
        self, body: Any, *, location: str = "$", raw: bytes | None = None
    ) -> ImportResult:
        """Return the neutral request a recorded Messages body stands for.

        Thinking and redacted-thinking blocks are dropped (M4) and said in the notes;
        ``cache_control`` markers are dropped (llmcore places its own, P3); unmodeled top-level
        fields go to ``params.extra`` in body order. With ``raw`` (the bytes ``body`` was
        parsed from) each ``tool_use`` keeps the exact bytes of its ``input`` (M2), so
        ``build_body`` of the result gives those bytes back; without it ``input`` is written as
        compact JSON.

        Raises:
            RequestFileError: The body is malformed (the error names the JSON path).
            UnsupportedContentError: Documents, server tools, URL images, and other content
                outside the four cases.
        """
        return _Importer(raw).run(body, location)


PROVIDER: Final = AnthropicProvider(
    ResponseSide(
        endpoint=ENDPOINT,
        parse=parse_message,
        stream=AnthropicStreamParser,
        error=error_from_body,
    )
)
"""The registered instance."""
