"""The cloud endpoints of the emulated wire APIs: Vertex AI, Bedrock InvokeModel, Azure OpenAI.

Each route checks what the cloud checks, undoes the cloud's body difference on the bytes
(:func:`llmcore.cloud._members.rewrite`) and hands the request to the same engine as
``/v1/messages``, ``/v1/chat/completions`` and ``/v1/responses`` — the same caches, the same
scripted model — so a conversation's accounting is the wire API's wherever it is sent.

* **Vertex AI** ``POST /v1/projects/{p}/locations/{l}/publishers/anthropic/models/{model}:
  rawPredict`` (``:streamRawPredict``: server-sent events). Needs ``Authorization: Bearer``
  (else 401 in Google's error shape). The body must carry ``"anthropic_version":
  "vertex-2023-10-16"`` (or a dated Anthropic API version such as ``2026-10-21``, which the
  anthropic SDK 2.14 sends): missing, 400 ``anthropic_version: Field required``; another value,
  404 (a wrong version is answered 404, clawvisor/clawvisor#156). A ``model`` key is refused as
  Vertex refuses keys it does not take, ``model: Extra inputs are not permitted``
  (anthropics/claude-code#37746 shows the message for another key). Errors otherwise in
  Anthropic's shape, request ids ``req_vrtx_…``.
* **Bedrock** ``POST /model/{modelId}/invoke`` and ``/invoke-with-response-stream`` (an AWS
  event stream: each Anthropic event's JSON base64 in a ``chunk`` event's ``bytes``). Needs a
  SigV4 ``Authorization`` (``AWS4-HMAC-SHA256 Credential=…``) with ``x-amz-date``, or a bearer
  API key (else 403 ``Missing Authentication Token``); the signature itself is not checked
  (the emulator holds no secrets). Body: ``model`` and ``stream`` are refused (``Malformed input
  request: #: extraneous key [stream] is not permitted#: extraneous key [model] is not
  permitted, please reformat your input and try again.``, fumito-ito/AnthropicSwiftSDK#19), a
  missing ``anthropic_version`` likewise (``required key [anthropic_version] not found``),
  a value other than ``bedrock-2023-05-31`` or a dated API version (as for Vertex)
  ``Invalid API version: <value>`` (boto/boto3#4218). Errors are ``{"message": …}`` with
  ``x-amzn-ErrorType`` (``ValidationException:…``) and ``x-amzn-RequestId``.
* **Azure OpenAI** ``POST /openai/deployments/{deployment}/chat/completions`` and
  ``/openai/responses`` need ``?api-version=`` (else 404 ``Resource not found``, Azure's answer
  for a path it does not serve); ``/openai/v1/chat/completions`` and ``/openai/v1/responses``
  need none. An ``api-key`` header or ``Authorization: Bearer`` is required, else 401 with
  Azure's ``Access denied due to invalid subscription key…`` message. Errors otherwise in
  OpenAI's shape.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from llmcore import jsonbytes
from llmcore.cloud._members import BodyShapeError, Rewritten, rewrite
from llmcore.emulator.engine import Engine, Prepared
from llmcore.emulator.errors import Rejection, Shape, error_body
from llmcore.emulator.eventstream import CONTENT_TYPE as EVENTSTREAM
from llmcore.emulator.eventstream import encode_message
from llmcore.emulator.limits import BodiesInFlight, ClientGone, Limits, read_body
from llmcore.emulator.routes import gone

__all__ = ["BEDROCK_VERSION", "VERTEX_VERSION", "Answer", "cloud_routes"]

Answer = Callable[[Prepared, dict[str, str]], Response]
"""The server's answer to an accepted request (JSON, or server-sent events)."""

VERTEX_VERSION: Final = "vertex-2023-10-16"
"""The documented ``anthropic_version`` of Vertex AI."""
BEDROCK_VERSION: Final = "bedrock-2023-05-31"
"""The documented ``anthropic_version`` of Bedrock."""
_DATED: Final = re.compile(r"\d{4}-\d{2}-\d{2}")
"""A dated Anthropic API version, which the anthropic SDK (2.14) sends as ``anthropic_version``
on Vertex and Bedrock (its ``lib/vertex`` and ``lib/bedrock`` ``setdefault`` its API version)."""
_CORAL: Final = ":http://internal.amazon.com/coral/com.amazon.bedrock/"
_BEDROCK_TYPES: Final = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    413: "ValidationException",
    429: "ThrottlingException",
    503: "ServiceUnavailableException",
}
_AZURE_DENIED: Final = (
    "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide"
    " a valid key for an active subscription and use a correct regional API endpoint for your"
    " resource."
)
_CHUNK_HEADERS: Final = (
    (":event-type", "chunk"),
    (":content-type", "application/json"),
    (":message-type", "event"),
)


class _Own(Rejection):
    """A refusal written in the cloud's own error shape, not the wire API's."""


@dataclass(frozen=True, slots=True)
class _Site:
    """One cloud's conventions around the engine."""

    shape: Shape
    id_header: str
    id_prefix: str
    render: Callable[[Rejection, dict[str, str], str], Response]
    check: Callable[[Request], None]
    handle: Callable[[Engine, Request, bytes], Prepared]
    answer: Callable[[Prepared, dict[str, str]], Response] | None = None


def _json(body: bytes, status: int, headers: dict[str, str]) -> Response:
    return Response(body, status_code=status, media_type="application/json", headers=headers)


def _rewrite(raw: bytes, shape: Shape, **how: Any) -> Rewritten:
    try:
        return rewrite(raw, **how)
    except BodyShapeError as exc:
        text = "There was an error parsing the body" if shape == "anthropic" else str(exc)
        raise Rejection(text) from exc


# -- Vertex AI ---------------------------------------------------------------------------


def _vertex_render(rejection: Rejection, headers: dict[str, str], rid: str) -> Response:
    if isinstance(rejection, _Own):
        error = {
            "code": rejection.status,
            "message": str(rejection),
            "status": rejection.error_type,
        }
        return _json(jsonbytes.dumps({"error": error}), rejection.status, headers)
    return _json(error_body("anthropic", rejection, rid), rejection.status, headers)


def _bearer(request: Request) -> None:
    if not request.headers.get("authorization", "").startswith("Bearer "):
        raise _Own(
            "Request is missing required authentication credential. Expected OAuth 2 access"
            " token, login cookie or other valid authentication credential.",
            status=401,
            error_type="UNAUTHENTICATED",
        )


def _vertex(engine: Engine, request: Request, raw: bytes) -> Prepared:
    model, _, action = request.path_params["model"].rpartition(":")
    if action not in ("rawPredict", "streamRawPredict") or not model:
        raise _Own(f"The requested URL {request.url.path} was not found.", status=404)
    done = _rewrite(
        raw, "anthropic", drop=frozenset({"anthropic_version"}), read=frozenset({"model"})
    )
    version = done.values.get("anthropic_version")
    if "model" in done.values:
        raise Rejection("model: Extra inputs are not permitted")
    if version is None:
        raise Rejection("anthropic_version: Field required")
    if version != VERTEX_VERSION and not _dated(version):
        raise Rejection(
            f"anthropic_version: {version!r} is not served here",
            status=404,
            error_type="not_found_error",
        )
    body = _rewrite(done.body, "anthropic", prepend=(("model", model),)).body
    return engine.anthropic_messages(body, request.headers["authorization"], _betas(request))


def _dated(version: object) -> bool:
    return isinstance(version, str) and _DATED.fullmatch(version) is not None


def _betas(request: Request) -> frozenset[str]:
    values = request.headers.getlist("anthropic-beta")
    return frozenset(part.strip() for value in values for part in value.split(",") if part.strip())


# -- Bedrock -----------------------------------------------------------------------------


def _bedrock_render(rejection: Rejection, headers: dict[str, str], rid: str) -> Response:
    kind = rejection.error_type
    if not kind.endswith("Exception"):
        kind = _BEDROCK_TYPES.get(rejection.status, "InternalServerException")
    headers = {**headers, "x-amzn-errortype": kind + _CORAL}
    return _json(jsonbytes.dumps({"message": str(rejection)}), rejection.status, headers)


def _aws_auth(request: Request) -> None:
    auth = request.headers.get("authorization", "")
    signed = auth.startswith("AWS4-HMAC-SHA256 Credential=") and "x-amz-date" in request.headers
    if not (signed or auth.startswith("Bearer ")):
        raise Rejection(
            "Missing Authentication Token",
            status=403,
            error_type="MissingAuthenticationTokenException",
        )


def _bedrock(engine: Engine, request: Request, raw: bytes) -> Prepared:
    keys = frozenset({"anthropic_version", "model", "stream"})
    done = _rewrite(raw, "anthropic", drop=keys)
    extraneous = [
        f"#: extraneous key [{key}] is not permitted"
        for key in ("stream", "model")
        if key in done.values
    ]
    if "anthropic_version" not in done.values:
        extraneous.insert(0, "#: required key [anthropic_version] not found")
    if extraneous:
        raise Rejection(
            f"Malformed input request: {''.join(extraneous)},"
            " please reformat your input and try again."
        )
    version = done.values["anthropic_version"]
    if version != BEDROCK_VERSION and not _dated(version):
        raise Rejection(f"Invalid API version: {version}")
    stream = request.url.path.endswith("/invoke-with-response-stream")
    body = _rewrite(
        done.body,
        "anthropic",
        prepend=(("model", request.path_params["model_id"]),),
        append=(("stream", True),) if stream else (),
    ).body
    return engine.anthropic_messages(body, request.headers["authorization"], frozenset())


def _event_data(event: bytes) -> bytes:
    """Return the ``data`` of one server-sent event as the engine wrote it."""
    for line in event.split(b"\n"):
        if line.startswith(b"data: "):
            return line[6:]
    return b""


def _frames(events: list[bytes]) -> Iterator[bytes]:
    for event in events:
        data = base64.b64encode(_event_data(event)).decode()
        yield encode_message(_CHUNK_HEADERS, jsonbytes.dumps({"bytes": data}))


def _bedrock_answer(prepared: Prepared, headers: dict[str, str]) -> Response:
    prepared.commit()
    if prepared.stream:
        return StreamingResponse(_frames(prepared.events), media_type=EVENTSTREAM, headers=headers)
    return Response(prepared.body, media_type="application/json", headers=headers)


# -- Azure OpenAI ------------------------------------------------------------------------


def _azure_render(rejection: Rejection, headers: dict[str, str], rid: str) -> Response:
    if isinstance(rejection, _Own):
        error = {"code": str(rejection.status), "message": str(rejection)}
        return _json(jsonbytes.dumps({"error": error}), rejection.status, headers)
    return _json(error_body("openai", rejection, rid), rejection.status, headers)


def _azure_key(request: Request) -> None:
    if not (
        request.headers.get("api-key")
        or request.headers.get("authorization", "").startswith("Bearer ")
    ):
        raise _Own(_AZURE_DENIED, status=401)


def _azure(dated: bool, responses: bool) -> Callable[[Engine, Request, bytes], Prepared]:
    def handle(engine: Engine, request: Request, raw: bytes) -> Prepared:
        if dated and not request.query_params.get("api-version"):
            raise _Own("Resource not found", status=404)
        org = request.headers.get("api-key") or request.headers["authorization"]
        return engine.responses(raw, org) if responses else engine.chat_completions(raw, org)

    return handle


# -- routes --------------------------------------------------------------------------------

_VERTEX: Final = _Site("anthropic", "request-id", "req_vrtx_", _vertex_render, _bearer, _vertex)
_BEDROCK: Final = _Site(
    "anthropic", "x-amzn-requestid", "", _bedrock_render, _aws_auth, _bedrock, _bedrock_answer
)


def _azure_site(dated: bool, responses: bool) -> _Site:
    return _Site("openai", "x-request-id", "", _azure_render, _azure_key, _azure(dated, responses))


_PATHS: Final = (
    (
        "/v1/projects/{project}/locations/{location}/publishers/anthropic/models/{model}",
        _VERTEX,
    ),
    ("/model/{model_id}/invoke", _BEDROCK),
    ("/model/{model_id}/invoke-with-response-stream", _BEDROCK),
    ("/openai/deployments/{deployment}/chat/completions", _azure_site(True, False)),
    ("/openai/responses", _azure_site(True, True)),
    ("/openai/v1/chat/completions", _azure_site(False, False)),
    ("/openai/v1/responses", _azure_site(False, True)),
)


def cloud_routes(
    engine: Engine,
    wait: Callable[[], Any],
    limits: Limits,
    in_flight: BodiesInFlight,
    answer: Answer,
) -> list[Route]:
    """Return the cloud endpoints' routes (see the module doc).

    Args:
        engine: The shared engine.
        wait: Awaitable factory that holds an accepted answer while responses are paused.
        limits: The body limits in force.
        in_flight: The server's count of body bytes held.
        answer: The server's answer for JSON and server-sent-event responses.
    """
    return [
        Route(path, _endpoint(site, engine, wait, limits, in_flight, answer), methods=["POST"])
        for path, site in _PATHS
    ]


def _endpoint(
    site: _Site,
    engine: Engine,
    wait: Callable[[], Any],
    limits: Limits,
    in_flight: BodiesInFlight,
    answer: Answer,
) -> Callable[[Request], Any]:
    respond = site.answer or answer

    async def endpoint(request: Request) -> Response:
        rid = site.id_prefix + engine.request_id().removeprefix("req_")
        headers = {site.id_header: rid}
        held = 0
        try:
            site.check(request)
            raw, held = await read_body(request, site.shape, limits, in_flight)
            prepared = site.handle(engine, request, raw)
        except ClientGone as left:
            return gone(request, left)
        except Rejection as rejection:
            engine.rejected()
            return site.render(rejection, headers, rid)
        finally:
            in_flight.give(held)
        await wait()
        return respond(prepared, headers)

    return endpoint
