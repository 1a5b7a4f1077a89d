"""Gemini API ``generateContent``: request bodies, responses and recorded bodies (SPEC P1–P8).

The package holds one concern per module:

* :mod:`.encode` — the request body encoder and its key-order table;
* :mod:`.parse` — the response parser (JSON bodies and server-sent events);
* :mod:`.importer` — the import of recorded request bodies;
* :mod:`.caching` — explicit context caches (``cachedContents``) and the Vertex AI endpoint.

Endpoints: AI Studio (``https://generativelanguage.googleapis.com/v1beta``, ``x-goog-api-key``
from ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``) and Vertex AI (:func:`vertex_base_url`, a bearer
token). The model is in the URL: :meth:`llmcore.transport.HTTPTransport.send` takes it as
``model=``.
"""

from __future__ import annotations

from typing import Any, Final

from llmcore.providers.base import Carry, EncodeCache, ImportResult, ResponseMethods, ResponseSide
from llmcore.providers.gemini import encode
from llmcore.providers.gemini.caching import (
    cached_content_body,
    create_cached_content,
    vertex_base_url,
)
from llmcore.providers.gemini.encode import synthetic_id, tool_args, uses_cache, wire_id
from llmcore.providers.gemini.importer import _Importer
from llmcore.providers.gemini.parse import (
    ENDPOINT,
    GeminiStreamParser,
    error_from_body,
    map_finish_reason,
    parse_response,
    parse_usage,
)
from llmcore.request import Request

__all__ = [
    "ENDPOINT",
    "PROVIDER",
    "GeminiProvider",
    "GeminiStreamParser",
    "cached_content_body",
    "create_cached_content",
    "error_from_body",
    "map_finish_reason",
    "parse_response",
    "parse_usage",
    "synthetic_id",
    "tool_args",
    "uses_cache",
    "vertex_base_url",
    "wire_id",
]


class GeminiProvider(ResponseMethods):
    """The Gemini ``generateContent`` provider (``gemini``)."""

    name: Final = "gemini"

    def build_body(
        self, request: Request, *, cache: EncodeCache | None = None, carry: Carry | None = None
    ) -> bytes:
        """Return the ``generateContent`` body bytes for ``request`` (key order in :mod:`.encode`).

        ``carry`` holds the running turn's raw response parts by message index (thought
        signatures, M4); they replace that message's parts unchanged.

        Raises:
            InvalidRequestError: Unpaired tool calls/results, an unknown tool choice, or a
                ``params.extra`` key that collides with a key this body writes.
            EncodingError: A value cannot be written as JSON.
        """
        return encode.build_body(request, cache=cache, carry=carry)

    def import_body(
        self, body: Any, *, location: str = "$", raw: bytes | None = None
    ) -> ImportResult:
        """Return the neutral request a recorded ``generateContent`` body stands for.

        The body names its model in a ``model`` member (the URL's, added by the caller).
        With ``raw`` each ``functionCall.args`` keeps its exact bytes (M2). Thoughts and thought
        signatures are dropped and said in the notes (M4).

        Raises:
            RequestFileError: The body is malformed (the error names the JSON path).
            UnsupportedContentError: ``fileData``, code execution and other parts outside the
                four cases.
        """
        result: ImportResult = _Importer(raw).run(body, location)
        return result


PROVIDER: Final = GeminiProvider(
    ResponseSide(
        endpoint=ENDPOINT,
        parse=parse_response,
        stream=GeminiStreamParser,
        error=error_from_body,
    )
)
"""The registered instance."""
