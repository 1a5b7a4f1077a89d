"""The emulator's endpoints besides model turns, and its JSON 404 / 405 (SPEC V2).

Model turns (``/v1/messages``, ``/v1/chat/completions``, ``/v1/responses``) are served by
:mod:`llmcore.emulator.server`; this module adds what real clients call around them:

* Anthropic: ``POST /v1/messages/count_tokens`` (:mod:`~llmcore.emulator.count_tokens`), the
  Message Batches (:mod:`~llmcore.emulator.batches`);
* OpenAI: ``POST /v1/responses/input_tokens``, ``GET`` / ``DELETE /v1/responses/{id}``,
  ``GET /v1/responses/{id}/input_items``, the Conversations API
  (:mod:`~llmcore.emulator.objects_api`);
* both: ``GET /v1/models`` and ``GET /v1/models/{id}`` (:mod:`~llmcore.emulator.models_api`);
* the front door Claude Code probes: ``HEAD`` / ``GET`` ``/`` and ``/api/hello`` (200).

A path no route serves is answered 404 (a known path with another method, 405) in the
provider's JSON shape, never plain text: Anthropic's ``not_found_error`` when the request has an
``anthropic-version`` or ``x-api-key`` header (:func:`shape_of`), else OpenAI's
``Invalid URL (METHOD /path)`` [O-ERR] (the real API's answer to an unknown path).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from llmcore import jsonbytes
from llmcore.emulator.batches import run_batch
from llmcore.emulator.count_tokens import anthropic_count, openai_count
from llmcore.emulator.engine import Engine, parse_body
from llmcore.emulator.errors import Rejection, Shape, error_body
from llmcore.emulator.limits import LOG, BodiesInFlight, ClientGone, Limits, read_body
from llmcore.emulator.models_api import model_list, model_one
from llmcore.emulator.objects_api import item_page, listed_item, not_found
from llmcore.emulator.openai_validate import validate_responses

__all__ = ["CLOSING", "extra_routes", "gone", "not_found_handler", "refuse", "shape_of"]

CLOSING: Final = frozenset({408, 413, 503})
"""Statuses answered before the body was read through; the connection is closed after them."""
CLIENT_CLOSED: Final = 499
"""Status logged for a client that disconnected mid-body (nginx's convention; never sent)."""
JSONL: Final = "application/x-jsonl"

Handler = Callable[[Engine, Request, bytes], bytes]
"""Answers one request from its body bytes (empty for GET / DELETE); raises Rejection."""


def shape_of(request: Request) -> Shape:
    """Return whose API a request speaks: Anthropic if it sends its headers, else OpenAI."""
    headers = request.headers
    return "anthropic" if "anthropic-version" in headers or "x-api-key" in headers else "openai"


def id_header(shape: Shape) -> str:
    """Return the response header that carries the request id in ``shape``."""
    return "request-id" if shape == "anthropic" else "x-request-id"


def refuse(
    shape: Shape, rejection: Rejection, headers: dict[str, str], request_id: str
) -> Response:
    """Return ``rejection`` as the provider's JSON error response."""
    if rejection.status in CLOSING:  # the rest of the body is never read: end the connection
        headers = {**headers, "connection": "close"}
    return Response(
        error_body(shape, rejection, request_id),
        status_code=rejection.status,
        media_type="application/json",
        headers=headers,
    )


def gone(request: Request, left: ClientGone) -> Response:
    """Log a client that left mid-body; the response (499) is never sent."""
    declared = request.headers.get("content-length")
    of = f" of {declared}" if declared else ""
    LOG.warning(
        "llmcore emulator: client disconnected mid-body (%s %s, %d%s bytes)",
        request.method,
        request.url.path,
        left.received,
        of,
    )
    return Response(status_code=CLIENT_CLOSED)


def _org(request: Request) -> str:
    return request.headers.get("x-api-key") or request.headers.get("authorization") or ""


def _betas(request: Request) -> frozenset[str]:
    values = request.headers.getlist("anthropic-beta")
    return frozenset(part.strip() for value in values for part in value.split(",") if part.strip())


def _base(request: Request) -> str:
    return str(request.base_url).rstrip("/")


def _route(
    path: str,
    methods: list[str],
    handle: Handler,
    *,
    engine: Engine,
    limits: Limits,
    in_flight: BodiesInFlight,
    shape: Shape | None,
    media_type: str = "application/json",
) -> Route:
    async def endpoint(request: Request) -> Response:
        speaks = shape or shape_of(request)
        request_id = engine.request_id()
        headers = {id_header(speaks): request_id}
        held = 0
        try:
            raw = b""
            if request.method == "POST":
                raw, held = await read_body(request, speaks, limits, in_flight)
            if speaks == "anthropic" and shape and "anthropic-version" not in request.headers:
                raise Rejection("anthropic-version: header is required")
            body = handle(engine, request, raw)
        except ClientGone as left:
            return gone(request, left)
        except RecursionError:
            engine.rejected()
            return refuse(speaks, Rejection("the JSON is nested too deeply"), headers, request_id)
        except Rejection as rejection:
            engine.rejected()
            return refuse(speaks, rejection, headers, request_id)
        finally:
            in_flight.give(held)
        return Response(body, media_type=media_type, headers=headers)

    return Route(path, endpoint, methods=methods)


# -- Anthropic ----------------------------------------------------------------------------


def _count_tokens(engine: Engine, request: Request, raw: bytes) -> bytes:
    parsed, spans = parse_body(raw, "anthropic")
    return anthropic_count(parsed, spans, _betas(request))


def _batch_create(engine: Engine, request: Request, raw: bytes) -> bytes:
    parsed, _ = parse_body(raw, "anthropic")
    org, betas = _org(request), _betas(request)

    def handle(params: bytes) -> bytes:
        prepared = engine.anthropic_messages(params, org, betas)
        prepared.commit()  # the next request of the batch sees this one's cache writes
        return prepared.body

    results, errored = run_batch(parsed, handle, engine.request_id)
    total = results.count(b"\n")
    ident = engine.batches.add(results, total, errored, engine.clock.now())
    return jsonbytes.dumps(engine.batches.describe(ident, _base(request)))


def _batch_list(engine: Engine, request: Request, raw: bytes) -> bytes:
    data = [engine.batches.describe(ident, _base(request)) for ident in engine.batches.ids()]
    return jsonbytes.dumps(
        {
            "data": data,
            "has_more": False,
            "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None,
        }
    )


def _batch_one(engine: Engine, request: Request, raw: bytes) -> bytes:
    ident = request.path_params["batch_id"]
    if request.method == "DELETE":
        engine.batches.delete(ident)
        return jsonbytes.dumps({"id": ident, "type": "message_batch_deleted"})
    return jsonbytes.dumps(engine.batches.describe(ident, _base(request)))


def _batch_results(engine: Engine, request: Request, raw: bytes) -> bytes:
    return engine.batches.results(request.path_params["batch_id"])


def _batch_cancel(engine: Engine, request: Request, raw: bytes) -> bytes:
    ident = request.path_params["batch_id"]
    engine.batches.cancel(ident)
    return jsonbytes.dumps(engine.batches.describe(ident, _base(request)))


# -- both ---------------------------------------------------------------------------------


def _models(engine: Engine, request: Request, raw: bytes) -> bytes:
    return model_list(shape_of(request))


def _model(engine: Engine, request: Request, raw: bytes) -> bytes:
    return model_one(shape_of(request), request.path_params["model_id"])


# -- OpenAI -------------------------------------------------------------------------------


def _input_tokens(engine: Engine, request: Request, raw: bytes) -> bytes:
    parsed, spans = parse_body(raw, "openai")
    history, _ = engine.history(parsed)
    return openai_count(parsed, spans, history)


def _stored(engine: Engine, ident: str) -> tuple[Any, list[Any]]:
    found = engine.stored_responses.response(ident)
    if found is None:
        raise not_found("Response", ident)
    return found


def _response(engine: Engine, request: Request, raw: bytes) -> bytes:
    ident = request.path_params["response_id"]
    if request.method == "DELETE":
        if not engine.stored_responses.delete(ident):
            raise not_found("Response", ident)
        return jsonbytes.dumps({"id": ident, "object": "response", "deleted": True})
    return jsonbytes.dumps(_stored(engine, ident)[0])


def _input_items(engine: Engine, request: Request, raw: bytes) -> bytes:
    ident = request.path_params["response_id"]
    inputs = _stored(engine, ident)[1]
    listed = [listed_item(ident, index, item) for index, item in enumerate(inputs)]
    return item_page(listed, dict(request.query_params))


def _new_items(raw: bytes) -> tuple[list[Any], dict[str, Any]]:
    parsed, _ = parse_body(raw, "openai") if raw.strip() else ({}, {})
    if not isinstance(parsed, dict):
        raise Rejection("The request body must be a JSON object.")
    items = parsed.get("items") or []
    metadata = parsed.get("metadata") or {}
    if not isinstance(items, list) or not isinstance(metadata, dict):
        raise Rejection("Invalid type for 'items': expected an array.", param="items")
    validate_responses({"model": "", "input": items}, [])
    return items, metadata


def _conversation_create(engine: Engine, request: Request, raw: bytes) -> bytes:
    items, metadata = _new_items(raw)
    ident = engine.conversations.create(items, metadata, int(engine.clock.now()))
    return engine.conversations.describe(ident)


def _conversation(engine: Engine, request: Request, raw: bytes) -> bytes:
    ident = request.path_params["conversation_id"]
    if request.method == "DELETE":
        engine.conversations.delete(ident)
        return jsonbytes.dumps({"id": ident, "object": "conversation.deleted", "deleted": True})
    if request.method == "POST":
        engine.conversations.update(ident, _new_items(raw)[1])
    return engine.conversations.describe(ident)


def _conversation_items(engine: Engine, request: Request, raw: bytes) -> bytes:
    ident = request.path_params["conversation_id"]
    if request.method == "POST":
        history = engine.conversations.items(ident)
        items, _ = _new_items(raw)
        validate_responses({"model": "", "input": items}, history)
        added = engine.conversations.append(ident, items)
        return item_page(added, {"order": "asc", "limit": str(max(1, len(added)))})
    return item_page(engine.conversations.listed(ident), dict(request.query_params))


def _conversation_item(engine: Engine, request: Request, raw: bytes) -> bytes:
    ident = request.path_params["conversation_id"]
    item_id = request.path_params["item_id"]
    if request.method == "DELETE":
        engine.conversations.remove_item(ident, item_id)
        return engine.conversations.describe(ident)
    for item in engine.conversations.listed(ident):
        if isinstance(item, dict) and item.get("id") == item_id:
            return jsonbytes.dumps(item)
    raise not_found("Item", item_id)


_ANTHROPIC: Final[tuple[tuple[str, list[str], Handler], ...]] = (
    ("/v1/messages/count_tokens", ["POST"], _count_tokens),
    ("/v1/messages/batches", ["POST"], _batch_create),
    ("/v1/messages/batches", ["GET"], _batch_list),
    ("/v1/messages/batches/{batch_id}", ["GET", "DELETE"], _batch_one),
    ("/v1/messages/batches/{batch_id}/cancel", ["POST"], _batch_cancel),
)
_BOTH: Final[tuple[tuple[str, list[str], Handler], ...]] = (
    ("/v1/models", ["GET"], _models),
    ("/v1/models/{model_id}", ["GET"], _model),
)
_OPENAI: Final[tuple[tuple[str, list[str], Handler], ...]] = (
    ("/v1/responses/input_tokens", ["POST"], _input_tokens),
    ("/v1/responses/{response_id}", ["GET", "DELETE"], _response),
    ("/v1/responses/{response_id}/input_items", ["GET"], _input_items),
    ("/v1/conversations", ["POST"], _conversation_create),
    ("/v1/conversations/{conversation_id}", ["GET", "POST", "DELETE"], _conversation),
    ("/v1/conversations/{conversation_id}/items", ["GET", "POST"], _conversation_items),
    ("/v1/conversations/{conversation_id}/items/{item_id}", ["GET", "DELETE"], _conversation_item),
)


def _preflight(request: Request) -> Response:
    """``HEAD`` / ``GET`` ``/`` and ``/api/hello``: 200, as the real API's front door answers.

    Claude Code probes its base URL before a session (``HEAD /``, "a connectivity preflight",
    headroomlabs-ai/headroom#2032; ``HEAD /api/hello`` for preconnect,
    router-for-me/CLIProxyAPI#5905) and reads a non-2xx answer as "endpoint down".
    """
    return Response(b"" if request.method == "HEAD" else b"{}", media_type="application/json")


def extra_routes(engine: Engine, limits: Limits, in_flight: BodiesInFlight) -> list[Route]:
    """Return the routes of this module, for :func:`llmcore.emulator.server.build_app`.

    Listed before the model-turn routes' catch-alls; ``/v1/responses/input_tokens`` comes
    before ``/v1/responses/{id}``.
    """
    common = {"engine": engine, "limits": limits, "in_flight": in_flight}
    routes = [Route(path, _preflight, methods=["GET", "HEAD"]) for path in ("/", "/api/hello")]
    routes += [
        _route(path, methods, handle, shape="anthropic", **common)  # type: ignore[arg-type]
        for path, methods, handle in _ANTHROPIC
    ]
    routes.append(
        _route(
            "/v1/messages/batches/{batch_id}/results",
            ["GET"],
            _batch_results,
            shape="anthropic",
            media_type=JSONL,
            **common,  # type: ignore[arg-type]
        )
    )
    routes.extend(
        _route(path, methods, handle, shape=None, **common)  # type: ignore[arg-type]
        for path, methods, handle in _BOTH
    )
    routes.extend(
        _route(path, methods, handle, shape="openai", **common)  # type: ignore[arg-type]
        for path, methods, handle in _OPENAI
    )
    return routes


def not_found_handler(engine: Engine) -> Callable[[Request, Exception], Any]:
    """Return the Starlette handler answering 404 and 405 in the provider's JSON shape."""

    async def handler(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 404
        shape = shape_of(request)
        request_id = engine.request_id()
        if shape == "anthropic":
            kind = "not_found_error" if status == 404 else "invalid_request_error"
            message = "Not Found" if status == 404 else f"Method Not Allowed: {request.method}"
            rejection = Rejection(message, status=status, error_type=kind)
        else:
            rejection = Rejection(
                f"Invalid URL ({request.method} {request.url.path})", status=status
            )
        engine.rejected()
        return refuse(shape, rejection, {id_header(shape): request_id}, request_id)

    return handler
