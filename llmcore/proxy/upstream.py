"""The proxy's upstream client: httpcore's connection pool, with each request in one write.

httpx's own transport is an ``httpcore.AsyncConnectionPool``; the proxy uses that pool
directly (HTTP/1.1 keep-alive, TLS, timeouts, the raw body bytes as received — what a proxy
forwards) without the client layer above it (URL parsing, header models, cookies, redirects),
which cost more than the forwarding itself on a small request. Its network streams hold
writes until the next read (or :data:`HOLD_BYTES`): a request's head and body leave in one
``send`` — one TCP segment, not three — since each write on a ``TCP_NODELAY`` socket is its
own segment and its own wake-up of the server.

Errors are httpcore's (:data:`FAILURES`): ``ConnectError`` (refused, DNS, TLS),
``ConnectTimeout`` / ``ReadTimeout`` / ``WriteTimeout`` / ``PoolTimeout``, ``ReadError`` …

Leaves out: what is forwarded (:mod:`llmcore.proxy.server`).
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterable
from typing import Any, Final

import httpcore
import httpx

__all__ = ["FAILURES", "HOLD_BYTES", "TIMEOUTS", "connection_pool", "url"]

HOLD_BYTES: Final = 256 * 1024
"""Writes held at most before they are sent (a larger body goes as soon as it is written)."""
FAILURES: Final = (httpcore.NetworkError, httpcore.TimeoutException, httpcore.ProtocolError)
"""What a request to an upstream that cannot answer raises (``ConnectError``, ``ReadTimeout``…)."""
TIMEOUTS: Final = (httpcore.TimeoutException,)
"""The failures that are timeouts (the proxy answers 504 for them, 502 for the others)."""
_NODELAY: Final = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
"""Else a body's last partial segment waits for the delayed ACK (Nagle)."""


class _HeldWrites(httpcore.AsyncNetworkStream):
    """A network stream whose writes wait for the next read (or :data:`HOLD_BYTES`)."""

    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self._inner = inner
        self._held: list[bytes] = []
        self._size = 0

    async def _flush(self, timeout: float | None) -> None:
        data = self._held[0] if len(self._held) == 1 else b"".join(self._held)
        self._held, self._size = [], 0
        await self._inner.write(data, timeout)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        if self._held:
            await self._flush(timeout)
        return await self._inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if buffer:
            self._held.append(buffer)
            self._size += len(buffer)
            if self._size >= HOLD_BYTES:
                await self._flush(timeout)

    async def aclose(self) -> None:
        self._held, self._size = [], 0
        await self._inner.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        if self._held:
            await self._flush(timeout)
        return _HeldWrites(await self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.AsyncNetworkBackend):
    """httpcore's asyncio (anyio) backend, each stream wrapped in :class:`_HeldWrites`."""

    def __init__(self) -> None:
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        return _HeldWrites(stream)

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:  # pragma: no cover - the proxy's upstream is a URL
        return _HeldWrites(await self._inner.connect_unix_socket(path, timeout, socket_options))

    async def sleep(self, seconds: float) -> None:  # pragma: no cover - retries are off
        await self._inner.sleep(seconds)


def connection_pool() -> httpcore.AsyncConnectionPool:
    """A keep-alive pool for one upstream: HTTP/1.1, certificates verified as httpx does.

    No limit on connections (one per client connection in flight); 64 idle ones kept, 5 s.
    """
    return httpcore.AsyncConnectionPool(
        ssl_context=httpx.create_ssl_context(),
        max_connections=None,
        max_keepalive_connections=64,
        keepalive_expiry=5.0,
        socket_options=_NODELAY,
        network_backend=_Backend(),
    )


def url(upstream: httpx.URL, target: bytes) -> httpcore.URL:
    """The upstream URL for a request target (``/v1/messages?x=1``): the upstream's path first."""
    port = upstream.port or (443 if upstream.scheme == "https" else 80)
    base = upstream.raw_path.split(b"?", 1)[0].rstrip(b"/")
    return httpcore.URL(
        scheme=upstream.raw_scheme, host=upstream.raw_host, port=port, target=base + target
    )
