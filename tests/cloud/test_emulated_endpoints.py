"""The cloud endpoints on the emulator: the official SDK clients and llmcore's own transport.

Each client creates and streams a message on Vertex AI, Bedrock InvokeModel and Azure OpenAI
(v1 and dated paths), and llmcore's transport sends its writers' bodies to every new endpoint,
streamed and not. Loopback only; every client is closed.
"""

from __future__ import annotations

import anthropic
import openai
import pytest

from llmcore.cloud.anthropic import AnthropicBedrock, AnthropicVertex
from llmcore.cloud.azure import AzureOpenAI
from llmcore.emulator import Emulator, ManualClock
from llmcore.messages import Message, Text
from llmcore.providers import get_provider
from llmcore.request import Params, Request
from llmcore.transport import AsyncHTTPTransport, HTTPTransport, RetryPolicy

VERTEX_MODEL = "claude-sonnet-4@20250514"
BEDROCK_MODEL = "anthropic.claude-3-haiku-20240307-v1:0"
AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "secret",
    "AWS_REGION": "us-east-1",
}


@pytest.fixture(scope="module")
def emu():
    with Emulator(clock=ManualClock()) as server:
        yield server


@pytest.fixture
def aws(monkeypatch):
    for name, value in AWS_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)


def _request(model: str, *, stream: bool = False) -> Request:
    return Request(
        model=model,
        system=("You are terse.",),
        messages=(Message(role="user", content=(Text(text="hello there"),)),),
        params=Params(max_tokens=64, stream=stream),
    )


def _text(message) -> str:
    return "".join(block.text for block in message.content if block.type == "text")


# -- the official SDKs ----------------------------------------------------------------------


def _create_and_stream(client, model: str) -> None:
    """Create a message, then stream the same one: the same text, model and usage."""
    ask = {"model": model, "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
    made = client.messages.create(**ask)
    assert made.model == model and made.stop_reason == "end_turn" and _text(made)
    with client.messages.stream(**ask) as stream:
        streamed = stream.get_final_message()
    assert _text(streamed) == _text(made)
    assert streamed.usage.input_tokens == made.usage.input_tokens > 0
    assert streamed.usage.output_tokens == made.usage.output_tokens > 0


def test_anthropic_vertex_sdk_creates_and_streams(emu):
    with anthropic.AnthropicVertex(
        region="us-east5",
        project_id="proj",
        access_token="dummy",
        base_url=emu.vertex_base_url,
        max_retries=0,
    ) as client:
        _create_and_stream(client, VERTEX_MODEL)


def test_anthropic_bedrock_sdk_creates_and_streams(emu, aws):
    with anthropic.AnthropicBedrock(
        aws_region="us-east-1",
        aws_access_key="AKIDEXAMPLE",
        aws_secret_key="secret",
        base_url=emu.base_url,
        max_retries=0,
    ) as client:
        _create_and_stream(client, BEDROCK_MODEL)


@pytest.mark.parametrize("api_version", ["2024-10-21", None])
def test_azure_openai_sdk_chat_and_responses(emu, api_version):
    if api_version is None:  # the v1 API: the plain client on /openai/v1/
        client = openai.OpenAI(
            api_key="azure-key", base_url=emu.base_url + "/openai/v1/", max_retries=0
        )
    else:
        client = openai.AzureOpenAI(
            azure_endpoint=emu.base_url, api_key="azure-key", api_version=api_version, max_retries=0
        )
    with client:
        chat = client.chat.completions.create(
            model="my-deployment", messages=[{"role": "user", "content": "hi"}]
        )
        assert chat.choices[0].message.content
        chunks = list(
            client.chat.completions.create(
                model="my-deployment",
                messages=[{"role": "user", "content": "hi"}],
                stream=True,
                stream_options={"include_usage": True},
            )
        )
        assert (
            "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            == chat.choices[0].message.content
        )
        made = client.responses.create(model="my-deployment", input="hi")
        assert made.output_text
        events = list(client.responses.create(model="my-deployment", input="hi", stream=True))
        assert (
            events[-1].type == "response.completed"
            and events[-1].response.output_text == made.output_text
        )


def test_azure_without_a_key_or_api_version_is_refused_as_azure_does(emu):
    import httpx

    with httpx.Client() as client:
        bare = client.post(emu.base_url + "/openai/v1/chat/completions", content=b"{}")
        assert (
            bare.status_code == 401
            and "Access denied due to invalid subscription key" in bare.json()["error"]["message"]
        )
        undated = client.post(
            emu.base_url + "/openai/deployments/d/chat/completions",
            content=b"{}",
            headers={"api-key": "k"},
        )
        assert (undated.status_code, undated.json()) == (
            404,
            {"error": {"code": "404", "message": "Resource not found"}},
        )


# -- llmcore's transport --------------------------------------------------------------------


def _endpoints(emu) -> dict:
    return {
        "vertex": AnthropicVertex(
            project="proj", region="us-east5", access_token="tok", base_url=emu.vertex_base_url
        ),
        "bedrock": AnthropicBedrock(region="us-east-1", base_url=emu.base_url),
        "azure-v1": AzureOpenAI(endpoint=emu.base_url, api_key="azure-key"),
        "azure-dated": AzureOpenAI(
            endpoint=emu.base_url, api_key="azure-key", api_version="2024-10-21"
        ),
    }


CASES = [
    ("vertex", "anthropic", VERTEX_MODEL),
    ("bedrock", "anthropic", BEDROCK_MODEL),
    ("azure-v1", "openai-chat", "dep"),
    ("azure-v1", "openai-responses", "dep"),
    ("azure-dated", "openai-chat", "dep"),
    ("azure-dated", "openai-responses", "dep"),
]


@pytest.mark.parametrize(("where", "name", "model"), CASES)
def test_llmcore_transport_on_every_endpoint_streamed_and_not(emu, aws, where, name, model):
    provider = get_provider(name)
    endpoint = _endpoints(emu)[where]
    with HTTPTransport(endpoints={name: endpoint}, retry=RetryPolicy(max_retries=0)) as transport:
        whole = transport.send(provider, provider.build_body(_request(model)))
        streamed = transport.send(
            provider, provider.build_body(_request(model, stream=True)), stream=True
        )
    assert whole.content and whole.content == streamed.content
    assert whole.usage.input == streamed.usage.input > 0
    assert whole.stop_reason == streamed.stop_reason == "end_turn"


@pytest.mark.parametrize(("where", "name", "model"), CASES[:3])
def test_the_async_transport_on_the_endpoints(emu, aws, where, name, model):
    import anyio

    provider = get_provider(name)

    async def main():
        async with AsyncHTTPTransport(endpoints=[_endpoints(emu)[where]]) as transport:
            return await transport.send(
                provider, provider.build_body(_request(model, stream=True)), stream=True
            )

    assert anyio.run(main).content


# -- the clouds' own checks -------------------------------------------------------------------

VERTEX_PATH = "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4@20250514:rawPredict"
BODY = b'{"max_tokens":8,"messages":[{"role":"user","content":"hi"}]'


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        (BODY + b"}", 400, "anthropic_version: Field required"),
        (
            BODY + b',"anthropic_version":"vertex-2023-10-16","model":"m"}',
            400,
            "model: Extra inputs are not permitted",
        ),
        (
            BODY + b',"anthropic_version":"bedrock-2023-05-31"}',
            404,
            "anthropic_version: 'bedrock-2023-05-31' is not served here",
        ),
        (b"{", 400, "There was an error parsing the body"),
    ],
)
def test_vertex_refuses_what_vertex_refuses(emu, body, status, message):
    import httpx

    with httpx.Client(base_url=emu.base_url, headers={"authorization": "Bearer t"}) as client:
        answer = client.post(VERTEX_PATH, content=body)
    assert answer.status_code == status
    assert answer.json()["error"]["message"] == message
    assert answer.headers["request-id"].startswith("req_vrtx_")


def test_vertex_without_a_token_and_an_unknown_action_answer_in_googles_shape(emu):
    import httpx

    with httpx.Client(base_url=emu.base_url) as client:
        bare = client.post(VERTEX_PATH, content=BODY + b"}")
        odd = client.post(
            VERTEX_PATH.replace(":rawPredict", ":predict"),
            content=b"{}",
            headers={"authorization": "Bearer t"},
        )
    assert (bare.status_code, bare.json()["error"]["status"]) == (401, "UNAUTHENTICATED")
    assert odd.status_code == 404 and odd.json()["error"]["code"] == 404


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            b'{"model":"m","max_tokens":8,"messages":[],"stream":true,"anthropic_version":"bedrock-2023-05-31"}',
            "Malformed input request: #: extraneous key [stream] is not permitted#: extraneous key [model] is not permitted, please reformat your input and try again.",
        ),
        (
            BODY + b"}",
            "Malformed input request: #: required key [anthropic_version] not found, please reformat your input and try again.",
        ),
        (BODY + b',"anthropic_version":"claude-3"}', "Invalid API version: claude-3"),
    ],
)
def test_bedrock_refuses_what_bedrock_refuses(emu, body, message):
    import httpx

    headers = {
        "authorization": "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/bedrock/aws4_request, SignedHeaders=host, Signature=0",
        "x-amz-date": "20260101T000000Z",
    }
    with httpx.Client(base_url=emu.base_url, headers=headers) as client:
        answer = client.post("/model/anthropic.claude-3-haiku-20240307-v1:0/invoke", content=body)
    assert (answer.status_code, answer.json()) == (400, {"message": message})
    assert (
        answer.headers["x-amzn-errortype"]
        == "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/"
    )


def test_bedrock_without_a_signature_is_403(emu):
    import httpx

    with httpx.Client(base_url=emu.base_url) as client:
        answer = client.post("/model/m/invoke", content=BODY + b"}")
    assert (answer.status_code, answer.json()) == (403, {"message": "Missing Authentication Token"})
    assert answer.headers["x-amzn-errortype"].startswith("MissingAuthenticationTokenException:")
