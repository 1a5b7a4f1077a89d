"""Google bearer tokens, project and location (llmcore.cloud.google)."""

from __future__ import annotations

import json

import pytest

from llmcore.cloud.google import SCOPE, GoogleAuth
from llmcore.errors import CloudSetupError, MissingCredentialsError


class FakeCredentials:
    """google-auth's credentials surface: ``valid``, ``token`` and ``refresh(request)``."""

    def __init__(self, *, valid: bool, token: str | None) -> None:
        self.valid = valid
        self.token = token
        self.refreshed: list[str] = []

    def refresh(self, request) -> None:
        self.refreshed.append(type(request).__module__)
        self.token = f"fresh-{len(self.refreshed)}"
        self.valid = True


def test_an_explicit_token_is_used_as_given_and_never_shown():
    auth = GoogleAuth(access_token="ya29.secret", project="p", location="us-east5", environ={})
    assert auth.headers() == {"authorization": "Bearer ya29.secret"}
    assert (auth.project, auth.location) == ("p", "us-east5")
    assert "ya29" not in repr(auth)


def test_expired_credentials_are_refreshed_once_then_reused():
    creds = FakeCredentials(valid=False, token="old")
    auth = GoogleAuth(credentials=creds, project="p", environ={})
    assert auth.token() == "fresh-1"
    assert auth.token() == "fresh-1"
    assert creds.refreshed == ["google.auth.transport.requests"]
    creds.valid = False  # expired again
    assert auth.token() == "fresh-2"


def test_valid_credentials_are_not_refreshed():
    creds = FakeCredentials(valid=True, token="tok")
    assert GoogleAuth(credentials=creds, environ={}).token() == "tok"
    assert creds.refreshed == []


def test_project_and_location_come_from_the_arguments_then_the_environment():
    env = {
        "GOOGLE_CLOUD_PROJECT": "gp",
        "ANTHROPIC_VERTEX_PROJECT_ID": "ap",
        "CLOUD_ML_REGION": "europe-west1",
    }
    auth = GoogleAuth(access_token="t", environ=env)
    assert (auth.project, auth.location) == ("gp", "europe-west1")
    env2 = {
        "ANTHROPIC_VERTEX_PROJECT_ID": "ap",
        "GOOGLE_CLOUD_LOCATION": "global",
        "CLOUD_ML_REGION": "x",
    }
    assert (
        GoogleAuth(access_token="t", environ=env2).project,
        GoogleAuth(environ=env2).location,
    ) == ("ap", "global")
    assert GoogleAuth(project="mine", location="us", environ=env).project == "mine"
    with pytest.raises(CloudSetupError, match="no Google Cloud location"):
        GoogleAuth(access_token="t", environ={}).location  # noqa: B018
    with pytest.raises(CloudSetupError, match="no Google Cloud project"):
        GoogleAuth(access_token="t", environ={}).project  # noqa: B018


def test_default_credentials_are_loaded_with_the_scope(tmp_path, monkeypatch):
    key = tmp_path / "adc.json"
    key.write_text(
        json.dumps(
            {
                "type": "authorized_user",
                "client_id": "c",
                "client_secret": "s",
                "refresh_token": "r",
                "quota_project_id": "quota-p",
            }
        )
    )
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key))
    monkeypatch.setenv("PATH", str(tmp_path))  # no gcloud to ask for a project
    import google.auth

    asked = []
    real = google.auth.default
    monkeypatch.setattr(google.auth, "default", lambda **kw: asked.append(kw) or real(**kw))
    auth = GoogleAuth(environ={})
    with pytest.raises(CloudSetupError, match="no Google Cloud project"):
        auth.project  # noqa: B018  # user credentials name no project
    assert auth._credentials.refresh_token == "r"  # loaded, not yet refreshed (no network)
    assert asked == [{"scopes": [SCOPE]}]
    assert (
        GoogleAuth(credentials=auth._credentials, environ={"GOOGLE_CLOUD_PROJECT": "gp"}).project
        == "gp"
    )


def test_no_default_credentials_is_a_typed_error(tmp_path, monkeypatch):
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    with pytest.raises(
        MissingCredentialsError,
        match="no Google Cloud credentials found; tried: GOOGLE_APPLICATION_CREDENTIALS",
    ):
        GoogleAuth(project="p", environ={}).token()
