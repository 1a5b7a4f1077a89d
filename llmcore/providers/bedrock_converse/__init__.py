"""Amazon Bedrock Converse API: request bodies and the import of recorded bodies (SPEC P1–P3, P8).

The package holds one concern per module:

* :mod:`.encode` — the request body encoder and its key-order table;
* :mod:`.parse` — the response parser (JSON bodies and the event stream);
* :mod:`.importer` — the import of recorded request bodies.

The model id goes in the URL (``/model/{modelId}/converse``, ``/converse-stream`` when
streaming); requests are signed with SigV4 (the ``aws`` extra). Every public name of those
modules is re-exported here.
"""

from __future__ import annotations

from typing import Any, Final

from llmcore.providers.base import Carry, EncodeCache, ImportResult, ResponseMethods, ResponseSide
from llmcore.providers.bedrock_converse import encode
from llmcore.providers.bedrock_converse.encode import (
    IMAGE_FORMATS,
    cache_point,
    caching_family,
    tool_input,
    wire_id,
)
from llmcore.providers.bedrock_converse.importer import _Importer
from llmcore.providers.bedrock_converse.parse import (
    ENDPOINT,
    ConverseStreamParser,
    error_from_body,
    map_stop_reason,
    parse_response,
    parse_usage,
)
from llmcore.request import Request

__all__ = [
    "ENDPOINT",
    "IMAGE_FORMATS",
    "PROVIDER",
    "BedrockConverseProvider",
    "ConverseStreamParser",
    "cache_point",
    "caching_family",
    "error_from_body",
    "map_stop_reason",
    "parse_response",
    "parse_usage",
    "tool_input",
    "wire_id",
]


class BedrockConverseProvider(ResponseMethods):
    """The Amazon Bedrock Converse provider (``bedrock-converse``)."""

    name: Final = "bedrock-converse"

    def build_body(
        self, request: Request, *, cache: EncodeCache | None = None, carry: Carry | None = None
    ) -> bytes:
        """Return the Converse body bytes for ``request`` (key order in :mod:`.encode`).

        Raises:
            InvalidRequestError: Unpaired tool calls/results, tool choice ``none`` (no Converse
                form), or a ``params.extra`` key that collides with a key this body writes.
            EncodingError: A value cannot be written as JSON.
        """
        return encode.build_body(request, cache=cache, carry=carry)

    def import_body(
        self, body: Any, *, location: str = "$", raw: bytes | None = None
    ) -> ImportResult:
        """Return the neutral request a recorded Converse body (with ``modelId``) stands for.

        ``reasoningContent`` blocks are dropped (M4) and said in the notes; ``cachePoint``
        blocks are dropped (llmcore places its own, P3). With ``raw`` each ``toolUse`` keeps the
        exact bytes of its ``input`` (M2).

        Raises:
            RequestFileError: The body is malformed or names no model (the error names the
                JSON path).
            UnsupportedContentError: Documents, videos, S3 images, guard content and other
                content outside the four cases.
        """
        return _Importer(raw).run(body, location)


PROVIDER: Final = BedrockConverseProvider(
    ResponseSide(
        endpoint=ENDPOINT,
        parse=parse_response,
        stream=ConverseStreamParser,
        error=error_from_body,
    )
)
"""The registered instance."""
