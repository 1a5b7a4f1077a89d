"""``HTTPTransport.prepare``: what the first request needs, resolved without sending anything.

Every transport here has an httpx client whose handler fails the test if it is called.
"""

from __future__ import annotations

import anyio
import httpx
import pytest

from llmcore.cloud.anthropic import AnthropicBedrock, AnthropicVertex
from llmcore.cloud.azure import AzureOpenAI
from llmcore.errors import CloudSetupError, MissingCredentialsError
from llmcore.providers import get_provider
from llmcore.transport import AsyncHTTPTransport, HTTPTransport, MissingAPIKeyError

CONVERSE_MODEL = "anthropic.claude-3-haiku-20240307-v1:0"
AWS_KEYS = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret"}
CHAIN = (
    "no AWS credentials found; tried: explicit keys; environment (AWS_ACCESS_KEY_ID,"
    " AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN); shared files (AWS_PROFILE; ~/.aws/credentials,"
    " ~/.aws/config: keys, SSO, assume-role); container and instance-metadata roles"
)


def _never(request: httpx.Request) -> httpx.Response:
    raise AssertionError(f"prepare sent a request: {request.url}")


def _transport(environ: dict[str, str], **kw: object) -> HTTPTransport:
    client = httpx.Client(transport=httpx.MockTransport(_never))
    return HTTPTransport(environ=environ, client=client, **kw)  # type: ignore[arg-type]


@pytest.fixture
def no_aws(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """An AWS credential chain that finds nothing (no keys, files or metadata server)."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", raising=False)
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", raising=False)


@pytest.mark.parametrize(
    ("name", "environ", "url"),
    [
        ("anthropic", {"ANTHROPIC_API_KEY": "k"}, "https://api.anthropic.com/v1/messages"),
        ("openai-chat", {"OPENAI_API_KEY": "k"}, "https://api.openai.com/v1/chat/completions"),
        (
            "gemini",
            {"GOOGLE_API_KEY": "k"},  # the fallback variable is enough
            "https://generativelanguage.googleapis.com/v1beta/models/m:streamGenerateContent?alt=sse",
        ),
        (
            "bedrock-converse",
            {"AWS_BEARER_TOKEN_BEDROCK": "k", "AWS_REGION": "eu-west-1"},
            "https://bedrock-runtime.eu-west-1.amazonaws.com/model/m/converse-stream",
        ),
        (
            "anthropic",
            {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"},
            "http://127.0.0.1:9/v1/messages",
        ),
    ],
)
def test_prepare_returns_the_url_and_sends_nothing(
    name: str, environ: dict[str, str], url: str
) -> None:
    with _transport(environ) as transport:
        assert transport.prepare(get_provider(name), model="m", stream=True) == url


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("anthropic", "no API key for anthropic: set ANTHROPIC_API_KEY"),
        ("openrouter", "no API key for openrouter: set OPENROUTER_API_KEY"),
        ("gemini", "no API key for gemini: set GEMINI_API_KEY or GOOGLE_API_KEY"),
    ],
)
def test_a_missing_key_is_named(name: str, message: str) -> None:
    with _transport({}) as transport, pytest.raises(MissingAPIKeyError) as caught:
        transport.prepare(get_provider(name), model="m")
    assert caught.value.message == message


def test_converse_signs_with_the_aws_chain(no_aws: None) -> None:
    with _transport({**AWS_KEYS, "AWS_REGION": "us-east-1"}) as transport:
        url = transport.prepare(get_provider("bedrock-converse"), model=CONVERSE_MODEL)
    assert url == (
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/"
        "anthropic.claude-3-haiku-20240307-v1%3A0/converse"
    )


def test_converse_without_credentials_names_the_chain_and_the_api_key(no_aws: None) -> None:
    with (
        _transport({"AWS_REGION": "us-east-1"}) as transport,
        pytest.raises(MissingCredentialsError) as caught,
    ):
        transport.prepare(get_provider("bedrock-converse"), model=CONVERSE_MODEL)
    assert caught.value.message == CHAIN + "; or set AWS_BEARER_TOKEN_BEDROCK (a Bedrock API key)"


def test_converse_without_a_region_names_it(no_aws: None) -> None:
    with _transport({}) as transport, pytest.raises(CloudSetupError) as caught:
        transport.prepare(get_provider("bedrock-converse"), model=CONVERSE_MODEL)
    assert caught.value.message == (
        "no AWS region: pass region= or set AWS_REGION (or AWS_DEFAULT_REGION);"
        " or set AWS_BEARER_TOKEN_BEDROCK (a Bedrock API key)"
    )


def test_a_cloud_endpoint_is_resolved_too(no_aws: None) -> None:
    vertex = AnthropicVertex(project="p", access_token="t", environ={})
    with _transport({}, endpoints={"anthropic": vertex}) as transport:
        with pytest.raises(CloudSetupError, match="no Google Cloud location"):
            transport.prepare(get_provider("anthropic"), model="claude-sonnet-4@20250514")
    bedrock = AnthropicBedrock(region="us-east-1")
    with _transport({}, endpoints={"anthropic": bedrock}) as transport:
        with pytest.raises(MissingCredentialsError) as caught:
            transport.prepare(get_provider("anthropic"), model="claude")
    assert caught.value.message == CHAIN  # a cloud endpoint's own error, as it is
    azure = AzureOpenAI(endpoint="https://r.openai.azure.com", api_key="k")
    with _transport({}, endpoints={"openai-chat": azure}) as transport:
        url = transport.prepare(get_provider("openai-chat"), model="dep")
    assert url == "https://r.openai.azure.com/openai/v1/chat/completions"


def test_the_async_transport_prepares_alike() -> None:
    async def main() -> tuple[str, str]:
        client = httpx.AsyncClient(transport=httpx.MockTransport(_never))
        async with AsyncHTTPTransport(environ={"GEMINI_API_KEY": "k"}, client=client) as t:
            url = await t.prepare(get_provider("gemini"), model="gemini-2.5-flash")
            try:
                await t.prepare(get_provider("anthropic"), model="m")
            except MissingAPIKeyError as exc:
                return url, exc.message
        raise AssertionError("no error")

    assert anyio.run(main) == (
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent",
        "no API key for anthropic: set ANTHROPIC_API_KEY",
    )


def test_a_bedrock_api_key_on_the_default_url_needs_a_region(no_aws: None) -> None:
    with (
        _transport({"AWS_BEARER_TOKEN_BEDROCK": "k"}) as transport,
        pytest.raises(CloudSetupError) as caught,
    ):
        transport.prepare(get_provider("bedrock-converse"), model=CONVERSE_MODEL)
    assert caught.value.location == "AWS_REGION"
    with _transport({"AWS_BEARER_TOKEN_BEDROCK": "k", "AWS_DEFAULT_REGION": "ap-south-1"}) as t:
        url = t.prepare(get_provider("bedrock-converse"), model="m")
    assert url == "https://bedrock-runtime.ap-south-1.amazonaws.com/model/m/converse"
