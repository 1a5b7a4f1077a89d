"""What every provider module implements, and the provider-neutral pieces they share.

* :class:`Provider` — the Protocol (it names no provider; a provider imports only the core).
* :func:`check_request`, :func:`validate_pairing`, :class:`EncodeCache`, :func:`history_array`,
  :func:`wire_array` — the history's checks and its encoded form
  (:mod:`llmcore.providers.history`, re-exported here).
* :func:`rewrite_id` — the pure, injective-in-practice rewrite of tool-call ids a provider rejects.
* :func:`breakpoint_messages` — which messages carry SPEC P3's breakpoints (3) and (4).
* :class:`ImportResult` — a recorded body turned back into a :class:`~llmcore.request.Request`.
* :class:`ParsedResponse`, :data:`StopReason`, :class:`StreamParser`, :class:`Endpoint` — what a
  provider's response side returns and where its API lives (parsing lives in each module;
  sending lives in :mod:`llmcore.transport`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias

from llmcore import jsonbytes
from llmcore.errors import APIStatusError
from llmcore.messages import Image, Message, Text, ToolCall, ToolResult
from llmcore.providers._sse import SSEEvent
from llmcore.providers.history import (
    SUPPORTED_IMAGE_TYPES,
    EncodeCache,
    NativePieces,
    check_images,
    check_request,
    history_array,
    validate_pairing,
    wire_array,
)
from llmcore.request import Request
from llmcore.usage import Usage

__all__ = [
    "Carry",
    "EncodeCache",
    "Endpoint",
    "ImportResult",
    "NativePieces",
    "ParsedResponse",
    "Provider",
    "ResponseMethods",
    "ResponseSide",
    "StopReason",
    "SUPPORTED_IMAGE_TYPES",
    "StreamParser",
    "arguments_json",
    "breakpoint_messages",
    "breakpoint_options",
    "base64_text",
    "data_url",
    "check_images",
    "check_request",
    "history_array",
    "result_text",
    "rewrite_id",
    "validate_pairing",
    "wire_array",
]


Carry: TypeAlias = Mapping[int, tuple[str, ...]]
"""Provider-only wire data carried in memory within one running turn (SPEC M4).

Maps a message index to raw JSON texts, exactly as the provider sent them: Anthropic
``thinking`` / ``redacted_thinking`` blocks, placed at the start of that assistant message's
``content``; Responses output items (reasoning items and the items that followed them, with
their ids), sent in place of that message's own items. Never stored in the history; dropped
when the turn ends.
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportResult:
    """A recorded body turned back into a neutral request.

    ``notes`` says what was dropped on the way, as M4 allows (thinking blocks, reasoning items,
    provider message ids), one short line each.
    """

    request: Request
    """The neutral request."""
    notes: tuple[str, ...] = ()
    """What was dropped or normalized, for the user to read."""


StopReason: TypeAlias = Literal[
    "end_turn", "tool_use", "max_tokens", "stop_sequence", "pause_turn", "refusal", "other"
]
"""Why the model stopped, mapped from each provider's own value (kept raw in
:attr:`ParsedResponse.raw_stop_reason`): ``end_turn`` (it finished), ``tool_use`` (it wants tool
results), ``max_tokens`` (output limit), ``stop_sequence``, ``pause_turn`` (a server tool loop
paused), ``refusal`` (refused or filtered), ``other``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedResponse:
    """One model response, parsed (SPEC P1, M2, M4, U1).

    ``content`` is what enters the history as one assistant message; ``carry`` is the
    provider-only data the same running turn must send back (M4), never stored.
    """

    content: tuple[Text | ToolCall, ...]
    """The assistant content cases in order: text, and tool calls whose ``arguments`` are the
    bytes exactly as the model produced them (M2). May be empty (e.g. only thinking)."""
    carry: tuple[str, ...] = ()
    """Raw JSON texts of provider-only blocks or items, exactly as received, to be placed
    before this message's content on the following requests of the turn (:data:`Carry`)."""
    stop_reason: StopReason = "end_turn"
    """The normalized stop reason."""
    raw_stop_reason: str | None = None
    """The provider's own stop reason or status, as sent."""
    usage: Usage = field(default_factory=Usage)
    """The request's usage, normalized so ``input`` is uncached input (U1)."""
    model: str | None = None
    """The model the provider says answered."""
    response_id: str | None = None
    """The provider's response or message id (never stored in the history, M4)."""
    notes: tuple[str, ...] = ()
    """Provider-only content left out of ``content`` (server-tool calls and results, …),
    one short line each."""


class StreamParser(Protocol):
    """Turns one response's server-sent events into a :class:`ParsedResponse`."""

    def feed(self, event: SSEEvent) -> None:
        """Take the next event.

        Raises:
            ResponseParseError: Invalid JSON, an unknown event type, or events out of order.
            APIStatusError: An error event arrived in the stream.
        """
        ...

    def finish(self) -> ParsedResponse:
        """Return the response once the stream has ended.

        Raises:
            ResponseParseError: The stream ended before the response was complete.
        """
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Endpoint:
    """Where a provider's API lives and how it authenticates."""

    base_url: str
    """The default base URL, without a trailing slash (e.g. ``https://api.anthropic.com``)."""
    path: str
    """The path appended to the base URL (e.g. ``/v1/messages``). ``{model}`` in it stands for
    the request's model (Gemini's ``/models/{model}:generateContent``, Bedrock's
    ``/model/{model}/converse``)."""
    api_key_env: str
    """The environment variable holding the API key."""
    auth: Literal["x-api-key", "bearer", "x-goog-api-key", "sigv4"]
    """``x-api-key`` / ``x-goog-api-key`` send the key in that header; ``bearer`` in
    ``Authorization``; ``sigv4`` signs the request with AWS Signature Version 4 (credentials
    from the AWS chain)."""
    headers: tuple[tuple[str, str], ...] = ()
    """Other fixed headers (e.g. ``anthropic-version``)."""
    stream_path: str | None = None
    """The path of a streamed request where the API has its own (Gemini's
    ``:streamGenerateContent?alt=sse``, Bedrock's ``/converse-stream``); ``None``: :attr:`path`,
    the body asks for a stream."""
    sigv4_service: str | None = None
    """The SigV4 signing name (``bedrock``) when :attr:`auth` is ``sigv4``."""
    fallback_key_envs: tuple[str, ...] = ()
    """Variables read for the key when :attr:`api_key_env` is unset (``GOOGLE_API_KEY``)."""
    bearer_hosts: tuple[str, ...] = ()
    """Host name endings whose base URL takes a bearer token instead (Vertex AI's
    ``aiplatform.googleapis.com``), read from :attr:`bearer_key_env`."""
    bearer_key_env: str | None = None
    """The environment variable holding that bearer token (an OAuth access token)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponseSide:
    """A provider module's response side: where requests go and how answers are read (P1)."""

    endpoint: Endpoint
    """The default endpoint."""
    parse: Callable[[bytes], ParsedResponse]
    """Parses a non-streamed 200 body."""
    stream: Callable[[], StreamParser]
    """Makes a parser for one event stream."""
    error: Callable[[int, bytes, Mapping[str, str]], APIStatusError]
    """Turns an HTTP error response (status, body, headers) into the typed error."""


class ResponseMethods:
    """The :class:`Provider` response methods, delegating to the module's :class:`ResponseSide`.

    Args:
        response: The module's response side.
    """

    def __init__(self, response: ResponseSide) -> None:
        self.response = response

    @property
    def endpoint(self) -> Endpoint:
        """Where the provider's API lives (base URL, path, authentication)."""
        return self.response.endpoint

    def parse_response(self, body: bytes) -> ParsedResponse:
        """Parse a non-streamed response body (see the module's "Response side")."""
        return self.response.parse(body)

    def stream_parser(self) -> StreamParser:
        """Return a parser for one server-sent-event stream."""
        return self.response.stream()

    def parse_error(self, status: int, body: bytes, headers: Mapping[str, str]) -> APIStatusError:
        """Return the typed error for an HTTP error response."""
        return self.response.error(status, body, headers)


class Provider(Protocol):
    """A provider module: builds body bytes from a neutral request, and imports bodies back.

    Adding a provider means one module implementing this and one registry line
    (:mod:`llmcore.providers`).
    """

    @property
    def name(self) -> str:
        """The registry name, e.g. ``anthropic`` (read-only, so ``Final`` class attributes fit)."""
        ...

    def build_body(
        self, request: Request, *, cache: EncodeCache | None = None, carry: Carry | None = None
    ) -> bytes:
        """Return the exact request body bytes (SPEC P2, P3).

        Args:
            request: The neutral request.
            cache: The conversation's encode cache; unchanged messages are copied from its buffer.
            carry: Provider-only data of the running turn, by message index (M4).

        Raises:
            InvalidRequestError: The history's tool calls and results do not pair up, or a
                parameter has no form for this provider.
            EncodingError: A value cannot be written as JSON.
        """
        ...

    def import_body(
        self, body: Any, *, location: str = "$", raw: bytes | None = None
    ) -> ImportResult:
        """Return the neutral request a recorded body (a parsed JSON object) stands for.

        Args:
            body: The parsed body.
            location: Where errors say the body is (``file.json: $``).
            raw: The JSON bytes ``body`` was parsed from, when known. Anthropic tool calls then
                keep the exact byte span of their ``input`` (SPEC M2, P2), so building the
                imported request gives the recorded bytes back; without it ``input`` is written
                compactly. OpenAI ``arguments`` are strings and keep their bytes either way.

        Raises:
            RequestFileError: The body is malformed; the error names the JSON path.
            UnsupportedContentError: The body holds content outside the four cases.
        """
        ...

    @property
    def endpoint(self) -> Endpoint:
        """Where the API lives and how it authenticates."""
        ...

    def parse_response(self, body: bytes) -> ParsedResponse:
        """Parse a non-streamed (status 200) JSON response body.

        Raises:
            ResponseParseError: The body is not the expected JSON.
            APIStatusError: The body is an error object.
        """
        ...

    def stream_parser(self) -> StreamParser:
        """Return a fresh parser for one streamed response."""
        ...

    def parse_error(self, status: int, body: bytes, headers: Mapping[str, str]) -> APIStatusError:
        """Return the typed error for an HTTP error status (never raises)."""
        ...


_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


def rewrite_id(value: str, *, max_length: int, safe: re.Pattern[str] | None = None) -> str:
    """Return ``value`` unchanged when the provider accepts it, else a deterministic stand-in.

    The stand-in keeps the id's safe characters (others become ``_``), cut so that ``_`` and
    the first 16 hex digits of the SHA-256 of the original id fit in ``max_length``. It is a pure
    function, the identity on valid ids, and two different ids only collide if their hashes'
    first 64 bits do; the history keeps the original ids.

    Args:
        value: The stored tool-call id.
        max_length: The provider's length limit in characters.
        safe: A full-match pattern of ids the provider accepts; ``None`` accepts any characters.
    """
    valid = len(value) <= max_length and value != ""
    if valid and safe is not None:
        valid = safe.fullmatch(value) is not None
    if valid:
        return value
    digest = hashlib.sha256(value.encode("utf-8")).hexdigest()[:16]
    stem = _UNSAFE.sub("_", value)[: max(0, max_length - 17)]
    return f"{stem}_{digest}" if stem else f"id_{digest}"[:max_length]


def breakpoint_messages(messages: tuple[Message, ...]) -> tuple[int | None, int | None]:
    """Return the indexes of the messages that carry SPEC P3 breakpoints (3) and (4).

    (3) is the newest message. (4) is the message immediately before the last assistant message
    — the message that ended the previous request, where that request wrote its cache entry —
    derived from the history alone. (4) is ``None`` when there is no such message or it is (3).
    """
    if not messages:
        return None, None
    newest = len(messages) - 1
    previous: int | None = None
    for index in range(newest, -1, -1):
        if messages[index].role == "assistant":
            previous = index - 1 if index > 0 else None
            break
    if previous == newest:
        previous = None
    return newest, previous


def breakpoint_options(request: Request) -> dict[int, Hashable]:
    """Return the cache TTL of the messages that carry breakpoints (3) and (4), by index.

    The encoding options of :class:`EncodeCache`: a message whose option changes between two
    builds (a breakpoint moved) is encoded again; the others are reused.
    """
    ttl: Hashable = request.params.cache_ttl
    return {i: ttl for i in breakpoint_messages(request.messages) if i is not None}


def sampling_members(request: Request, names: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    """Return the request's set sampling parameters under their wire names, in ``names`` order.

    ``names`` pairs a :class:`~llmcore.request.Params` attribute (``max_tokens``,
    ``temperature``, ``top_p``, ``stop_sequences``) with its wire key; the order is the
    provider's key order (a body's bytes depend on it). Unset (``None``) parameters are left out;
    stop sequences become a list.
    """
    members: dict[str, Any] = {}
    for attribute, key in names:
        value = getattr(request.params, attribute)
        if value is not None:
            members[key] = list(value) if attribute == "stop_sequences" else value
    return members


def base64_text(image: Image) -> jsonbytes.Utf8:
    """Return the base64 text of an image, as a string value the writer copies as is."""
    return jsonbytes.Utf8(image.base64, plain=True)


def result_text(result: ToolResult) -> jsonbytes.Utf8:
    """Return a tool result's content as a string value: valid UTF-8, U+FFFD for invalid bytes.

    The validity check happens once per result (:attr:`ToolResult.utf8_content`), so a body
    build only scans the bytes for characters to escape.
    """
    return jsonbytes.Utf8(result.utf8_content, valid=True)


def data_url(image: Image) -> jsonbytes.Utf8:
    """Return ``data:<mime>;base64,<data>`` for an image (OpenAI ``image_url``).

    The base64 text never needs escaping, so only a mime type that does (a quote, a control
    character, non-ASCII text) makes the writer scan the URL.
    """
    head = f"data:{image.mime_type};base64,"
    plain = head.isascii() and jsonbytes.encode_str(head) == f'"{head}"'
    return jsonbytes.Utf8(head.encode() + image.base64, plain=plain)


def arguments_json(arguments: bytes, *, replace_invalid_utf8: bool = False) -> str:
    """Return the JSON object text sent for stored tool-call argument bytes (SPEC P2).

    The one rule, shared by every provider: bytes that are a JSON object are sent verbatim
    (spacing and key order kept, never parsed and re-dumped); empty or all-whitespace bytes become
    ``{}``; anything else becomes ``{"raw_arguments": "<the bytes as text>"}``, so every provider
    always receives an object. Invalid UTF-8 is U+FFFD in the wrapped text; with
    ``replace_invalid_utf8`` (OpenAI Responses) it is replaced *before* the object check, so an
    object with an invalid byte inside a string is still sent as that object.

    Args:
        arguments: The stored argument bytes (any bytes).
        replace_invalid_utf8: Decode with U+FFFD replacements before deciding.
    """
    if replace_invalid_utf8:
        arguments = arguments.decode("utf-8", "replace").encode("utf-8")
    if jsonbytes.is_json_object(arguments):
        return arguments.decode("utf-8")
    if not arguments.strip():
        return "{}"
    return jsonbytes.dumps_text({"raw_arguments": arguments.decode("utf-8", "replace")})
