"""The recording reverse proxy: uvicorn in front, httpx behind, audit on the side (SPEC V6).

Every request is forwarded to ``upstream + path?query`` with its method, body bytes and headers
(hop-by-hop headers — RFC 9110 §7.6.1: ``Connection`` and the ones it names, ``Keep-Alive``,
``Proxy-*``, ``TE``, ``Trailer``, ``Transfer-Encoding``, ``Upgrade`` — and ``Host`` aside), and
the answer comes back as it arrives: status, headers (hop-by-hop aside) and each chunk of the
body as received from upstream, still compressed if it was (server-sent events pass event by
event, never buffered whole). Both sides keep connections alive (HTTP/1.1).

A POST to a model endpoint is also audited (:class:`~llmcore.audit.live.LiveAudit`), once its
answer has been sent (the client never waits for the audit); the answer's usage is read from a
copy of the chunks as they pass (:class:`~llmcore.audit.tap.UsageTap`), and with a record file one
line is written per request (:class:`~llmcore.audit.live.RecordWriter`). Headers — the API keys
they carry — are never recorded, logged or shown.

An upstream that cannot be reached (refused, DNS, TLS) answers 502, one that times out 504, in
the provider's error shape (Anthropic's for ``/messages``, OpenAI's otherwise), with one line
on the ``llmcore.proxy`` logger (WARNING).

Leaves out: the live table and the command line (:mod:`llmcore.cli.proxy`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import httpx

from llmcore import jsonbytes
from llmcore._served import Served, StartStop
from llmcore.audit.live import LiveAudit, Observation, RecordWriter, is_model_path
from llmcore.audit.tap import UsageTap
from llmcore.errors import UserError
from llmcore.proxy.upstream import Answer, Upstream, UpstreamError
from llmcore.proxy.worker import AuditJob, AuditWorker

__all__ = ["HOP_BY_HOP", "LOG", "Proxy", "ProxyError", "build_app"]

LOG: Final = logging.getLogger("llmcore.proxy")
"""One line per upstream failure (WARNING); never a header."""
HOP_BY_HOP: Final = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"trailers",
        b"transfer-encoding",
        b"upgrade",
    }
)
"""Headers that concern one connection, not the message (RFC 9110 §7.6.1); never forwarded."""
_NOT_FORWARDED: Final = HOP_BY_HOP | {b"host", b"content-length"}
"""``Host`` names the upstream and ``Content-Length`` is the body's own (both set anew)."""
DEFAULT_TIMEOUT: Final = httpx.Timeout(connect=10.0, read=600.0, write=600.0, pool=600.0)
"""Upstream timeouts, seconds: a model may think for minutes before its first byte."""


class ProxyError(UserError):
    """The proxy cannot start: a bad upstream URL or an address it cannot listen on."""


Observer = Callable[[Observation], object]
"""Called (in the audit thread) with each request as audited."""


class _State:
    """What the app shares between requests: the upstream's connections and the audit thread."""

    def __init__(
        self,
        upstream: str,
        audit: LiveAudit,
        record: RecordWriter | None,
        provider: str | None,
        observer: Observer | None,
        timeout: httpx.Timeout,
    ) -> None:
        self.upstream = upstream.rstrip("/")
        self.pool = Upstream(upstream, timeout)
        job = AuditJob(audit, record, provider=provider, observer=observer)
        self.worker = AuditWorker(job)


def _headers(raw: list[tuple[bytes, bytes]], also: frozenset[bytes]) -> list[tuple[bytes, bytes]]:
    """``raw`` without hop-by-hop headers, those ``Connection`` names, and ``also``."""
    named = {
        part.strip().lower()
        for name, value in raw
        if name.lower() == b"connection"
        for part in value.split(b",")
    }
    return [(n, v) for n, v in raw if (low := n.lower()) not in also and low not in named]


def _request_headers(raw: list[tuple[bytes, bytes]], body: bytes) -> list[tuple[bytes, bytes]]:
    """The client's headers to send upstream (:data:`_NOT_FORWARDED` aside), the body's length."""
    headers = _headers(raw, _NOT_FORWARDED)
    if body or any(name.lower() == b"content-length" for name, _ in raw):
        headers.append((b"content-length", b"%d" % len(body)))
    return headers


def _error(path: str, status: int, message: str) -> bytes:
    """An error body in the provider's shape (Anthropic for ``/messages``, else OpenAI)."""
    if path.rstrip("/").endswith("/messages"):
        kind = "timeout_error" if status == 504 else "api_error"
        return jsonbytes.dumps({"type": "error", "error": {"type": kind, "message": message}})
    code = "upstream_timeout" if status == 504 else "upstream_unreachable"
    return jsonbytes.dumps(
        {"error": {"message": message, "type": "server_error", "param": None, "code": code}}
    )


async def _read_body(receive: Any) -> bytes | None:
    """The whole request body, or ``None`` when the client left before its end."""
    parts = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(parts)


def build_app(state: _State) -> Callable[..., Any]:
    """The ASGI application forwarding to ``state.upstream`` (HTTP only; lifespan closes)."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(state, receive, send)
            return
        if scope["type"] != "http":
            return
        body = await _read_body(receive)
        if body is None:
            return
        path: str = scope["path"]
        if scope["method"] != "POST" or not is_model_path(path):
            await _forward(state, scope, body, send)
            return
        ticket = state.worker.ticket()  # its place: the order requests came in
        try:
            status, tap = await _forward(state, scope, body, send)
        except BaseException:
            state.worker.skip(ticket)
            raise
        # Audited once the answer is sent, in the audit thread: no request waits for it.
        state.worker.put(body, path, status, tap, ticket=ticket)

    return app


async def _lifespan(state: _State, receive: Any, send: Any) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            state.pool.close()
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _forward(
    state: _State, scope: dict[str, Any], body: bytes, send: Any
) -> tuple[int, UsageTap | None]:
    """Send the request upstream and its answer back; return the status and the answer's tap.

    The status is 0 and the tap ``None`` when no answer came (the client got a 502 or 504).
    """
    target = scope.get("raw_path") or scope["path"].encode()
    if query := scope.get("query_string", b""):
        target += b"?" + query
    headers = _request_headers(scope["headers"], body)
    try:
        answer = await state.pool.send(scope["method"], target, headers, body)
    except UpstreamError as exc:
        await _upstream_failed(state, scope, send, 504 if exc.timeout else 502, exc)
        return 0, None
    named = {k.lower(): v for k, v in answer.headers}
    tap = UsageTap(_text(named.get(b"content-type")), _text(named.get(b"content-encoding")))
    try:
        await send(
            {
                "type": "http.response.start",
                "status": answer.status,
                "headers": _headers(answer.headers, HOP_BY_HOP),
            }
        )
        async for chunk in _chunks(state, scope, answer):
            tap.feed(chunk)
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    finally:
        answer.close_unless_kept()
    return answer.status, tap


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode("latin-1")


async def _chunks(state: _State, scope: dict[str, Any], answer: Answer) -> AsyncIterator[bytes]:
    """The upstream body's chunks as received; a failure mid-body ends it (one log line)."""
    try:
        async for chunk in answer.chunks(state.pool.read_timeout):
            yield chunk
    except UpstreamError as exc:
        LOG.warning(
            "llmcore proxy: upstream %s failed mid-answer (%s %s): %s",
            urlsplit(state.upstream).netloc,
            scope["method"],
            scope["path"],
            exc,
        )


async def _upstream_failed(
    state: _State,
    scope: dict[str, Any],
    send: Any,
    status: int,
    exc: Exception,
) -> None:
    where = urlsplit(state.upstream).netloc
    what = "timed out" if status == 504 else "unreachable"
    LOG.warning(
        "llmcore proxy: upstream %s %s (%s %s): %s",
        where,
        what,
        scope["method"],
        scope["path"],
        str(exc) or "no detail",
    )
    payload = _error(scope["path"], status, f"llmcore proxy: upstream {where} {what}")
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(payload))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


class Proxy(StartStop):
    """The pass-through, recording, auditing proxy as a real HTTP server (SPEC V6).

    Use as a context manager, or call :meth:`start` and :meth:`stop`::

        with Proxy("https://api.anthropic.com", record=Path("run.jsonl")) as proxy:
            anthropic.Anthropic(base_url=proxy.base_url)

    Args:
        upstream: The API's base URL (``https://api.anthropic.com``, ``https://api.openai.com``,
            ``https://openrouter.ai``, or an emulator's ``http://127.0.0.1:PORT``); the
            client's path (``/v1/messages``) is appended to it.
        host: Interface to listen on (loopback by default).
        port: TCP port; 0 lets the OS choose (:attr:`port`).
        record: A JSONL file to append the record to (:mod:`llmcore.audit.live`), or ``None``.
        audit: The :class:`~llmcore.audit.live.LiveAudit` to add to (default: a new one).
        provider: The upstream's provider name when its path alone does not say it
            (``openrouter``); default: ``openrouter`` for an ``openrouter.ai`` upstream.
        observer: Called in the audit thread with each request audited, in order.
        timeout: Upstream timeouts (default :data:`DEFAULT_TIMEOUT`).

    Raises:
        ProxyError: ``upstream`` is not an ``http``/``https`` URL.
        OSError: The record file cannot be opened.
    """

    def __init__(
        self,
        upstream: str,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        record: Path | None = None,
        audit: LiveAudit | None = None,
        provider: str | None = None,
        observer: Observer | None = None,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
    ) -> None:
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ProxyError(f"--upstream {upstream!r} is not an http:// or https:// URL")
        if provider is None and (parts.hostname or "").endswith("openrouter.ai"):
            provider = "openrouter"
        self.upstream = upstream
        """The upstream base URL."""
        self.audit = audit or LiveAudit()
        """The live audit (:meth:`~llmcore.audit.live.LiveAudit.rows` for the figures)."""
        self.record = RecordWriter(record) if record is not None else None
        self._state = _State(upstream, self.audit, self.record, provider, observer, timeout)
        self.app = build_app(self._state)
        self._served = Served("proxy", host, port, ProxyError, self._closed)

    @property
    def port(self) -> int:
        """The bound TCP port (raises :class:`ProxyError` before :meth:`start`)."""
        return self._served.port

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT`` — what clients use instead of the upstream's base URL."""
        return self._served.base_url

    _CONFIG: Final = {"lifespan": "on", "http": "auto"}
    """uvicorn options: the lifespan closes the upstream client; httptools when installed."""

    def start(self, timeout: float = 10.0) -> Proxy:
        """Serve in a background thread; return once it accepts connections.

        Raises:
            ProxyError: Already started, the address cannot be bound, or it did not start.
        """
        self._served.start(self.app, self._CONFIG, timeout)
        return self

    def serve_forever(self, on_ready: Callable[[Proxy], None] | None = None) -> None:
        """Serve in the calling thread until interrupted (``llmcore proxy``).

        Raises:
            ProxyError: The address cannot be bound.
        """
        ready = None if on_ready is None else (lambda: on_ready(self))
        self._served.serve_forever(self.app, self._CONFIG, ready)

    def _closed(self) -> None:
        self._state.worker.drain()  # every request answered is audited before the record closes
        if self.record is not None:
            self.record.close()

    def stop(self) -> None:
        """Stop serving, finish the audit and close the record (idempotent)."""
        self._served.stop()
