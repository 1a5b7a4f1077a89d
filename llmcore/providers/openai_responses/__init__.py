"""OpenAI Responses API: request bodies and the import of recorded bodies (SPEC P1, P2, P4, P7).

The package holds one concern per module:

* :mod:`.encode` — the request body encoder and its key-order table;
* :mod:`.parse` — the response parser (JSON bodies and server-sent events);
* :mod:`.importer` — the import of recorded request bodies.

Every public name of those modules is re-exported here.
"""

from __future__ import annotations

from typing import Any, Final

from llmcore.providers.base import Carry, EncodeCache, ImportResult, ResponseMethods, ResponseSide
from llmcore.providers.openai_responses import encode
from llmcore.providers.openai_responses.encode import SYSTEM_SEPARATOR, arguments_text, wire_id
from llmcore.providers.openai_responses.importer import _Importer
from llmcore.providers.openai_responses.parse import (
    ENDPOINT,
    ResponsesStreamParser,
    error_from_body,
    map_status,
    parse_response_body,
    parse_usage,
)
from llmcore.request import Request

__all__ = [
    "ENDPOINT",
    "OpenAIResponsesProvider",
    "PROVIDER",
    "ResponsesStreamParser",
    "SYSTEM_SEPARATOR",
    "arguments_text",
    "error_from_body",
    "map_status",
    "parse_response_body",
    "parse_usage",
    "wire_id",
]


class OpenAIResponsesProvider(ResponseMethods):
    """The OpenAI Responses provider (``openai-responses``)."""

    name: Final = "openai-responses"

    def build_body(
        self, request: Request, *, cache: EncodeCache | None = None, carry: Carry | None = None
    ) -> bytes:
        """Return the Responses API body bytes for ``request`` (key order in the module doc).

        ``carry`` holds the running turn's raw output items by message index (M4); they are
        sent in place of that message's own items.

        Raises:
            InvalidRequestError: Unpaired tool calls/results, stop sequences, an unknown tool
                choice, or a ``params.extra`` key that collides with a key this body writes.
            EncodingError: A value cannot be written as JSON.
        """
        return encode.build_body(request, cache=cache, carry=carry)

    def import_body(
        self, body: Any, *, location: str = "$", raw: bytes | None = None
    ) -> ImportResult:
        """Return the neutral request a recorded Responses body stands for.

        See :mod:`llmcore.providers.openai_responses.importer` for what is dropped (with a
        note) and what is refused.

        ``raw`` is accepted for the common signature: ``arguments`` strings keep the UTF-8
        bytes of their decoded text whether or not it is given.

        Raises:
            RequestFileError: The body is malformed (the error names the JSON path).
            UnsupportedContentError: Server state (``previous_response_id``, ``conversation``,
                ``prompt``), files, URL images, hosted-tool items and tools, and other content
                outside the four cases.
        """
        return _Importer().run(body, location)


PROVIDER: Final = OpenAIResponsesProvider(
    ResponseSide(
        endpoint=ENDPOINT,
        parse=parse_response_body,
        stream=ResponsesStreamParser,
        error=error_from_body,
    )
)
"""The registered instance."""
