"""Anthropic Messages on Google Vertex AI and on Amazon Bedrock InvokeModel (SPEC P8).

The body is the ``anthropic`` writer's, with only the documented differences, made on the bytes
by :func:`llmcore.cloud._members.rewrite` (every other member's bytes unchanged, in order):

========  =====================================================================================
Vertex    ``model`` removed (it goes in the URL); ``"anthropic_version":"vertex-2023-10-16"``
          appended as the last member. ``stream`` stays.
          ``POST {base}/projects/{project}/locations/{region}/publishers/anthropic/models/
          {model}:rawPredict`` (``:streamRawPredict`` when the body streams); ``Authorization:
          Bearer <token>`` from :class:`llmcore.cloud.google.GoogleAuth`. Base URL
          ``https://{region}-aiplatform.googleapis.com/v1`` (``global``:
          ``https://aiplatform.googleapis.com/v1``; ``us`` / ``eu``:
          ``https://aiplatform.{us,eu}.rep.googleapis.com/v1``), or ``ANTHROPIC_VERTEX_BASE_URL``.
Bedrock   ``model`` and ``stream`` removed; ``"anthropic_version":"bedrock-2023-05-31"``
          appended as the last member. ``POST {base}/model/{modelId}/invoke``
          (``/invoke-with-response-stream`` when the body streams), SigV4-signed by
          :class:`llmcore.cloud.aws.SigV4Signer` (or ``Authorization: Bearer`` with a Bedrock
          API key, ``AWS_BEARER_TOKEN_BEDROCK``). Base URL
          ``https://bedrock-runtime.{region}.amazonaws.com``, or ``ANTHROPIC_BEDROCK_BASE_URL``.
          A streamed answer is an AWS event stream whose ``chunk`` events carry each Anthropic
          event's JSON base64-encoded in ``bytes``.
========  =====================================================================================

Sources: https://platform.claude.com/docs/en/build-with-claude/claude-on-vertex-ai ("model is
not passed in the request body… anthropic_version is passed in the body… vertex-2023-10-16"),
https://platform.claude.com/docs/en/build-with-claude/claude-on-amazon-bedrock and
https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-messages-request-response.html
(``anthropic_version`` ``bedrock-2023-05-31``), the anthropic SDK's ``lib/vertex/_client.py``
and ``lib/bedrock/_client.py`` ``_prepare_options`` (its ``setdefault`` puts
``anthropic_version`` after the caller's keys; ``model`` is popped, and on Bedrock ``stream``;
the model segment is quoted as there). Fixed placement keeps P4: the version is one constant
member after everything the history moves, so a request's bytes differ from the next one's
exactly where the ``anthropic`` body's do.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Mapping
from typing import Any, Final

from llmcore import jsonbytes
from llmcore.cloud.base import USER_AGENT, WireRequest, path_segment, rewrite_body
from llmcore.errors import APIStatusError, ResponseParseError
from llmcore.providers import _parse_common as pc
from llmcore.providers._eventstream import EventMessage, event_kind
from llmcore.providers._sse import SSEEvent

__all__ = [
    "BEDROCK_VERSION",
    "VERTEX_VERSION",
    "AnthropicBedrock",
    "AnthropicVertex",
    "bedrock_error",
    "invoke_stream_events",
    "vertex_base_url",
]

VERTEX_VERSION: Final = "vertex-2023-10-16"
"""The ``anthropic_version`` body value Vertex AI requires."""
BEDROCK_VERSION: Final = "bedrock-2023-05-31"
"""The ``anthropic_version`` body value Bedrock requires."""

_NAME: Final = "anthropic"
_PROVIDERS: Final = frozenset({_NAME})
_VERTEX_SAFE: Final = "!$&'()*+,=:@"  # RFC 3986 pchar less ";", as the SDK quotes the model
_BEDROCK_SAFE: Final = ":;"  # the SDK's urllib.parse.quote(model, safe=":;")
_JSON: Final = {"content-type": "application/json", "user-agent": USER_AGENT}

_STREAM_ERROR: Final = {
    "throttlingException": "rate_limit_error",
    "serviceUnavailableException": "overloaded_error",
    "validationException": "invalid_request_error",
    "modelTimeoutException": "timeout_error",
}
"""Bedrock stream exceptions as the Anthropic error types of the same status (else api_error)."""


def vertex_base_url(region: str) -> str:
    """Return the Vertex AI base URL of ``region`` (as the anthropic SDK picks it)."""
    special = {
        "global": "https://aiplatform.googleapis.com/v1",
        "us": "https://aiplatform.us.rep.googleapis.com/v1",
        "eu": "https://aiplatform.eu.rep.googleapis.com/v1",
    }
    return special.get(region, f"https://{region}-aiplatform.googleapis.com/v1")


class AnthropicVertex:
    """Anthropic Messages on Vertex AI (see the module doc); serves provider ``anthropic``.

    Args:
        project: The Google Cloud project (else the environment or the credentials').
        region: The location, e.g. ``us-east5`` or ``global`` (else ``GOOGLE_CLOUD_LOCATION``,
            ``CLOUD_ML_REGION``).
        access_token: A bearer token used as given; else Application Default Credentials.
        credentials: google-auth credentials to use instead of the default ones.
        base_url: The URL before ``/projects/…`` (e.g. an emulator's ``…/v1``).
        environ: Where settings are read (``os.environ`` by default).
        anthropic_version: The body's ``anthropic_version`` (:data:`VERTEX_VERSION`, as
            documented; the anthropic SDK 2.14 sends its dated API version instead).
    """

    providers: Final = _PROVIDERS

    def __init__(
        self,
        *,
        project: str | None = None,
        region: str | None = None,
        access_token: str | None = None,
        credentials: Any = None,
        base_url: str | None = None,
        environ: Mapping[str, str] | None = None,
        anthropic_version: str = VERTEX_VERSION,
    ) -> None:
        from llmcore.cloud.google import GoogleAuth

        self.anthropic_version = anthropic_version
        env = os.environ if environ is None else environ
        self.auth = GoogleAuth(
            access_token=access_token,
            credentials=credentials,
            project=project,
            location=region,
            environ=env,
        )
        self._base_url = base_url or env.get("ANTHROPIC_VERTEX_BASE_URL")

    def __repr__(self) -> str:
        return f"AnthropicVertex(auth={self.auth!r}, base_url={self._base_url!r})"

    def url(self, model: str, *, stream: bool) -> str:
        """Return the ``rawPredict`` / ``streamRawPredict`` URL of ``model``.

        Raises:
            CloudSetupError: No project or region.
        """
        region = self.auth.location
        base = (self._base_url or vertex_base_url(region)).rstrip("/")
        project = path_segment(self.auth.project, provider=_NAME, what="project", safe="")
        where = path_segment(region, provider=_NAME, what="region", safe="")
        name = path_segment(model, provider=_NAME, what="model", safe=_VERTEX_SAFE)
        specifier = "streamRawPredict" if stream else "rawPredict"
        return (
            f"{base}/projects/{project}/locations/{where}"
            f"/publishers/anthropic/models/{name}:{specifier}"
        )

    def prepare(self, provider: str, body: bytes, *, stream: bool) -> WireRequest:
        """Return the Vertex request for an ``anthropic`` body (see :class:`CloudEndpoint`)."""
        done = rewrite_body(
            _NAME,
            body,
            drop=frozenset({"model"}),
            read=frozenset({"stream"}),
            append=(("anthropic_version", self.anthropic_version),),
        )
        streams = stream or done.values.get("stream") is True
        url = self.url(done.values.get("model"), stream=streams)  # type: ignore[arg-type]
        return WireRequest(url=url, headers={**_JSON, **self.auth.headers()}, body=done.body)


class AnthropicBedrock:
    """Anthropic Messages on Bedrock InvokeModel (see the module doc); serves ``anthropic``.

    Args:
        region: The AWS region (else ``AWS_REGION``, ``AWS_DEFAULT_REGION``, the profile's).
        base_url: The URL before ``/model/…`` (e.g. an emulator's).
        api_key: A Bedrock API key sent as a bearer token instead of SigV4 (else
            ``AWS_BEARER_TOKEN_BEDROCK`` when set).
        profile: The AWS profile for the credential chain.
        access_key: Explicit credentials (with ``secret_key``, ``session_token``).
        secret_key: The explicit secret access key.
        session_token: The explicit session token.
        environ: Where settings are read (``os.environ`` by default).
        anthropic_version: The body's ``anthropic_version`` (:data:`BEDROCK_VERSION`, as
            documented).

    Raises:
        CloudSetupError: No region.
    """

    providers: Final = _PROVIDERS

    def __init__(
        self,
        *,
        region: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        profile: str | None = None,
        access_key: str | None = None,
        secret_key: str | None = None,
        session_token: str | None = None,
        environ: Mapping[str, str] | None = None,
        anthropic_version: str = BEDROCK_VERSION,
    ) -> None:
        from llmcore.cloud.aws import SigV4Signer

        self.anthropic_version = anthropic_version
        env = os.environ if environ is None else environ
        self._api_key = api_key or env.get("AWS_BEARER_TOKEN_BEDROCK") or None
        self.signer = SigV4Signer(
            region=region,
            profile=profile,
            access_key=access_key,
            secret_key=secret_key,
            session_token=session_token,
            environ=env,
        )
        default = f"https://bedrock-runtime.{self.signer.region}.amazonaws.com"
        self._base_url = (base_url or env.get("ANTHROPIC_BEDROCK_BASE_URL") or default).rstrip("/")

    def __repr__(self) -> str:
        return f"AnthropicBedrock(signer={self.signer!r}, base_url={self._base_url!r})"

    def url(self, model: str, *, stream: bool) -> str:
        """Return the ``invoke`` / ``invoke-with-response-stream`` URL of ``model``."""
        name = path_segment(model, provider=_NAME, what="model", safe=_BEDROCK_SAFE)
        action = "invoke-with-response-stream" if stream else "invoke"
        return f"{self._base_url}/model/{name}/{action}"

    def prepare(self, provider: str, body: bytes, *, stream: bool) -> WireRequest:
        """Return the signed InvokeModel request for an ``anthropic`` body."""
        done = rewrite_body(
            _NAME,
            body,
            drop=frozenset({"model", "stream"}),
            append=(("anthropic_version", self.anthropic_version),),
        )
        streams = stream or done.values.get("stream") is True
        url = self.url(done.values.get("model"), stream=streams)  # type: ignore[arg-type]
        headers = dict(_JSON)
        headers["accept"] = "application/vnd.amazon.eventstream" if streams else "application/json"
        if self._api_key:
            headers["authorization"] = f"Bearer {self._api_key}"
        else:
            headers.update(self.signer.sign("POST", url, headers, done.body))
        return WireRequest(
            url=url,
            headers=headers,
            body=done.body,
            event_stream=invoke_stream_events,
            error=bedrock_error,
        )


def invoke_stream_events(message: EventMessage) -> list[SSEEvent]:
    """Return the Anthropic events one InvokeModel event-stream message carries.

    A ``chunk`` event's payload is ``{"bytes": "<base64 of one Anthropic event's JSON>"}``; an
    ``exception`` (or ``error``) message becomes an Anthropic ``error`` event of the matching
    type, its text naming the Bedrock exception
    (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModelWithResponseStream.html).

    Raises:
        ResponseParseError: A chunk that is not that JSON, base64 and UTF-8.
    """
    kind, name = event_kind(message)
    if kind == "event":
        return [_chunk(message.payload)] if name == "chunk" else []
    try:
        text = json.loads(message.payload).get("message", "")
    except (ValueError, AttributeError):
        text = pc.snippet(message.payload)
    error = {"type": _STREAM_ERROR.get(name, "api_error"), "message": f"{name}: {text}"}
    data = jsonbytes.dumps({"type": "error", "error": error}).decode()
    return [SSEEvent(event="error", data=data)]


def _chunk(payload: bytes) -> SSEEvent:
    try:
        raw = base64.b64decode(json.loads(payload)["bytes"], validate=True)
        text = raw.decode()
        kind = json.loads(text)["type"]
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise ResponseParseError(
            f"{_NAME}: a Bedrock stream chunk is not base64 of an event's JSON ({exc})",
            provider=_NAME,
        ) from exc
    return SSEEvent(event=str(kind), data=text)


def bedrock_error(status: int, body: bytes, headers: Mapping[str, str]) -> APIStatusError:
    """Return the typed error of a Bedrock error response (never raises).

    Bedrock answers ``{"message": "…"}`` with the exception name in ``x-amzn-ErrorType``
    (``ValidationException:http://…``) and the request id in ``x-amzn-RequestId``; a body in
    Anthropic's shape (a model error passed through) is read as Anthropic's.
    """
    try:
        obj: Mapping[str, Any] = pc.load_object(body, _NAME, "error body")
    except ResponseParseError:
        obj = {}
    error = obj.get("error")
    kind = (pc.header(headers, "x-amzn-errortype") or "").partition(":")[0] or None
    message = obj.get("message") or obj.get("Message")
    if isinstance(error, dict):
        kind, message = error.get("type", kind), error.get("message", message)
    return pc.api_error(
        provider=_NAME,
        status=status,
        body=body,
        headers=headers,
        error_type=kind if isinstance(kind, str) else None,
        message=message if isinstance(message, str) else None,
        request_id=pc.header(headers, "x-amzn-requestid"),
    )
