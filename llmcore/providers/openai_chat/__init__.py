"""OpenAI Chat Completions: request bodies and the import of recorded bodies (SPEC P1–P3, P7).

The package holds one concern per module:

* :mod:`.encode` — the request body encoder and its key-order table;
* :mod:`.parse` — the response parser (JSON bodies and server-sent events);
* :mod:`.importer` — the import of recorded request bodies.

Every public name of those modules is re-exported here.
"""

from __future__ import annotations

from typing import Any, Final

from llmcore.providers.base import Carry, EncodeCache, ImportResult, ResponseMethods, ResponseSide
from llmcore.providers.openai_chat import encode
from llmcore.providers.openai_chat.encode import (
    TOOL_ERROR_TEXT,
    body_fields,
    messages_array,
    system_message,
    tool_arguments,
    wire_id,
    wire_messages,
)
from llmcore.providers.openai_chat.importer import _Importer
from llmcore.providers.openai_chat.parse import (
    ENDPOINT,
    ChatStreamParser,
    error_from_body,
    map_finish_reason,
    parse_completion,
    parse_usage,
)
from llmcore.request import Request

__all__ = [
    "ChatStreamParser",
    "ENDPOINT",
    "OpenAIChatProvider",
    "PROVIDER",
    "TOOL_ERROR_TEXT",
    "body_fields",
    "error_from_body",
    "messages_array",
    "map_finish_reason",
    "parse_completion",
    "parse_usage",
    "system_message",
    "tool_arguments",
    "wire_id",
    "wire_messages",
]


class OpenAIChatProvider(ResponseMethods):
    """The OpenAI Chat Completions provider (``openai-chat``)."""

    name: Final = "openai-chat"

    def build_body(
        self, request: Request, *, cache: EncodeCache | None = None, carry: Carry | None = None
    ) -> bytes:
        """Return the Chat Completions body bytes for ``request`` (key order in the module doc).

        ``cache_mode``, ``cache_ttl`` and ``carry`` are ignored: OpenAI caches prefixes
        automatically and Chat has no provider-only data to send back.

        Raises:
            InvalidRequestError: Unpaired tool calls/results, an unknown tool choice, or a
                ``params.extra`` key that collides with a key this body writes.
            EncodingError: A value cannot be written as JSON.
        """
        return encode.build_body(request, cache=cache, carry=carry)

    def import_body(
        self, body: Any, *, location: str = "$", raw: bytes | None = None
    ) -> ImportResult:
        """Return the neutral request a recorded Chat Completions body stands for.

        The normalizations, drops (said in the notes) and refusals are listed in
        :mod:`llmcore.providers.openai_chat.importer`.

        ``raw`` is accepted for the common signature: ``arguments`` strings keep the UTF-8
        bytes of their decoded text whether or not it is given.

        Raises:
            RequestFileError: The body is malformed (the error names the JSON path).
            UnsupportedContentError: File or audio parts, URL images, legacy function calling,
                custom tools, and other content outside the four cases.
        """
        return _Importer().run(body, location)


PROVIDER: Final = OpenAIChatProvider(
    ResponseSide(
        endpoint=ENDPOINT,
        parse=parse_completion,
        stream=ChatStreamParser,
        error=error_from_body,
    )
)
"""The registered instance."""
