"""The cloud endpoints' requests, byte for byte, through httpx.MockTransport handlers."""

from __future__ import annotations

import base64
import json

import httpx
import pytest
from hypothesis import given, settings

from llmcore import jsonbytes
from llmcore.cloud._members import BodyShapeError, rewrite
from llmcore.cloud.anthropic import (
    BEDROCK_VERSION,
    VERTEX_VERSION,
    AnthropicBedrock,
    AnthropicVertex,
    invoke_stream_events,
    vertex_base_url,
)
from llmcore.cloud.azure import AzureOpenAI
from llmcore.emulator.eventstream import encode_message
from llmcore.errors import (
    APIStatusError,
    CloudSetupError,
    InvalidRequestError,
    MissingCredentialsError,
    ResponseParseError,
    UserError,
)
from llmcore.messages import Message, Text
from llmcore.providers import get_provider
from llmcore.providers._eventstream import EventMessage
from llmcore.providers._jsonspan import find_span
from llmcore.request import Params, Request
from llmcore.transport import HTTPTransport, RetryPolicy
from tests.cloud.test_aws import SECRET, _signature
from tests.strategies import conversations

ANTHROPIC = get_provider("anthropic")
REQUEST = Request(
    model="claude-sonnet-4@20250514",
    system=("sys",),
    messages=(Message(role="user", content=(Text(text="héllo"),)),),
    params=Params(max_tokens=32),
)
MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "m",
    "content": [{"type": "text", "text": "ok"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 5, "output_tokens": 1},
}


def _vertex(**kw) -> AnthropicVertex:
    return AnthropicVertex(project="proj", region="us-east5", access_token="tok", environ={}, **kw)


def _bedrock(**kw) -> AnthropicBedrock:
    return AnthropicBedrock(
        region="us-east-1", access_key="AKIDEXAMPLE", secret_key=SECRET, environ={}, **kw
    )


def _without_model(body: bytes, model: str) -> bytes:
    head = b'{"model":' + jsonbytes.dumps(model) + b","
    assert body.startswith(head)
    return b"{" + body[len(head) :]


def test_the_vertex_body_is_the_anthropic_body_without_model_and_with_the_version_last():
    body = ANTHROPIC.build_body(REQUEST)
    wire = _vertex().prepare("anthropic", body, stream=False)
    assert (
        wire.body
        == _without_model(body, REQUEST.model)[:-1] + b',"anthropic_version":"vertex-2023-10-16"}'
    )
    assert wire.url == (
        "https://us-east5-aiplatform.googleapis.com/v1/projects/proj/locations/us-east5"
        "/publishers/anthropic/models/claude-sonnet-4@20250514:rawPredict"
    )
    assert wire.headers == {
        "content-type": "application/json",
        "user-agent": "llmcore/0.1.0",
        "authorization": "Bearer tok",
    }
    streamed = ANTHROPIC.build_body(
        Request(
            model=REQUEST.model,
            messages=REQUEST.messages,
            params=Params(max_tokens=32, stream=True),
        )
    )
    wire = _vertex().prepare("anthropic", streamed, stream=False)  # the body's stream decides
    assert (
        wire.url.endswith(":streamRawPredict") and b'"stream":true,"anthropic_version"' in wire.body
    )


def test_the_bedrock_body_drops_model_and_stream_and_is_signed_as_sent():
    streamed = Request(
        model="anthropic.claude-3-haiku-20240307-v1:0",
        messages=REQUEST.messages,
        params=Params(max_tokens=32, stream=True),
    )
    body = ANTHROPIC.build_body(streamed)
    wire = _bedrock().prepare("anthropic", body, stream=True)
    assert body.endswith(b',"stream":true}')
    expected = (
        _without_model(body, streamed.model)[: -len(b',"stream":true}')]
        + b',"anthropic_version":"bedrock-2023-05-31"}'
    )
    assert wire.body == expected
    assert (
        wire.url
        == "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-haiku-20240307-v1:0/invoke-with-response-stream"
    )
    headers = dict(wire.headers)
    auth, date = headers.pop("authorization"), headers.pop("x-amz-date")
    unsigned = {k: v for k, v in headers.items() if k != "user-agent"}  # botocore never signs it
    signature, names, _ = _signature(
        "POST", wire.url, unsigned, wire.body, date=date, region="us-east-1", secret=SECRET
    )
    assert names == "accept;content-type;host;x-amz-date"
    assert auth.endswith(f"Signature={signature}")
    assert headers["accept"] == "application/vnd.amazon.eventstream"


def test_a_bedrock_api_key_is_a_bearer_token_instead_of_sigv4():
    wire = _bedrock(api_key="bedrock-key").prepare(
        "anthropic", ANTHROPIC.build_body(REQUEST), stream=False
    )
    assert (
        wire.headers["authorization"] == "Bearer bedrock-key" and "x-amz-date" not in wire.headers
    )
    assert wire.url.endswith(
        "/model/claude-sonnet-4%4020250514/invoke"
    )  # the SDK's quote(safe=":;")


@settings(max_examples=25, deadline=None)
@given(conversations("anthropic", max_steps=3))
def test_the_cloud_bodies_keep_every_message_and_tool_byte_for_byte(conversation):
    for request in conversation.requests():
        body = ANTHROPIC.build_body(request)
        obj = json.loads(body)
        for endpoint, version in (
            (_vertex(), VERTEX_VERSION),
            (_bedrock(api_key="k"), BEDROCK_VERSION),
        ):
            sent = endpoint.prepare("anthropic", body, stream=False).body
            dropped = {"model"} if version == VERTEX_VERSION else {"model", "stream"}
            assert json.loads(sent) == {
                **{k: v for k, v in obj.items() if k not in dropped},
                "anthropic_version": version,
            }
            for key in ("messages", "system", "tools"):
                if key in obj:
                    begin, end = find_span(body, (key,))
                    again = find_span(sent, (key,))
                    assert sent[again[0] : again[1]] == body[begin:end]
            assert sent.endswith(b',"anthropic_version":"' + version.encode() + b'"}')


def test_a_body_that_already_sets_the_version_or_has_no_model_is_refused():
    with pytest.raises(
        InvalidRequestError, match="anthropic: the body already has 'anthropic_version'"
    ):
        _vertex().prepare("anthropic", b'{"model":"m","anthropic_version":"x"}', stream=False)
    with pytest.raises(InvalidRequestError, match="must be a non-empty name, got None"):
        _bedrock().prepare("anthropic", b'{"max_tokens":1}', stream=False)
    with pytest.raises(InvalidRequestError, match="not a JSON object"):
        _vertex().prepare("anthropic", b"[1]", stream=False)
    with pytest.raises(BodyShapeError, match="not UTF-8 JSON"):
        rewrite(b'{"a":')


def test_rewrite_keeps_whitespace_inside_kept_members_and_adds_first_and_last():
    done = rewrite(
        b' { "a" : [1, 2] ,"b":{"c" :3}, "d":"\\u00e9"} ',
        drop=frozenset({"b"}),
        prepend=(("z", 0),),
        append=(("y", "é"),),
    )
    assert done.body == '{"z":0,"a" : [1, 2],"d":"\\u00e9","y":"é"}'.encode()
    assert done.values == {"b": {"c": 3}}


def test_vertex_base_urls_and_settings():
    assert vertex_base_url("global") == "https://aiplatform.googleapis.com/v1"
    assert vertex_base_url("eu") == "https://aiplatform.eu.rep.googleapis.com/v1"
    env = {
        "GOOGLE_CLOUD_PROJECT": "p",
        "CLOUD_ML_REGION": "europe-west1",
        "ANTHROPIC_VERTEX_BASE_URL": "http://127.0.0.1:9/v1",
    }
    assert AnthropicVertex(access_token="t", environ=env).url("m@1", stream=True) == (
        "http://127.0.0.1:9/v1/projects/p/locations/europe-west1/publishers/anthropic/models/m@1:streamRawPredict"
    )
    with pytest.raises(CloudSetupError, match="no Google Cloud location"):
        AnthropicVertex(access_token="t", project="p", environ={}).url("m", stream=False)


def test_azure_urls_auth_and_the_body_unchanged():
    chat, responses = get_provider("openai-chat"), get_provider("openai-responses")
    body = chat.build_body(Request(model="my-dep", messages=REQUEST.messages))
    v1 = AzureOpenAI(resource="res", api_key="k", environ={})
    wire = v1.prepare("openai-chat", body, stream=False)
    assert (wire.url, wire.body, wire.headers["api-key"]) == (
        "https://res.openai.azure.com/openai/v1/chat/completions",
        body,
        "k",
    )
    dated = AzureOpenAI(
        endpoint="https://res.openai.azure.com/",
        ad_token="entra",
        api_version="2024-10-21",
        environ={},
    )
    wire = dated.prepare("openai-chat", body, stream=False)
    assert (
        wire.url
        == "https://res.openai.azure.com/openai/deployments/my-dep/chat/completions?api-version=2024-10-21"
    )
    assert wire.headers["authorization"] == "Bearer entra" and "api-key" not in wire.headers
    rbody = responses.build_body(Request(model="my-dep", messages=REQUEST.messages))
    assert (
        dated.prepare("openai-responses", rbody, stream=True).url
        == "https://res.openai.azure.com/openai/responses?api-version=2024-10-21"
    )
    tokens = iter(["t1", "t2"])
    fresh = AzureOpenAI(resource="res", token_provider=lambda: next(tokens), environ={})
    assert [
        fresh.prepare("openai-chat", body, stream=False).headers["authorization"] for _ in range(2)
    ] == ["Bearer t1", "Bearer t2"]
    env = {
        "AZURE_OPENAI_ENDPOINT": "https://e.openai.azure.com",
        "AZURE_OPENAI_API_KEY": "ek",
        "OPENAI_API_VERSION": "2025-01-01",
    }
    from_env = AzureOpenAI(environ=env, deployment="fixed")
    assert from_env.prepare("openai-chat", body, stream=False).url.startswith(
        "https://e.openai.azure.com/openai/deployments/fixed/"
    )
    with pytest.raises(MissingCredentialsError, match="no Azure OpenAI credentials"):
        AzureOpenAI(resource="r", environ={})
    with pytest.raises(CloudSetupError, match="no Azure OpenAI endpoint"):
        AzureOpenAI(api_key="k", environ={})
    assert "k" not in repr(v1).replace("azure", "")


def _chunk(event: dict) -> bytes:
    payload = jsonbytes.dumps({"bytes": base64.b64encode(jsonbytes.dumps(event)).decode()})
    return encode_message(
        [
            (":event-type", "chunk"),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        payload,
    )


STREAM = [
    {
        "type": "message_start",
        "message": {
            **MESSAGE,
            "content": [],
            "stop_reason": None,
            "usage": {"input_tokens": 5, "output_tokens": 0},
        },
    },
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hé"}},
    {"type": "content_block_stop", "index": 0},
    {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
        "usage": {"output_tokens": 2},
    },
    {"type": "message_stop"},
]


def _send(handler, endpoint=None, *, stream=True):
    seen = []

    def recording(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return handler(request)

    with httpx.Client(transport=httpx.MockTransport(recording)) as client:
        transport = HTTPTransport(
            client=client, endpoints=[endpoint or _bedrock()], retry=RetryPolicy(max_retries=0)
        )
        body = ANTHROPIC.build_body(
            Request(
                model="anthropic.m-v1:0",
                messages=REQUEST.messages,
                params=Params(max_tokens=9, stream=stream),
            )
        )
        return transport.send(ANTHROPIC, body, stream=stream), seen


def test_the_transport_reads_a_bedrock_event_stream_cut_anywhere():
    data = b"".join(_chunk(e) for e in STREAM)
    parts = [data[i : i + 7] for i in range(0, len(data), 7)]
    parsed, seen = _send(
        lambda r: httpx.Response(
            200, headers={"content-type": "application/vnd.amazon.eventstream"}, content=iter(parts)
        )
    )
    assert [c.text for c in parsed.content] == ["hé"]
    assert (parsed.usage.input, parsed.usage.output, parsed.stop_reason) == (5, 2, "end_turn")
    assert seen[0].url.path == "/model/anthropic.m-v1:0/invoke-with-response-stream"
    assert b"stream" not in seen[0].content and seen[0].headers["authorization"].startswith(
        "AWS4-HMAC-SHA256 "
    )


def test_a_bedrock_stream_exception_is_a_typed_retryable_error():
    frames = _chunk(STREAM[0]) + encode_message(
        [
            (":exception-type", "throttlingException"),
            (":content-type", "application/json"),
            (":message-type", "exception"),
        ],
        b'{"message":"Too many tokens, please wait before trying again."}',
    )
    with pytest.raises(APIStatusError) as info:
        _send(
            lambda r: httpx.Response(
                200, headers={"content-type": "application/vnd.amazon.eventstream"}, content=frames
            )
        )
    assert (info.value.status, info.value.error_type, info.value.retryable) == (
        429,
        "rate_limit_error",
        True,
    )
    assert "throttlingException: Too many tokens" in info.value.message


def test_a_bedrock_error_response_names_its_exception_and_request_id():
    headers = {
        "x-amzn-errortype": "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/",
        "x-amzn-requestid": "rid-1",
    }
    with pytest.raises(APIStatusError) as info:
        _send(
            lambda r: httpx.Response(
                400, headers=headers, json={"message": "Malformed input request"}
            ),
            stream=False,
        )
    assert (info.value.status, info.value.error_type, info.value.request_id) == (
        400,
        "ValidationException",
        "rid-1",
    )
    assert (
        info.value.message
        == "anthropic answered HTTP 400 ValidationException: Malformed input request (request id rid-1)"
    )


def test_a_broken_chunk_and_an_unexpected_event_stream_are_parse_errors():
    bad = encode_message([(":event-type", "chunk"), (":message-type", "event")], b'{"bytes":"@@"}')
    with pytest.raises(ResponseParseError, match="not base64 of an event's JSON"):
        invoke_stream_events(
            EventMessage(
                headers={":message-type": "event", ":event-type": "chunk"},
                payload=b'{"bytes":"@@"}',
            )
        )
    with pytest.raises(ResponseParseError, match="expects none"):
        _send(
            lambda r: httpx.Response(
                200, headers={"content-type": "application/vnd.amazon.eventstream"}, content=bad
            ),
            _vertex(),
        )
    assert (
        invoke_stream_events(
            EventMessage(headers={":message-type": "event", ":event-type": "other"}, payload=b"")
        )
        == []
    )


def test_every_attempt_is_prepared_again():
    calls = []

    def handler(request):
        calls.append(request.headers["authorization"])
        if len(calls) == 1:
            return httpx.Response(
                529,
                json={"type": "error", "error": {"type": "overloaded_error", "message": "busy"}},
            )
        return httpx.Response(200, json=MESSAGE)

    tokens = iter(["a", "b"])

    class Rotating(AnthropicVertex):
        def prepare(self, provider, body, *, stream):
            self.auth._static = next(tokens)
            return super().prepare(provider, body, stream=stream)

    endpoint = Rotating(project="p", region="global", access_token="x", environ={})
    with httpx.Client(transport=httpx.MockTransport(handler)) as client:
        transport = HTTPTransport(
            client=client, endpoints={"anthropic": endpoint}, sleep=lambda s: None
        )
        transport.send(ANTHROPIC, ANTHROPIC.build_body(REQUEST))
    assert calls == ["Bearer a", "Bearer b"]


def test_two_listed_endpoints_for_one_provider_are_refused():
    with pytest.raises(UserError, match="two endpoints serve anthropic"):
        HTTPTransport(endpoints=[_vertex(), _bedrock()])
