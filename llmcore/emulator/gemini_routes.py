"""The emulator's Gemini routes and Gemini's error shape (SPEC V2).

* ``POST /v1beta/models/{model}:generateContent`` and ``…:streamGenerateContent?alt=sse``
  (AI Studio), the same under ``/v1/projects/{p}/locations/{l}/publishers/google/models/``
  (Vertex AI); ``streamGenerateContent`` without ``alt=sse`` answers the JSON array of chunks,
  as the API does;
* ``POST`` / ``GET /v1beta/cachedContents``, ``GET`` / ``PATCH`` / ``DELETE
  /v1beta/cachedContents/{id}`` (:class:`~llmcore.emulator.gemini_cache.CachedContents`).

The API key (``x-goog-api-key``, ``?key=`` or a bearer token) names the project; caches are per
key. Errors are ``{"error": {"code", "message", "status"}}`` with the gRPC status name
(``INVALID_ARGUMENT``, ``NOT_FOUND``, …; https://ai.google.dev/gemini-api/docs/troubleshooting).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from llmcore import jsonbytes
from llmcore.emulator.engine import Engine, Prepared
from llmcore.emulator.errors import Rejection
from llmcore.emulator.gemini_wire import GeminiService
from llmcore.emulator.limits import BodiesInFlight, ClientGone, Limits, read_body
from llmcore.emulator.routes import gone

__all__ = ["gemini_error", "gemini_routes"]

_STATUS_NAMES: Final = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    405: "INVALID_ARGUMENT",
    408: "DEADLINE_EXCEEDED",
    413: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}
_METHODS: Final = ("generateContent", "streamGenerateContent")


def gemini_error(rejection: Rejection) -> Response:
    """Return ``rejection`` as Gemini's JSON error response."""
    name = rejection.error_type
    if not name.isupper():
        name = _STATUS_NAMES.get(rejection.status, "INVALID_ARGUMENT")
    body = {"error": {"code": rejection.status, "message": rejection.message, "status": name}}
    return Response(
        jsonbytes.dumps(body), status_code=rejection.status, media_type="application/json"
    )


def _org(request: Request) -> str:
    headers = request.headers
    return (
        headers.get("x-goog-api-key")
        or request.query_params.get("key")
        or headers.get("authorization")
        or ""
    )


def _answer(prepared: Prepared, sse: bool) -> Response:
    prepared.commit()
    if prepared.stream and sse:
        return StreamingResponse(iter(prepared.events), media_type="text/event-stream")
    if prepared.stream:  # no alt=sse: one JSON array of the chunks
        chunks = b",".join(e.removeprefix(b"data: ").rstrip(b"\r\n") for e in prepared.events)
        return Response(b"[" + chunks + b"]", media_type="application/json")
    return Response(prepared.body, media_type="application/json")


Serve = Callable[[Request, bytes], Response]


def _reading(
    limits: Limits, in_flight: BodiesInFlight, serve: Serve
) -> Callable[[Request], Awaitable[Response]]:
    """Wrap ``serve`` with the body limits; every refusal in Gemini's shape."""

    async def endpoint(request: Request) -> Response:
        held = 0
        try:
            raw = b""
            if request.method in ("POST", "PATCH"):
                raw, held = await read_body(request, "openai", limits, in_flight)
            return serve(request, raw)
        except ClientGone as left:
            return gone(request, left)
        except Rejection as rejection:
            return gemini_error(rejection)
        except RecursionError:
            return gemini_error(Rejection("Invalid JSON payload received (nested too deeply)."))
        finally:
            in_flight.give(held)

    return endpoint


def gemini_routes(engine: Engine, limits: Limits, in_flight: BodiesInFlight) -> list[Route]:
    """Return the Gemini routes; the service is kept as ``engine.services["gemini"]``."""
    service = GeminiService(engine.clock, engine.script, engine.budget)
    engine.services["gemini"] = service

    def generate(request: Request, raw: bytes) -> Response:
        model, _, method = request.path_params["target"].rpartition(":")
        if method not in _METHODS or not model:
            raise Rejection(f"Method not found: {method}", status=404, error_type="NOT_FOUND")
        engine.request_id()
        stream = method == "streamGenerateContent"
        try:
            prepared = service.generate(raw, model, _org(request), stream)
        except Rejection:
            engine.rejected()
            raise
        return _answer(prepared, request.query_params.get("alt") == "sse")

    def caches(request: Request, raw: bytes) -> Response:
        ident = request.path_params.get("ident")
        name = f"cachedContents/{ident}" if ident else None
        body = service.cached_contents(request.method, name, raw, _org(request))
        return Response(body, media_type="application/json")

    model_turn = _reading(limits, in_flight, generate)
    cache_call = _reading(limits, in_flight, caches)
    vertex = "/v1/projects/{project}/locations/{location}/publishers/google/models/{target}"
    return [
        Route("/v1beta/models/{target}", model_turn, methods=["POST"]),
        Route(vertex, model_turn, methods=["POST"]),
        Route("/v1beta/cachedContents", cache_call, methods=["GET", "POST"]),
        Route("/v1beta/cachedContents/{ident}", cache_call, methods=["GET", "PATCH", "DELETE"]),
    ]
