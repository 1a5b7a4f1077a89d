"""The proxy's upstream client: HTTP/1.1 keep-alive connections, answers parsed by httptools.

A proxy needs less of a client than httpx gives — no URL or header models, cookies,
redirects, decoding — and on a small request httpx's pure-Python stack (httpcore, h11, anyio)
cost more than the forwarding itself. :class:`Upstream` keeps connections to one origin
(TLS by the event loop, certificates verified with :func:`httpx.create_ssl_context`), writes
each request — head and body — in one write (one segment on the ``TCP_NODELAY`` socket the
loop opens), and parses the answer with httptools (the C parser uvicorn uses, llhttp): the
body comes as received, chunked framing removed, content encoding kept. An idle connection is
kept :data:`KEEPALIVE_SECONDS` (below the common 5 s server timeout, so it is not closed under
a request), at most :data:`MAX_IDLE` of them; one the server closed is not reused.
Informational answers (``100 Continue``) are skipped. Reading stops while more than
:data:`HIGH_WATER` bytes of answer wait for the client (a slow reader is never buffered whole).

Failures raise :class:`UpstreamError`: refused, DNS, TLS, closed before or during the answer,
a malformed answer, or a timeout (``connect``, then ``read`` per wait for the next bytes; the
body is written at once, so a write that stalls shows as a read timeout).

Leaves out: what is forwarded (:mod:`llmcore.proxy.server`).
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections import deque
from collections.abc import AsyncIterator
from typing import Final
from urllib.parse import urlsplit

import httptools
import httpx

__all__ = ["HIGH_WATER", "KEEPALIVE_SECONDS", "MAX_IDLE", "Answer", "Upstream", "UpstreamError"]

KEEPALIVE_SECONDS: Final = 4.0
"""An idle connection older than this is closed, not reused."""
MAX_IDLE: Final = 64
"""Idle connections kept at most."""
HIGH_WATER: Final = 1 << 20
"""Answer bytes waiting for the client above which the upstream is not read."""


class UpstreamError(Exception):
    """The upstream gave no (whole) answer: ``timeout`` tells a timeout from the rest."""

    def __init__(self, message: str, *, timeout: bool = False) -> None:
        super().__init__(message)
        self.timeout = timeout


class Answer(asyncio.Protocol):
    """One connection and the answer being read on it (an asyncio protocol)."""

    def __init__(self, upstream: Upstream) -> None:
        self._upstream = upstream
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._chunks: deque[bytes] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._buffered = 0
        self._paused = self._closed = self._head = self._done = self._released = False
        self._error: UpstreamError | None = None
        self._no_body = self._keep = False
        self.idle_since = 0.0
        self.status = 0
        """The answer's status code, once its head has come."""
        self.headers: list[tuple[bytes, bytes]] = []
        """The answer's headers as received (names as sent), once its head has come."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """asyncio: the connection is open."""
        self._transport = transport  # type: ignore[assignment]  # a TCP transport (uvloop's too)

    def data_received(self, data: bytes) -> None:
        """asyncio: bytes of the answer arrived; httptools parses them."""
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(UpstreamError(f"a malformed answer: {exc}"))

    def connection_lost(self, exc: Exception | None) -> None:
        """asyncio: the connection closed (an error if the answer had not ended)."""
        self._closed = True
        if not self._done:
            self._fail(UpstreamError("the connection closed before the answer ended"))

    def on_header(self, name: bytes, value: bytes) -> None:
        """httptools: one header of the answer."""
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        """httptools: the head ended (an informational one is skipped)."""
        self.status = self._parser.get_status_code()
        if not 100 <= self.status < 200:
            self._head = True
            if self._no_body:  # HEAD: no body follows, whatever the headers say
                self._done = True
            self._wake()

    def on_body(self, body: bytes) -> None:
        """httptools: a piece of the body (reading pauses above :data:`HIGH_WATER`)."""
        self._chunks.append(body)
        self._buffered += len(body)
        if self._buffered > HIGH_WATER and self._transport is not None and not self._paused:
            self._paused = True
            self._transport.pause_reading()
        self._wake()

    def on_message_complete(self) -> None:
        """httptools: the answer ended."""
        if 100 <= self.status < 200:  # an informational answer: the real one follows
            self.headers, self.status = [], 0
            return
        self._done = True
        self._keep = self._parser.should_keep_alive()  # read inside the callback: reset after
        self._wake()

    def _fail(self, error: UpstreamError) -> None:
        self._error = self._error or error
        if self._transport is not None:
            self._transport.close()
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def _wait(self, timeout: float | None) -> None:
        if self._error is not None:
            raise self._error
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            async with asyncio.timeout(timeout):
                await self._waiter
        except TimeoutError:
            self._fail(UpstreamError("timed out waiting for the answer", timeout=True))
        finally:
            self._waiter = None
        if self._error is not None:
            raise self._error

    def _send(self, data: bytes, no_body: bool) -> None:
        self._no_body, self._released = no_body, False
        assert self._transport is not None
        self._transport.write(data)

    async def head(self, timeout: float | None) -> None:
        """Wait for the answer's status and headers."""
        while not self._head:
            await self._wait(timeout)

    async def chunks(self, timeout: float | None) -> AsyncIterator[bytes]:
        """The body as received (chunked framing removed); then the connection is kept or closed.

        Raises:
            UpstreamError: The connection closed or timed out before the body ended.
        """
        while True:
            while self._chunks:
                chunk = self._chunks.popleft()
                self._buffered -= len(chunk)
                if self._paused and self._buffered <= HIGH_WATER // 2:
                    self._paused = False
                    if self._transport is not None:
                        self._transport.resume_reading()
                yield chunk
            if self._done:
                self.release()
                return
            await self._wait(timeout)

    def release(self) -> None:
        """Keep the connection for the next request if the answer ended cleanly; else close it."""
        self._released = True
        reusable = (
            self._done
            and self._error is None
            and not self._closed
            and not self._no_body
            and self._keep
        )
        if reusable:
            self._upstream.keep(self)
        elif self._transport is not None:
            self._transport.close()

    def _reset(self) -> None:
        """Ready for the next request on this connection (the last answer was read whole)."""
        self._parser = httptools.HttpResponseParser(self)
        self._head = self._done = self._keep = False
        self.headers, self.status = [], 0

    @property
    def usable(self) -> bool:
        """Whether this idle connection may carry the next request."""
        fresh = time.monotonic() - self.idle_since < KEEPALIVE_SECONDS
        return fresh and not self._closed and self._error is None

    def close(self) -> None:
        """Close the connection (an answer not read to its end cannot be reused)."""
        if self._transport is not None:
            self._transport.close()

    def close_unless_kept(self) -> None:
        """Close the connection unless :meth:`chunks` read the answer to its end."""
        if not self._released:
            self.close()


class Upstream:
    """Keep-alive connections to the origin of ``base`` (``http`` or ``https``).

    Args:
        base: The upstream base URL; its path (``/api``) is put before each request target.
        timeout: ``connect`` and ``read`` are used (seconds, ``None``: no limit).
    """

    def __init__(self, base: str, timeout: httpx.Timeout) -> None:
        parts = urlsplit(base)
        self.host = parts.hostname or ""
        self.tls = parts.scheme == "https"
        self.port = parts.port or (443 if self.tls else 80)
        self.prefix = parts.path.rstrip("/").encode()
        self.authority = parts.netloc.rpartition("@")[2].encode("idna")
        """The ``Host`` header sent."""
        self._connect_timeout, self.read_timeout = timeout.connect, timeout.read
        self._ssl: ssl.SSLContext | None = None
        self._idle: list[Answer] = []

    def keep(self, answer: Answer) -> None:
        """Put a connection whose answer ended back in the idle list (at most :data:`MAX_IDLE`)."""
        answer.idle_since = time.monotonic()
        self._idle.append(answer)
        while len(self._idle) > MAX_IDLE:
            self._idle.pop(0).close()

    async def _connection(self) -> Answer:
        while self._idle:
            answer = self._idle.pop()
            if answer.usable:
                answer._reset()
                return answer
            answer.close()
        if self.tls and self._ssl is None:
            self._ssl = httpx.create_ssl_context()
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self._connect_timeout):
                _, answer = await loop.create_connection(
                    lambda: Answer(self),
                    self.host,
                    self.port,
                    ssl=self._ssl if self.tls else None,
                    server_hostname=self.host if self.tls else None,
                )
        except TimeoutError:
            raise UpstreamError("timed out connecting", timeout=True) from None
        except (OSError, ssl.SSLError) as exc:  # refused, DNS, TLS
            raise UpstreamError(f"{type(exc).__name__}: {exc}") from None
        return answer

    async def send(
        self, method: str, target: bytes, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> Answer:
        """Send one request (head and body in one write); return once the answer's head came.

        ``target``: the path and query as the client sent them; ``headers``: sent as given
        (``Content-Length`` among them for a body), after ``Host`` (the upstream's).

        Raises:
            UpstreamError: Cannot connect, or no answer head came (closed, malformed, timeout).
        """
        answer = await self._connection()
        start = b"%s %s%s HTTP/1.1\r\nhost: %s\r\n"
        lines = [start % (method.encode(), self.prefix, target, self.authority)]
        lines += [b"%s: %s\r\n" % (name, value) for name, value in headers]
        lines += [b"\r\n", body]
        answer._send(b"".join(lines), no_body=method == "HEAD")
        try:
            await answer.head(self.read_timeout)
        except BaseException:
            answer.close()
            raise
        return answer

    def close(self) -> None:
        """Close every idle connection."""
        while self._idle:
            self._idle.pop().close()
