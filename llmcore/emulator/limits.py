"""The emulator's resource limits: body and head sizes, read timeouts, bodies in flight (SPEC V2).

* **Body size**, per endpoint, enforced while the body streams in: a ``Content-Length`` over
  the limit is answered 413 at once without reading the body; a chunked body is counted as it
  arrives and answered 413 as soon as the count passes the limit. Anthropic Messages:
  :data:`ANTHROPIC_MAX_BODY` (32 MiB, PROVIDER-RULES §1.10, ``request_too_large``). OpenAI Chat
  Completions and Responses: :data:`OPENAI_MAX_BODY` (50 MiB; PROVIDER-RULES documents no limit,
  OpenAI's images and vision guide gives "up to 50 MB total payload size per request").
* **Header timeout**: a connection that has not sent a complete request head within
  :data:`HEADER_TIMEOUT` seconds of opening (or of starting its next request) gets a plain 408
  and is closed (uvicorn has no such timeout; :func:`head_limits_protocol` adds it).
* **Request head size**: more than :data:`MAX_HEADER_BYTES` bytes (the URL and the header
  lines) or more than :data:`MAX_HEADER_LINES` header lines get a plain ``431 Request Header
  Fields Too Large`` and the connection is closed, as soon as the parser passes the limit (at
  most the limit and one socket read are buffered; uvicorn has no such limit of its own).
* **Body timeout**: a client that stalls more than :data:`BODY_TIMEOUT` seconds between two
  body chunks gets a 408 in the provider's error shape and the connection is closed.
* **Body deadline**: the whole body must arrive within :data:`BODY_DEADLINE` seconds of the
  head, however steadily it drips; otherwise the same 408 and close.
* **Bodies in flight**: at most :data:`MAX_BODIES_IN_FLIGHT` bytes of request bodies, over
  all connections, are held at once (from the first body byte read until the response is
  built); a chunk that would pass it gets a 503 in the provider's shape and the connection is
  closed, and its bytes are released.

A client that disconnects mid-body leaves one warning line on the ``llmcore.emulator`` logger
and is not counted as a request. Limits and timeouts are the emulator's own protection; the
408 and 503 bodies and the OpenAI 413 body are not documented by the providers.

Memory held by requests is thus bounded by :data:`MAX_BODIES_IN_FLIGHT` for bodies plus, per
open connection, :data:`MAX_HEADER_BYTES` of head and uvicorn's 64 KiB read buffer
(``HIGH_WATER_LIMIT``). The number of connections is not limited.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Final

import httptools
from starlette.requests import Request
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from llmcore.emulator.errors import Rejection, Shape
from llmcore.emulator.store import DEFAULT_CACHE_BYTES

__all__ = [
    "ANTHROPIC_MAX_BODY",
    "BODY_DEADLINE",
    "BODY_TIMEOUT",
    "HEADER_TIMEOUT",
    "MAX_BODIES_IN_FLIGHT",
    "MAX_HEADER_BYTES",
    "MAX_HEADER_LINES",
    "OPENAI_MAX_BODY",
    "BodiesInFlight",
    "BodyStalled",
    "ClientGone",
    "Limits",
    "head_limits_protocol",
    "read_body",
    "too_large",
]

ANTHROPIC_MAX_BODY: Final = 32 * 1024 * 1024
"""Largest Messages request in bytes; larger ones get 413 ``request_too_large`` (§1.10)."""
OPENAI_MAX_BODY: Final = 50 * 1024 * 1024
"""Largest Chat Completions / Responses request in bytes (OpenAI vision guide: 50 MB)."""
HEADER_TIMEOUT: Final = 30.0
"""Seconds a connection may take to send a complete request head."""
BODY_TIMEOUT: Final = 30.0
"""Seconds a client may pause between two body chunks."""
BODY_DEADLINE: Final = 120.0
"""Seconds a client may take to send a whole body (32 MiB in 120 s is 280 KB/s; loopback
clients send it in well under a second)."""
MAX_HEADER_BYTES: Final = 64 * 1024
"""Largest request head in bytes (the URL and the header lines). Common defaults are 8 to
64 KiB: nginx ``large_client_header_buffers`` 4 × 8 KiB, Node.js ``maxHeaderSize`` 16 KiB,
Envoy ``max_request_headers_kb`` 60 KiB, CPython ``http.client`` 64 KiB per line
(``_MAXLINE``); provider clients send well under 2 KiB."""
MAX_HEADER_LINES: Final = 100
"""Most header lines in one request head (Apache ``LimitRequestFields`` and CPython
``http.client._MAXHEADERS`` are 100)."""
MAX_BODIES_IN_FLIGHT: Final = 256 * 1024 * 1024
"""Most bytes of request bodies held at once over all connections: five 50 MiB bodies, or
eight 32 MiB ones."""

LOG: Final = logging.getLogger("llmcore.emulator")
"""Where the emulator reports clients that went away (one line each)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """The emulator's resource limits (all configurable on :class:`~llmcore.emulator.Emulator`).

    Raises:
        ValueError: A limit or timeout is not positive.
    """

    anthropic_max_body: int = ANTHROPIC_MAX_BODY
    """Largest ``POST /v1/messages`` body in bytes."""
    openai_max_body: int = OPENAI_MAX_BODY
    """Largest ``POST /v1/chat/completions`` and ``POST /v1/responses`` body in bytes."""
    header_timeout: float = HEADER_TIMEOUT
    """Seconds allowed from connection open (or request start) to a complete request head."""
    body_timeout: float = BODY_TIMEOUT
    """Seconds allowed between two body chunks."""
    body_deadline: float = BODY_DEADLINE
    """Seconds allowed from a complete head to the last body byte."""
    max_header_bytes: int = MAX_HEADER_BYTES
    """Largest request head in bytes (the URL and the header lines)."""
    max_header_lines: int = MAX_HEADER_LINES
    """Most header lines in one request."""
    bodies_in_flight: int = MAX_BODIES_IN_FLIGHT
    """Most bytes of request bodies held at once over all connections."""
    cache_bytes: int = DEFAULT_CACHE_BYTES
    """Memory budget in bytes (estimated) for cache entries and stored Responses."""

    def __post_init__(self) -> None:
        for name in (
            "anthropic_max_body",
            "openai_max_body",
            "header_timeout",
            "body_timeout",
            "body_deadline",
            "max_header_bytes",
            "max_header_lines",
            "bodies_in_flight",
            "cache_bytes",
        ):
            if not getattr(self, name) > 0:
                raise ValueError(f"Limits.{name} must be positive, not {getattr(self, name)}")

    def max_body(self, shape: Shape) -> int:
        """Return the body limit in bytes of an endpoint written in ``shape``."""
        return self.anthropic_max_body if shape == "anthropic" else self.openai_max_body


class ClientGone(Exception):
    """The client disconnected before its body was complete.

    Args:
        received: Body bytes read before it went.
    """

    def __init__(self, received: int) -> None:
        self.received = received
        super().__init__(f"client disconnected after {received} body bytes")


class BodyStalled(Rejection):
    """408: the client paused longer than the body timeout, or passed the body deadline."""


class BodiesInFlight:
    """Counts the request body bytes held over all connections, against a limit.

    Used from the server's event loop only (no lock); :attr:`held` may be read from any thread.

    Args:
        limit: Most bytes held at once (:attr:`Limits.bodies_in_flight`).
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0
        """Bytes held now."""

    def take(self, count: int) -> bool:
        """Hold ``count`` more bytes; ``False`` (holding nothing) when that passes the limit."""
        if self.held + count > self.limit:
            return False
        self.held += count
        return True

    def give(self, count: int) -> None:
        """Release ``count`` bytes taken before."""
        self.held -= count


def _overloaded(shape: Shape, limit: int) -> Rejection:
    message = (
        f"The server is holding too many request bodies ({limit} bytes in all); "
        "retry the request later."
    )
    if shape == "anthropic":
        return Rejection(message, status=503, error_type="overloaded_error")
    return Rejection(message, status=503, error_type="server_error")


def too_large(shape: Shape, limit: int, seen: int) -> Rejection:
    """Return the 413 for a body of at least ``seen`` bytes over ``limit``, in ``shape``.

    Anthropic: ``request_too_large`` with the API's message (PROVIDER-RULES §1.10). OpenAI
    documents no body for it: ``invalid_request_error``, code ``request_too_large``.
    """
    if shape == "anthropic":
        return Rejection(
            "Request exceeds the maximum allowed number of bytes.",
            status=413,
            error_type="request_too_large",
        )
    return Rejection(
        f"Maximum request body size {limit} bytes exceeded ({seen} bytes or more sent).",
        status=413,
        code="request_too_large",
    )


def _stalled(shape: Shape, timeout: float, received: int) -> BodyStalled:
    message = (
        f"The request body was not received in time: no data for {timeout:g} s "
        f"after {received} bytes."
    )
    if shape == "anthropic":
        return BodyStalled(message, status=408, error_type="timeout_error")
    return BodyStalled(message, status=408, code="request_timeout")


def _too_slow(shape: Shape, deadline: float, received: int) -> BodyStalled:
    message = (
        f"The request body was not received in time: the whole body must arrive within "
        f"{deadline:g} s ({received} bytes received)."
    )
    if shape == "anthropic":
        return BodyStalled(message, status=408, error_type="timeout_error")
    return BodyStalled(message, status=408, code="request_timeout")


def _declared_length(request: Request) -> int | None:
    value = request.headers.get("content-length", "")
    return int(value) if value.isdigit() else None


async def read_body(
    request: Request, shape: Shape, limits: Limits, in_flight: BodiesInFlight
) -> tuple[bytes, int]:
    """Read ``request``'s body chunk by chunk, enforcing the size limit, timeouts and memory cap.

    Every byte read is taken from ``in_flight``. On an error the bytes are given back here; on
    success the caller gives back the returned count once it no longer needs the body.

    Args:
        request: The starlette request (its body not read yet).
        shape: The endpoint's provider shape (for the limit and the error bodies).
        limits: The limits in force.
        in_flight: The server's count of body bytes held over all connections.

    Returns:
        The whole body, and the number of bytes taken from ``in_flight`` (its length).

    Raises:
        Rejection: 413 when ``Content-Length`` or the bytes read pass the limit (reading
            stops there); :class:`BodyStalled` (408) when a chunk takes longer than the body
            timeout or the body is not complete by the body deadline; 503 when a chunk would
            pass :attr:`Limits.bodies_in_flight`.
        ClientGone: The client disconnected before the body was complete.
    """
    limit = limits.max_body(shape)
    declared = _declared_length(request)
    if declared is not None and declared > limit:
        raise too_large(shape, limit, declared)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limits.body_deadline
    chunks: list[bytes] = []
    received = 0
    more = True
    try:
        while more:
            wait = min(limits.body_timeout, deadline - loop.time())
            try:
                async with asyncio.timeout(max(wait, 0.0)):
                    message = await request.receive()
            except TimeoutError:
                if wait < limits.body_timeout:
                    raise _too_slow(shape, limits.body_deadline, received) from None
                raise _stalled(shape, limits.body_timeout, received) from None
            if message["type"] == "http.disconnect":
                raise ClientGone(received)
            chunk: bytes = message.get("body", b"")
            if received + len(chunk) > limit:
                raise too_large(shape, limit, received + len(chunk))
            if not in_flight.take(len(chunk)):
                raise _overloaded(shape, in_flight.limit)
            received += len(chunk)
            chunks.append(chunk)
            more = bool(message.get("more_body", False))
    except BaseException:
        in_flight.give(received)
        raise
    return b"".join(chunks), received


_HEAD_408_TEXT: Final = b"request header read timed out\n"
_HEAD_408: Final = (
    b"HTTP/1.1 408 Request Timeout\r\n"
    b"content-type: text/plain; charset=utf-8\r\n"
    b"content-length: %d\r\n"
    b"connection: close\r\n\r\n%s"
) % (len(_HEAD_408_TEXT), _HEAD_408_TEXT)


_HEAD_431_TEXT: Final = b"request header fields too large\n"
_HEAD_431: Final = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
    b"content-type: text/plain; charset=utf-8\r\n"
    b"content-length: %d\r\n"
    b"connection: close\r\n\r\n%s"
) % (len(_HEAD_431_TEXT), _HEAD_431_TEXT)
_LINE_OVERHEAD: Final = 4
"""``: `` and CRLF around a header's name and value."""


class _HeadTooLarge(Exception):
    """Internal: raised from a parser callback to stop parsing a head over the limits."""


class _HeadLimitsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol enforcing :attr:`limits` on request heads.

    See :func:`head_limits_protocol`, which sets :attr:`limits`.
    """

    limits: Limits = Limits()
    _header_timer: asyncio.TimerHandle | None = None
    _in_head = True
    """Between requests or inside a head (not inside a body)."""
    _head_bytes = 0
    """Head bytes delivered by the parser (URL, headers) for the current request."""
    _head_lines = 0
    _unparsed = 0
    """Bytes received since the head began (or the connection opened), head incomplete."""
    _refused = False
    _ended_here = False
    """A request ended in the data being fed (its bytes are body, not head)."""

    def _arm(self) -> None:
        self._disarm()
        self._header_timer = self.loop.call_later(self.limits.header_timeout, self._head_too_slow)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _head_too_slow(self) -> None:
        self._header_timer = None
        if not self.transport.is_closing():
            self.transport.write(_HEAD_408)
            self.transport.close()

    def _head_too_large(self) -> None:
        self._refused = True
        self._disarm()
        if self.transport.is_closing():
            return
        if self.cycle is None or self.cycle.response_complete:  # not mid-response
            self.transport.write(_HEAD_431)
        self.transport.close()

    def _count(self, size: int, lines: int = 0) -> None:
        self._head_bytes += size
        self._head_lines += lines
        if self._head_bytes > self.limits.max_header_bytes:
            raise _HeadTooLarge
        if self._head_lines > self.limits.max_header_lines:
            raise _HeadTooLarge

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        """Feed the parser as uvicorn does; refuse a head over the limits with a 431."""
        if self._refused:
            return
        self._unset_keepalive_if_required()
        self._ended_here = False
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
            return
        except httptools.HttpParserError as exc:  # a callback error is one too
            if isinstance(exc.__context__, _HeadTooLarge):
                self._head_too_large()
            else:  # as uvicorn's own data_received
                self.logger.warning("Invalid HTTP request received.")
                self.send_400_response("Invalid HTTP request received.")
            return
        if self._in_head and not self._ended_here:  # all of data is head (pipelining aside)
            self._unparsed += len(data)
            if self._unparsed > self.limits.max_header_bytes:
                self._head_too_large()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_bytes = self._head_lines = 0
        self._arm()

    def on_url(self, url: bytes) -> None:  # may come in pieces
        self._count(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count(len(name) + len(value) + _LINE_OVERHEAD, lines=1)
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._disarm()
        self._in_head = False
        self._unparsed = 0
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._in_head = True
        self._ended_here = True
        super().on_message_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


def head_limits_protocol(limits: Limits) -> type[HttpToolsProtocol]:
    """Return uvicorn's httptools protocol with the header timeout and head size limits.

    Header timeout: the timer starts when the connection opens and again when each request
    starts (``on_message_begin``); it stops when the request head is complete. On expiry the
    server writes a plain 408 and closes the connection. Idle keep-alive time between requests
    is uvicorn's own ``timeout_keep_alive``.

    Head size: the URL and each header (name, value and 4 bytes of separators) are counted as
    the parser delivers them, and so are the bytes received while a head is incomplete (a
    header line that never ends is buffered by the parser, not delivered). Past
    :attr:`Limits.max_header_bytes` or :attr:`Limits.max_header_lines` the server writes a
    plain 431 and closes the connection, before the application sees the request.

    Args:
        limits: :attr:`~Limits.header_timeout`, :attr:`~Limits.max_header_bytes` and
            :attr:`~Limits.max_header_lines` are used.
    """
    return type("HeadLimitsProtocol", (_HeadLimitsProtocol,), {"limits": limits})
