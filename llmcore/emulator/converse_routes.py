"""The emulator's Bedrock Runtime endpoints: Converse and ConverseStream (SPEC V2, P8).

``POST /model/{modelId}/converse`` and ``/model/{modelId}/converse-stream``, as the real
``bedrock-runtime`` service serves them (the model id percent-encoded in the path):

* **Authentication**: the real API refuses unsigned requests, so a request needs an
  ``Authorization`` header shaped like SigV4 (``AWS4-HMAC-SHA256 Credential=<key id>/<date>/
  <region>/bedrock/aws4_request, SignedHeaders=…, Signature=…``) and an ``x-amz-date``, or a
  Bedrock API key (``Bearer …``); the signature itself is not checked. Caches are per access
  key id. Otherwise 403 ``UnrecognizedClientException``.
* **Errors** in Bedrock's shape: ``{"message": …}`` with the type in ``x-amzn-ErrorType``
  (``ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/``) and the id in
  ``x-amzn-RequestId``; 400 ``ValidationException``, 403 ``UnrecognizedClientException``, 408
  ``ModelTimeoutException``, 413/400 body limits as ``ValidationException``, 429
  ``ThrottlingException``, 503 ``ServiceUnavailableException``.
* **Streams** are ``application/vnd.amazon.eventstream`` frames
  (:mod:`llmcore.emulator.converse_wire`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from llmcore import jsonbytes
from llmcore.emulator.converse_wire import CONTENT_TYPE
from llmcore.emulator.engine import Engine, Prepared
from llmcore.emulator.errors import Rejection
from llmcore.emulator.limits import BodiesInFlight, ClientGone, Limits, read_body

__all__ = ["bedrock_error", "converse_routes"]

_SIGV4: Final = re.compile(
    r"AWS4-HMAC-SHA256 Credential=([^/,\s]+)/\d{8}/[^/]+/[^/]+/aws4_request,\s*"
    r"SignedHeaders=[^,\s]+,\s*Signature=[0-9a-f]{64}"
)
_NAMESPACE: Final = ":http://internal.amazon.com/coral/com.amazon.bedrock/"
_BY_STATUS: Final = {
    400: "ValidationException",
    403: "AccessDeniedException",
    408: "ModelTimeoutException",
    413: "ValidationException",
    429: "ThrottlingException",
    503: "ServiceUnavailableException",
}


def bedrock_error(rejection: Rejection, request_id: str) -> Response:
    """Return ``rejection`` as Bedrock's error response (see the module doc)."""
    kind = rejection.error_type
    if not kind.endswith("Exception"):
        kind = _BY_STATUS.get(rejection.status, "InternalServerException")
    headers = {"x-amzn-ErrorType": kind + _NAMESPACE, "x-amzn-RequestId": request_id}
    if rejection.status in (408, 413, 503):
        headers["connection"] = "close"
    return Response(
        jsonbytes.dumps({"message": rejection.message}),
        status_code=rejection.status,
        media_type="application/json",
        headers=headers,
    )


def _account(request: Request) -> str:
    """Return the caller's access key id (or API key), refusing an unsigned request."""
    value = request.headers.get("authorization", "")
    if value.startswith("Bearer ") and len(value) > 7:
        return value
    match = _SIGV4.match(value)
    if match is None or "x-amz-date" not in request.headers:
        raise Rejection(
            "The security token included in the request is invalid."
            if value
            else "Missing Authentication Token",
            status=403,
            error_type="UnrecognizedClientException",
        )
    return match.group(1)


def _answer(prepared: Prepared, headers: dict[str, str]) -> Response:
    prepared.commit()
    if prepared.stream:
        return StreamingResponse(iter(prepared.events), media_type=CONTENT_TYPE, headers=headers)
    return Response(prepared.body, media_type="application/json", headers=headers)


def _endpoint(
    engine: Engine, limits: Limits, in_flight: BodiesInFlight, stream: bool
) -> Callable[[Request], Any]:
    async def endpoint(request: Request) -> Response:
        request_id = engine.request_id()
        headers = {"x-amzn-RequestId": request_id}
        held = 0
        try:
            org = _account(request)
            raw, held = await read_body(request, "openai", limits, in_flight)
            model = request.path_params["model_id"]
            prepared = engine.bedrock_converse(raw, org, model, stream)
        except ClientGone:
            return Response(status_code=499)
        except Rejection as rejection:
            engine.rejected()
            return bedrock_error(rejection, request_id)
        finally:
            in_flight.give(held)
        return _answer(prepared, headers)

    return endpoint


def converse_routes(engine: Engine, limits: Limits, in_flight: BodiesInFlight) -> list[Route]:
    """Return the Converse and ConverseStream routes."""
    return [
        Route(
            "/model/{model_id:path}/converse",
            _endpoint(engine, limits, in_flight, stream=False),
            methods=["POST"],
        ),
        Route(
            "/model/{model_id:path}/converse-stream",
            _endpoint(engine, limits, in_flight, stream=True),
            methods=["POST"],
        ),
    ]
