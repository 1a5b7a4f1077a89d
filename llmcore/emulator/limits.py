"""The emulator's resource limits: body size, header and body read timeouts (SPEC V2).

* **Body size**, per endpoint, enforced while the body streams in: a ``Content-Length`` over
  the limit is answered 413 at once without reading the body; a chunked body is counted as it
  arrives and answered 413 as soon as the count passes the limit. Anthropic Messages:
  :data:`ANTHROPIC_MAX_BODY` (32 MiB, PROVIDER-RULES §1.10, ``request_too_large``). OpenAI Chat
  Completions and Responses: :data:`OPENAI_MAX_BODY` (50 MiB; PROVIDER-RULES documents no limit,
  OpenAI's images and vision guide gives "up to 50 MB total payload size per request").
* **Header timeout**: a connection that has not sent a complete request head within
  :data:`HEADER_TIMEOUT` seconds of opening (or of starting its next request) gets a plain 408
  and is closed (uvicorn has no such timeout; :func:`header_timeout_protocol` adds it).
* **Body timeout**: a client that stalls more than :data:`BODY_TIMEOUT` seconds between two
  body chunks gets a 408 in the provider's error shape and the connection is closed.

A client that disconnects mid-body leaves one warning line on the ``llmcore.emulator`` logger
and is not counted as a request. Limits and timeouts are the emulator's own protection; the
408 bodies and the OpenAI 413 body are not documented by the providers.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Final

from starlette.requests import Request
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from llmcore.emulator.errors import Rejection, Shape
from llmcore.emulator.store import DEFAULT_CACHE_BYTES

__all__ = [
    "ANTHROPIC_MAX_BODY",
    "BODY_TIMEOUT",
    "HEADER_TIMEOUT",
    "OPENAI_MAX_BODY",
    "BodyStalled",
    "ClientGone",
    "Limits",
    "header_timeout_protocol",
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
    cache_bytes: int = DEFAULT_CACHE_BYTES
    """Memory budget in bytes (estimated) for cache entries and stored Responses."""

    def __post_init__(self) -> None:
        for name in ("anthropic_max_body", "openai_max_body", "header_timeout", "body_timeout"):
            if not getattr(self, name) > 0:
                raise ValueError(f"Limits.{name} must be positive, not {getattr(self, name)}")
        if self.cache_bytes <= 0:
            raise ValueError(f"Limits.cache_bytes must be positive, not {self.cache_bytes}")

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
    """408: the client paused longer than the body timeout between two chunks."""


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


def _declared_length(request: Request) -> int | None:
    value = request.headers.get("content-length", "")
    return int(value) if value.isdigit() else None


async def read_body(request: Request, shape: Shape, limits: Limits) -> bytes:
    """Read ``request``'s body chunk by chunk, enforcing the size limit and the body timeout.

    Args:
        request: The starlette request (its body not read yet).
        shape: The endpoint's provider shape (for the limit and the error bodies).
        limits: The limits in force.

    Returns:
        The whole body.

    Raises:
        Rejection: 413 when ``Content-Length`` or the bytes read pass the limit (reading
            stops there); :class:`BodyStalled` (408) when a chunk takes longer than the body
            timeout.
        ClientGone: The client disconnected before the body was complete.
    """
    limit = limits.max_body(shape)
    declared = _declared_length(request)
    if declared is not None and declared > limit:
        raise too_large(shape, limit, declared)
    chunks: list[bytes] = []
    received = 0
    more = True
    while more:
        try:
            async with asyncio.timeout(limits.body_timeout):
                message = await request.receive()
        except TimeoutError:
            raise _stalled(shape, limits.body_timeout, received) from None
        if message["type"] == "http.disconnect":
            raise ClientGone(received)
        chunk: bytes = message.get("body", b"")
        received += len(chunk)
        if received > limit:
            raise too_large(shape, limit, received)
        chunks.append(chunk)
        more = bool(message.get("more_body", False))
    return b"".join(chunks)


_HEAD_408_TEXT: Final = b"request header read timed out\n"
_HEAD_408: Final = (
    b"HTTP/1.1 408 Request Timeout\r\n"
    b"content-type: text/plain; charset=utf-8\r\n"
    b"content-length: %d\r\n"
    b"connection: close\r\n\r\n%s"
) % (len(_HEAD_408_TEXT), _HEAD_408_TEXT)


def header_timeout_protocol(timeout: float) -> type[HttpToolsProtocol]:
    """Return uvicorn's httptools protocol with a header timeout of ``timeout`` seconds.

    The timer starts when the connection opens and again when each request starts
    (``on_message_begin``); it stops when the request head is complete. On expiry the server
    writes a plain 408 and closes the connection. Idle keep-alive time between requests is
    uvicorn's own ``timeout_keep_alive``.

    Args:
        timeout: Seconds allowed for a complete request head.
    """

    class HeaderTimeoutProtocol(HttpToolsProtocol):
        _header_timer: asyncio.TimerHandle | None = None

        def _arm(self) -> None:
            self._disarm()
            self._header_timer = self.loop.call_later(timeout, self._head_too_slow)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _head_too_slow(self) -> None:
            self._header_timer = None
            if not self.transport.is_closing():
                self.transport.write(_HEAD_408)
                self.transport.close()

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._arm()

        def on_headers_complete(self) -> None:
            self._disarm()
            super().on_headers_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return HeaderTimeoutProtocol
