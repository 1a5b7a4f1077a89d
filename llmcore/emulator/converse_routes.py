"""The emulator's Bedrock Runtime Converse endpoints (SPEC V2, P8).

``POST /model/{modelId}/converse`` and ``/model/{modelId}/converse-stream``, served the way
:mod:`llmcore.emulator.cloud` serves Bedrock InvokeModel (the same SigV4-shaped
``Authorization`` check — the real API refuses unsigned requests; the signature itself is not
checked — and the same ``{"message": …}`` errors with ``x-amzn-ErrorType`` and
``x-amzn-RequestId``). The body is the Converse API's own
(:mod:`llmcore.emulator.converse_validate`), the model id comes from the path, caches are per
access key id (the ``Credential=`` of the signature, which stays the same across requests
while the signature changes), and a stream is ``application/vnd.amazon.eventstream`` frames
(:mod:`llmcore.emulator.converse_wire`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from llmcore.emulator.cloud import Answer, _aws_auth, _bedrock_render, _endpoint, _Site, aws_account
from llmcore.emulator.converse_wire import CONTENT_TYPE
from llmcore.emulator.engine import Engine, Prepared
from llmcore.emulator.limits import BodiesInFlight, Limits

__all__ = ["converse_routes"]


def _converse(engine: Engine, request: Request, raw: bytes) -> Prepared:
    stream = request.url.path.endswith("/converse-stream")
    model = request.path_params["model_id"]
    return engine.bedrock_converse(raw, aws_account(request), model, stream)


def _answer(prepared: Prepared, headers: dict[str, str]) -> Response:
    prepared.commit()
    if prepared.stream:
        return StreamingResponse(iter(prepared.events), media_type=CONTENT_TYPE, headers=headers)
    return Response(prepared.body, media_type="application/json", headers=headers)


_CONVERSE: Final = _Site(
    "openai", "x-amzn-requestid", "", _bedrock_render, _aws_auth, _converse, _answer
)


def converse_routes(
    engine: Engine,
    wait: Callable[[], Any],
    limits: Limits,
    in_flight: BodiesInFlight,
    answer: Answer,
) -> list[Route]:
    """Return the Converse and ConverseStream routes (arguments as :func:`cloud_routes`)."""
    return [
        Route(
            path,
            _endpoint(_CONVERSE, engine, wait, limits, in_flight, answer),
            methods=["POST"],
        )
        for path in ("/model/{model_id:path}/converse", "/model/{model_id:path}/converse-stream")
    ]
