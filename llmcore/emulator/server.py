"""The emulator's HTTP server: starlette routes on uvicorn, on loopback (SPEC V2, R2 ``emulate``).

Routes: ``POST /v1/messages`` (Anthropic Messages), ``POST /v1/chat/completions`` (OpenAI Chat
Completions), ``POST /v1/responses`` (OpenAI Responses), Gemini's ``generateContent`` and
``cachedContents`` (:mod:`llmcore.emulator.gemini_routes`; base URL :attr:`Emulator.base_url`
``+ "/v1beta"``). Anthropic clients use
:attr:`Emulator.base_url`; OpenAI clients use :attr:`Emulator.openai_base_url` (``…/v1``).
The same wire APIs' cloud endpoints (Vertex AI, Bedrock InvokeModel, Azure OpenAI) are served
by :mod:`llmcore.emulator.cloud`: :attr:`Emulator.vertex_base_url`, :attr:`Emulator.base_url`
as Bedrock's ``endpoint_url`` and Azure's ``azure_endpoint``.
API keys are not checked; the key a client sends (``x-api-key`` or ``Authorization``) names its
organization, and caches are per organization (PROVIDER-RULES §1.2). Anthropic requests need
the ``anthropic-version`` header, as the real API does.

Many clients may connect at once (keep-alive, HTTP/1.1). A request is parsed, validated,
accounted and answered in the event loop; its cache entries are committed just before its
response starts. :meth:`Emulator.pause_responses` holds responses before they start (their
lookups already done), so tests can put requests "in flight together" deterministically.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from llmcore._served import Served, StartStop
from llmcore.emulator.clock import Clock
from llmcore.emulator.cloud import cloud_routes
from llmcore.emulator.converse_routes import converse_routes
from llmcore.emulator.engine import Engine, Prepared
from llmcore.emulator.errors import EmulatorError, Rejection, Shape
from llmcore.emulator.gemini_routes import gemini_routes
from llmcore.emulator.limits import (
    BodiesInFlight,
    ClientGone,
    Limits,
    head_limits_protocol,
    read_body,
)
from llmcore.emulator.routes import CLIENT_CLOSED, extra_routes, not_found_handler, refuse
from llmcore.emulator.routes import gone as gone_mid_body
from llmcore.emulator.script import Script

__all__ = ["CLIENT_CLOSED", "SERVED_APIS", "AccessLog", "Emulator", "build_app"]

SERVED_APIS: Final = (
    ("Anthropic Messages", "", "ANTHROPIC_BASE_URL; POST /v1/messages"),
    ("OpenAI Chat Completions", "/v1", "OPENAI_BASE_URL; POST /chat/completions"),
    ("OpenAI Responses", "/v1", "OPENAI_BASE_URL; POST /responses"),
    ("OpenRouter", "/v1", "the OpenAI SDK's base_url; POST /chat/completions"),
    (
        "Gemini",
        "/v1beta",
        "llmcore's gemini base URL; google-genai: the bare URL with api_version='v1beta'",
    ),
    ("Bedrock Converse", "", "boto3 endpoint_url; POST /model/{id}/converse, /converse-stream"),
    ("Bedrock InvokeModel (Claude)", "", "boto3 endpoint_url; POST /model/{id}/invoke"),
    ("Vertex AI (Claude, Gemini)", "/v1", "base URL; …/publishers/{anthropic|google}/models/…"),
    ("Azure OpenAI", "", "azure_endpoint; /openai/deployments/{d}/…, /openai/v1/…"),
)
"""Every API served: (API, suffix of :attr:`Emulator.base_url`, how a client uses it)."""

_SSE_HEADERS = {"cache-control": "no-cache"}
ACCESS: Final = logging.getLogger("llmcore.emulator.access")
"""The access log (:class:`AccessLog`), INFO level."""


class _Gate:
    """Holds responses before they start while paused; counts who waits."""

    def __init__(self) -> None:
        self._open = threading.Event()
        self._open.set()
        self._lock = threading.Lock()
        self.waiting = 0

    async def wait(self) -> None:
        if self._open.is_set():
            return
        with self._lock:
            self.waiting += 1
        try:
            while not self._open.is_set():
                await asyncio.sleep(0.002)
        finally:
            with self._lock:
                self.waiting -= 1

    def close(self) -> None:
        self._open.clear()

    def open(self) -> None:
        self._open.set()


def _org(request: Request) -> str:
    return request.headers.get("x-api-key") or request.headers.get("authorization") or ""


def _betas(request: Request) -> frozenset[str]:
    """Return the ``anthropic-beta`` header's comma-separated values (all such headers)."""
    values = request.headers.getlist("anthropic-beta")
    return frozenset(part.strip() for value in values for part in value.split(",") if part.strip())


def _answer(prepared: Prepared, headers: dict[str, str]) -> Response:
    prepared.commit()
    if prepared.stream:
        return StreamingResponse(
            iter(prepared.events),
            media_type="text/event-stream; charset=utf-8",
            headers={**headers, **_SSE_HEADERS},
        )
    return Response(prepared.body, media_type="application/json", headers=headers)


def _endpoint(
    engine: Engine,
    gate: _Gate,
    shape: Shape,
    handle: Callable[[bytes, str], Prepared],
    limits: Limits,
    in_flight: BodiesInFlight,
) -> Callable[[Request], Any]:
    id_header = "request-id" if shape == "anthropic" else "x-request-id"

    async def endpoint(request: Request) -> Response:
        try:
            raw, held = await read_body(request, shape, limits, in_flight)
        except ClientGone as gone:
            return gone_mid_body(request, gone)
        except Rejection as rejection:
            request_id = engine.request_id()
            engine.rejected()
            return refuse(shape, rejection, {id_header: request_id}, request_id)
        try:
            return await _serve(raw, request)
        finally:
            in_flight.give(held)

    async def _serve(raw: bytes, request: Request) -> Response:
        request_id = engine.request_id()
        headers = {id_header: request_id}
        try:
            if shape == "anthropic" and "anthropic-version" not in request.headers:
                raise Rejection("anthropic-version: header is required")
            if shape == "anthropic":
                prepared = engine.anthropic_messages(raw, _org(request), _betas(request))
            else:
                prepared = handle(raw, _org(request))
        except Rejection as rejection:
            engine.rejected()
            return refuse(shape, rejection, headers, request_id)
        await gate.wait()
        return _answer(prepared, headers)

    return endpoint


class AccessLog:
    """ASGI middleware: one line per request on the ``llmcore.emulator.access`` logger (INFO).

    The line: ``CLIENT "METHOD PATH" STATUS BYTES B MS ms REQUEST_ID`` — the client address,
    the response status (499 when the client left mid-body), response body bytes, wall time
    from request start to the last body byte in milliseconds, and the ``request-id`` /
    ``x-request-id`` sent (``-`` when none).

    Args:
        app: The ASGI application to wrap.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one ASGI connection scope, logging HTTP requests as they finish."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        seen: dict[str, Any] = {"status": 0, "bytes": 0, "id": "-"}

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                seen["status"] = message["status"]
                for name, value in message.get("headers", ()):
                    if name in (b"request-id", b"x-request-id"):
                        seen["id"] = value.decode("latin-1")
            elif message["type"] == "http.response.body":
                seen["bytes"] += len(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            host, port = scope.get("client") or ("-", 0)
            ACCESS.info(
                '%s:%d "%s %s" %d %d B %.1f ms %s',
                host,
                port,
                scope["method"],
                scope["path"],
                seen["status"],
                seen["bytes"],
                (time.perf_counter() - start) * 1000,
                seen["id"],
            )


def build_app(
    engine: Engine,
    gate: _Gate | None = None,
    limits: Limits | None = None,
    access_log: bool = False,
    in_flight: BodiesInFlight | None = None,
) -> ASGIApp:
    """Return the ASGI application serving ``engine`` (usable in-process).

    Args:
        engine: The shared state.
        gate: Holds responses while paused (default: always open).
        limits: Body size limits, body timeout and deadline, bodies in flight (default:
            :class:`Limits`).
        access_log: Wrap the app in :class:`AccessLog`.
        in_flight: The count of body bytes held (default: a new one with
            :attr:`Limits.bodies_in_flight`).
    """
    gate = gate or _Gate()
    limits = limits or Limits()
    in_flight = in_flight or BodiesInFlight(limits.bodies_in_flight)
    endpoints: tuple[tuple[str, Shape, Callable[[bytes, str], Prepared]], ...] = (
        ("/v1/messages", "anthropic", engine.anthropic_messages),
        ("/v1/chat/completions", "openai", engine.chat_completions),
        ("/v1/responses", "openai", engine.responses),
    )
    routes = [
        Route(path, _endpoint(engine, gate, shape, handle, limits, in_flight), methods=["POST"])
        for path, shape, handle in endpoints
    ]
    routes += extra_routes(engine, limits, in_flight)  # count_tokens, models, batches, …
    routes += cloud_routes(engine, gate.wait, limits, in_flight, _answer)  # Vertex, Bedrock, Azure
    routes += gemini_routes(engine, limits, in_flight)  # generateContent, cachedContents
    routes += converse_routes(engine, gate.wait, limits, in_flight, _answer)  # Bedrock Converse
    missing = not_found_handler(engine)  # JSON 404 / 405 in the provider's shape
    app = Starlette(routes=routes, exception_handlers={404: missing, 405: missing})
    return AccessLog(app) if access_log else app


class Emulator(StartStop):
    """The provider emulator as a real HTTP server on 127.0.0.1 (SPEC V2).

    Use as a context manager, or call :meth:`start` and :meth:`stop`::

        with Emulator(clock=ManualClock()) as emu:
            httpx.post(emu.base_url + "/v1/messages", ...)

    Args:
        clock: Time source for cache expiry (default: the wall clock).
        script: The scripted model (default: :data:`~llmcore.emulator.agent.AGENT_SCRIPT`).
        host: Interface to bind (loopback by default).
        port: TCP port; 0 lets the OS choose (read it from :attr:`port` after :meth:`start`).
        access_log: Log one line per request on the ``llmcore.emulator.access`` logger (INFO;
            ``llmcore emulate --access-log`` sends it to stderr).
        limits: Body size limits, header and body timeouts, head size limits, the body
            deadline, bodies in flight and the cache memory budget (default:
            :class:`~llmcore.emulator.limits.Limits`).
        record: A JSONL file to append each model request and its answer's usage to (the
            record ``llmcore audit`` reads, :class:`llmcore.proxy.record.Recording`), or ``None``.
    """

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        script: Script | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        access_log: bool = False,
        limits: Limits | None = None,
        record: Path | None = None,
    ) -> None:
        self.limits = limits or Limits()
        self.engine = Engine(clock=clock, script=script, cache_bytes=self.limits.cache_bytes)
        self._gate = _Gate()
        self._in_flight = BodiesInFlight(self.limits.bodies_in_flight)
        self.app = build_app(self.engine, self._gate, self.limits, access_log, self._in_flight)
        self._recording: Any = None
        if record is not None:  # the record's hook: a middleware around the whole app
            from llmcore.proxy.record import Recording

            self.app = self._recording = Recording(self.app, record)
        self._served = Served("emulator", host, port, EmulatorError, self._closed)

    @property
    def port(self) -> int:
        """The bound TCP port.

        Raises:
            EmulatorError: The server is not started.
        """
        return self._served.port

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` — the Anthropic base URL (POST ``/v1/messages``)."""
        return self._served.base_url

    @property
    def openai_base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1`` — the OpenAI base URL (``/chat/completions``, …)."""
        return self.base_url + "/v1"

    @property
    def vertex_base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1`` — the Vertex AI base URL (``/projects/…:rawPredict``)."""
        return self.base_url + "/v1"

    def apis(self) -> tuple[tuple[str, str, str], ...]:
        """Every API the emulator serves: ``(API, base URL, how a client is pointed at it)``.

        What ``llmcore emulate`` prints at start-up, one line each (:data:`SERVED_APIS`).

        Raises:
            EmulatorError: The server is not started.
        """
        base = self.base_url
        return tuple((api, base + suffix, how) for api, suffix, how in SERVED_APIS)

    @property
    def gemini_base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1beta`` — the Gemini base URL (``/models/{m}:…``).

        llmcore's transport takes it as the ``gemini`` base URL; google-genai takes
        :attr:`base_url` with ``api_version="v1beta"``.
        """
        return self.base_url + "/v1beta"

    def _config(self) -> dict[str, Any]:
        # AccessLog writes the access lines; httptools, + header timeout and size
        return {"lifespan": "off", "http": head_limits_protocol(self.limits)}

    def start(self, timeout: float = 10.0) -> Emulator:
        """Start serving in a background thread; return once it accepts connections.

        Raises:
            EmulatorError: Already started, the port is taken, or it did not start in time.
        """
        self._served.start(self.app, self._config(), timeout)
        return self

    def serve_forever(self, on_ready: Callable[[Emulator], None] | None = None) -> None:
        """Serve in the calling thread until interrupted (Ctrl+C); used by ``llmcore emulate``.

        Args:
            on_ready: Called once the port is bound (e.g. to print :attr:`base_url`).

        Raises:
            EmulatorError: The port is taken.
        """
        ready = None if on_ready is None else (lambda: on_ready(self))
        self._served.serve_forever(self.app, self._config(), ready)

    def _closed(self) -> None:
        if self._recording is not None:
            self._recording.close()

    def stop(self) -> None:
        """Stop the server and wait for its thread (idempotent)."""
        self._served.stop()

    def pause_responses(self) -> None:
        """Hold every response before it starts (lookups still happen); see :attr:`waiting`."""
        self._gate.close()

    def resume_responses(self) -> None:
        """Let held responses start; each commits its cache entries as it starts."""
        self._gate.open()

    @property
    def body_bytes_held(self) -> int:
        """Request body bytes held now, all connections (:attr:`Limits.bodies_in_flight`)."""
        return self._in_flight.held

    @property
    def waiting(self) -> int:
        """Requests accounted and held by :meth:`pause_responses`."""
        return self._gate.waiting

    def reset(self) -> None:
        """Forget every cache entry and stored response."""
        self.engine.reset()
