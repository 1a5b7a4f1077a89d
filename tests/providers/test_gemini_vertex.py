"""Gemini on Vertex AI: the bearer token from google-auth when no token is configured."""

from __future__ import annotations

import sys

import httpx
import pytest

from llmcore.cloud.google import GoogleAuth
from llmcore.errors import MissingCredentialsError
from llmcore.messages import Message
from llmcore.providers import get_provider
from llmcore.providers.gemini import vertex_base_url
from llmcore.request import Request
from llmcore.transport import AsyncHTTPTransport, HTTPTransport, MissingAPIKeyError
from tests.providers.test_gemini import RESPONSE, _recording_client

P = get_provider("gemini")
BODY = P.build_body(Request(model="gemini-2.5-pro", messages=(Message.user("hi"),)))
VERTEX = {"gemini": vertex_base_url("proj", "us-central1")}


class FakeCredentials:
    """google-auth credentials as GoogleAuth uses them: ``valid``, ``token``, ``refresh``."""

    def __init__(self) -> None:
        self.valid = False
        self.token: str | None = None
        self.refreshes = 0

    def refresh(self, request: object) -> None:
        self.refreshes += 1
        self.token, self.valid = f"ya29.token-{self.refreshes}", True


def _client(seen: list[httpx.Request]) -> httpx.Client:
    return _recording_client(seen, RESPONSE)


def test_a_vertex_request_takes_the_google_token_refreshed_when_it_expires() -> None:
    seen: list[httpx.Request] = []
    credentials = FakeCredentials()
    auth = GoogleAuth(credentials=credentials, environ={})
    with _client(seen) as client:
        transport = HTTPTransport(client=client, base_urls=VERTEX, environ={}, google_auth=auth)
        transport.send(P, BODY, model="gemini-2.5-pro")
        transport.send(P, BODY, model="gemini-2.5-pro")  # still valid: no refresh
        credentials.valid = False  # expired
        transport.send(P, BODY, model="gemini-2.5-pro", stream=False)
    assert [r.headers["authorization"] for r in seen] == [
        "Bearer ya29.token-1",
        "Bearer ya29.token-1",
        "Bearer ya29.token-2",
    ]
    assert credentials.refreshes == 2
    assert all("x-goog-api-key" not in r.headers and r.content == BODY for r in seen)


def test_a_configured_token_wins_over_google_auth() -> None:
    seen: list[httpx.Request] = []
    credentials = FakeCredentials()
    auth = GoogleAuth(credentials=credentials, environ={})
    environ = {"GOOGLE_OAUTH_ACCESS_TOKEN": "ya29.env"}
    with _client(seen) as client:
        HTTPTransport(client=client, base_urls=VERTEX, environ=environ, google_auth=auth).send(
            P, BODY, model="gemini-2.5-pro"
        )
        HTTPTransport(
            client=client, base_urls=VERTEX, api_keys={"gemini": "ya29.key"}, google_auth=auth
        ).send(P, BODY, model="gemini-2.5-pro")
    assert [r.headers["authorization"] for r in seen] == ["Bearer ya29.env", "Bearer ya29.key"]
    assert credentials.refreshes == 0


def test_ai_studio_never_asks_google_auth() -> None:
    seen: list[httpx.Request] = []
    credentials = FakeCredentials()
    auth = GoogleAuth(credentials=credentials, environ={})
    with _client(seen) as client:
        transport = HTTPTransport(client=client, environ={"GEMINI_API_KEY": "k"}, google_auth=auth)
        transport.send(P, BODY, model="gemini-2.5-pro")
    assert seen[0].headers["x-goog-api-key"] == "k" and "authorization" not in seen[0].headers
    assert credentials.refreshes == 0


def test_without_the_google_extra_the_error_names_the_variable_and_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "google.auth", None)  # import google.auth fails
    with _client([]) as client:
        transport = HTTPTransport(client=client, base_urls=VERTEX, environ={})
        with pytest.raises(MissingAPIKeyError) as raised:
            transport.send(P, BODY, model="gemini-2.5-pro")
    message = str(raised.value)
    assert "GOOGLE_OAUTH_ACCESS_TOKEN" in message and "llmcore[google]" in message
    assert raised.value.location == "GOOGLE_OAUTH_ACCESS_TOKEN"


def test_no_default_credentials_is_a_typed_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import google.auth
    import google.auth.exceptions

    def no_credentials(**_: object) -> object:
        raise google.auth.exceptions.DefaultCredentialsError("none")

    monkeypatch.setattr(google.auth, "default", no_credentials)
    with _client([]) as client:
        transport = HTTPTransport(client=client, base_urls=VERTEX, environ={})
        with pytest.raises(MissingCredentialsError, match="no Google Cloud credentials"):
            transport.send(P, BODY, model="gemini-2.5-pro")


@pytest.mark.anyio
async def test_the_async_transport_takes_the_google_token() -> None:
    seen: list[httpx.Request] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, content=RESPONSE, headers={"content-type": "application/json"})

    auth = GoogleAuth(credentials=FakeCredentials(), environ={})
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        transport = AsyncHTTPTransport(
            client=client, base_urls=VERTEX, environ={}, google_auth=auth
        )
        await transport.send(P, BODY, model="gemini-2.5-pro")
    assert seen[0].headers["authorization"] == "Bearer ya29.token-1"
