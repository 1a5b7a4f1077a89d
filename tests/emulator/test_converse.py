"""The emulator's Bedrock Converse endpoints, driven by the real boto3 client and by llmcore.

boto3's ``bedrock-runtime`` client signs with dummy credentials and talks to the emulator on
loopback (``endpoint_url=``); its own parser decodes the emulator's event-stream frames, so the
frame encoder is checked by botocore. llmcore's transport sends the bytes its encoder built
(signed with the same credentials) and parses both answers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from botocore.config import Config
from botocore.eventstream import EventStreamBuffer
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore.emulator import Emulator, ManualClock
from llmcore.emulator.converse_wire import event_frame, exception_frame
from llmcore.errors import APIStatusError
from llmcore.messages import Message, Text
from llmcore.providers import get_provider
from llmcore.providers._eventstream import EventStreamDecoder
from llmcore.request import Params, Request
from llmcore.transport import HTTPTransport, RetryPolicy, aws_events, model_argument
from tests.examples import examples

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
LONG = "The tide tables for the harbour. " * 400  # ~2,800 tokens: above the 1,024 minimum
CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "bedrock-converse"
ENV = {
    "AWS_ACCESS_KEY_ID": "AKIDEMULATOR",
    "AWS_SECRET_ACCESS_KEY": "not-a-secret",
    "AWS_REGION": "us-east-1",
}


@pytest.fixture
def emu(_server: tuple[Emulator, ManualClock]) -> tuple[Emulator, ManualClock]:
    """The module's emulator (``tests/emulator/conftest.py``) on its manual clock."""
    return _server


def _runtime(base_url: str) -> Any:
    """A boto3 ``bedrock-runtime`` client on the emulator, test credentials, no retries."""
    session = boto3.session.Session(
        aws_access_key_id=ENV["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=ENV["AWS_SECRET_ACCESS_KEY"],
        region_name="us-east-1",
    )
    return session.client(
        "bedrock-runtime", endpoint_url=base_url, config=Config(retries={"max_attempts": 1})
    )


@pytest.fixture
def client(emu: tuple[Emulator, ManualClock]) -> Iterator[Any]:
    server, clock = emu
    server.reset()
    clock.advance(100_000)
    runtime = _runtime(server.base_url)
    yield runtime
    runtime.close()


def _system() -> list[dict[str, Any]]:
    return [{"text": LONG}, {"cachePoint": {"type": "default"}}]


def _messages() -> list[dict[str, Any]]:
    return [{"role": "user", "content": [{"text": "What is the high tide?"}]}]


def test_boto3_converse_reads_what_the_first_request_wrote(client: Any) -> None:
    first = client.converse(modelId=MODEL, system=_system(), messages=_messages())
    usage = first["usage"]
    assert usage["cacheWriteInputTokens"] > 1024
    assert usage["cacheReadInputTokens"] == 0
    second = client.converse(modelId=MODEL, system=_system(), messages=_messages())
    assert second["usage"]["cacheReadInputTokens"] == usage["cacheWriteInputTokens"]
    assert second["usage"]["cacheWriteInputTokens"] == 0
    assert second["usage"]["inputTokens"] == usage["inputTokens"]
    assert second["output"]["message"]["role"] == "assistant"
    assert second["stopReason"] in ("end_turn", "tool_use")


def test_boto3_converse_stream_decodes_the_frames(client: Any) -> None:
    client.converse(modelId=MODEL, system=_system(), messages=_messages())
    answer = client.converse_stream(modelId=MODEL, system=_system(), messages=_messages())
    events = list(answer["stream"])
    kinds = [next(iter(e)) for e in events]
    assert kinds[0] == "messageStart" and kinds[-2:] == ["messageStop", "metadata"]
    text = "".join(
        e["contentBlockDelta"]["delta"].get("text", "") for e in events if "contentBlockDelta" in e
    )
    assert text
    assert events[-1]["metadata"]["usage"]["cacheReadInputTokens"] > 1024


def test_below_the_minimum_nothing_is_cached(client: Any) -> None:
    system = [{"text": "short"}, {"cachePoint": {"type": "default"}}]
    for _ in range(2):
        usage = client.converse(modelId=MODEL, system=system, messages=_messages())["usage"]
        assert (usage["cacheReadInputTokens"], usage["cacheWriteInputTokens"]) == (0, 0)


def test_the_cache_expires_after_five_minutes(
    client: Any, emu: tuple[Emulator, ManualClock]
) -> None:
    client.converse(modelId=MODEL, system=_system(), messages=_messages())
    emu[1].advance(301)
    usage = client.converse(modelId=MODEL, system=_system(), messages=_messages())["usage"]
    assert usage["cacheReadInputTokens"] == 0 and usage["cacheWriteInputTokens"] > 1024


def test_validation_errors_come_in_bedrock_shape(client: Any) -> None:
    messages = [*_messages(), {"role": "user", "content": [{"text": "again"}]}]
    with pytest.raises(client.exceptions.ValidationException) as caught:
        client.converse(modelId=MODEL, messages=messages)
    assert "must alternate between user and assistant" in str(caught.value)
    five = [
        {"text": f"s{i}"} if i % 2 == 0 else {"cachePoint": {"type": "default"}} for i in range(10)
    ]
    with pytest.raises(client.exceptions.ValidationException) as caught:
        client.converse(modelId=MODEL, system=five, messages=_messages())
    assert "exceeds the maximum of 4" in str(caught.value)


def test_a_conversation_may_start_with_the_assistant_for_claude(client: Any) -> None:
    case = json.loads((CORPUS / "0018.json").read_text())
    assert case["status"] == 200 and case["request"]["messages"][0]["role"] == "assistant"
    model = case["meta"]["model_id"]
    answer = client.converse(modelId=model, **json.loads(case["request_raw"]))
    assert answer["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert answer["output"]["message"]["role"] == "assistant"
    assert answer["usage"]["inputTokens"] > 0
    stream = client.converse_stream(modelId=model, **json.loads(case["request_raw"]))
    kinds = [next(iter(event)) for event in stream["stream"]]  # read to its end
    assert kinds[0] == "messageStart" and kinds[-1] == "metadata"


def test_an_assistant_first_conversation_is_refused_for_llama_only() -> None:
    from llmcore.emulator.converse_validate import validate_converse
    from llmcore.emulator.errors import Rejection

    body = json.loads(json.loads((CORPUS / "0018.json").read_text())["request_raw"])
    for model in (MODEL, "anthropic.claude-3-haiku-20240307-v1:0", "amazon.nova-pro-v1:0"):
        assert validate_converse(body, model) is body
    with pytest.raises(Rejection) as caught:
        validate_converse(body, "us.meta.llama3-3-70b-instruct-v1:0")
    assert str(caught.value).startswith("A conversation must start with a user message.")


def test_an_unsigned_request_is_refused(emu: tuple[Emulator, ManualClock]) -> None:
    url = f"{emu[0].base_url}/model/{MODEL}/converse"
    with httpx.Client() as http:
        answer = http.post(url, content=b'{"messages":[]}')
    assert answer.status_code == 403
    assert answer.headers["x-amzn-ErrorType"].startswith("MissingAuthenticationTokenException:")
    assert answer.json() == {"message": "Missing Authentication Token"}


def _request(stream: bool) -> Request:
    return Request(
        model=MODEL,
        system=(LONG,),
        messages=(Message(role="user", content=(Text(text="What is the high tide?"),)),),
        params=Params(max_tokens=256, stream=stream),
    )


@pytest.mark.parametrize("stream", [False, True])
def test_llmcore_transport_talks_to_the_emulator(
    client: Any, emu: tuple[Emulator, ManualClock], stream: bool
) -> None:
    provider = get_provider("bedrock-converse")
    base = {"bedrock-converse": emu[0].base_url}
    with HTTPTransport(base_urls=base, environ=ENV, retry=RetryPolicy(max_retries=0)) as http:
        body = provider.build_body(_request(stream))
        first = http.send(provider, body, stream=stream, **model_argument(provider, MODEL))
        second = http.send(provider, body, stream=stream, model=MODEL)
    assert first.usage.cache_write > 1024 and first.usage.cache_read == 0
    assert second.usage.cache_read == first.usage.cache_write
    assert second.content and all(
        isinstance(p, Text) or p.type == "tool_call" for p in second.content
    )


def test_llmcore_reads_a_validation_error(emu: tuple[Emulator, ManualClock]) -> None:
    provider = get_provider("bedrock-converse")
    request = Request(
        model=MODEL,
        messages=(Message(role="user", content=(Text(text="x"),)),),
        params=Params(extra=(("bogus", "1"),)),
    )
    base = {"bedrock-converse": emu[0].base_url}
    with HTTPTransport(base_urls=base, environ=ENV, retry=RetryPolicy(max_retries=0)) as http:
        with pytest.raises(APIStatusError) as caught:
            http.send(provider, provider.build_body(request), model=MODEL)
    assert caught.value.status == 400
    assert caught.value.error_type == "ValidationException"
    assert "extraneous key [bogus]" in caught.value.message


def test_frames_decode_with_botocore_and_exceptions_are_typed() -> None:
    buffer = EventStreamBuffer()
    buffer.add_data(event_frame("messageStart", {"role": "assistant"}))
    buffer.add_data(exception_frame("throttlingException", "slow down"))
    first, second = list(buffer)
    assert first.headers[":event-type"] == "messageStart"
    assert first.payload == b'{"role":"assistant"}'
    assert second.headers[":message-type"] == "exception"
    parser = get_provider("bedrock-converse").stream_parser()
    decoder = EventStreamDecoder("bedrock-converse")
    whole = event_frame("messageStart", {"role": "assistant"}) + exception_frame(
        "throttlingException", "slow down"
    )
    convert = aws_events("bedrock-converse")
    messages = [m for i in range(len(whole)) for m in decoder.feed(whole[i : i + 1])]
    events = [e for m in messages for e in convert(m)]
    parser.feed(events[0])
    with pytest.raises(APIStatusError) as caught:
        parser.feed(events[1])
    assert caught.value.status == 429 and caught.value.retryable


@pytest.mark.parametrize(
    ("body", "model", "message"),
    [
        (
            {"messages": [{"role": "assistant", "content": [{"text": "hi"}]}]},
            "meta.llama3-70b-instruct-v1:0",
            "must start with a user message",
        ),
        (
            {"messages": [{"role": "user", "content": [{"text": "  "}]}]},
            MODEL,
            "is blank",
        ),
        (
            {
                "messages": [
                    {"role": "user", "content": [{"text": "q"}]},
                    {
                        "role": "assistant",
                        "content": [{"toolUse": {"toolUseId": "t1", "name": "f", "input": {}}}],
                    },
                ]
            },
            MODEL,
            "The toolConfig field must be defined",
        ),
        (
            {
                "messages": _messages(),
                "toolConfig": {
                    "tools": [
                        {"toolSpec": {"name": "f", "inputSchema": {"json": {}}}},
                        {"cachePoint": {"type": "default"}},
                    ]
                },
            },
            "amazon.nova-pro-v1:0",
            "does not support cachePoint",
        ),
        (
            {
                "messages": [
                    {"role": "user", "content": [{"text": "q"}]},
                    {"role": "assistant", "content": [{"text": "a"}]},
                    {
                        "role": "user",
                        "content": [{"toolResult": {"toolUseId": "t9", "content": []}}],
                    },
                ],
                "toolConfig": {"tools": [{"toolSpec": {"name": "f", "inputSchema": {"json": {}}}}]},
            },
            MODEL,
            "answer toolUse ids not in the previous turn: t9",
        ),
    ],
)
def test_the_validator_refuses_what_converse_refuses(body, model, message) -> None:
    from llmcore.emulator.converse_validate import validate_converse
    from llmcore.emulator.errors import Rejection

    with pytest.raises(Rejection) as caught:
        validate_converse(body, model)
    assert message in str(caught.value)
    assert caught.value.error_type == "ValidationException" and caught.value.status == 400


def test_the_record_carries_a_converse_streams_usage(tmp_path: Path) -> None:
    from llmcore.audit import audit_paths

    record = tmp_path / "emu.jsonl"
    with Emulator(clock=ManualClock(), record=record) as server:
        runtime = _runtime(server.base_url)
        plain = runtime.converse(modelId=MODEL, system=_system(), messages=_messages())["usage"]
        answer = runtime.converse_stream(modelId=MODEL, system=_system(), messages=_messages())
        streamed = [e for e in answer["stream"] if "metadata" in e][-1]["metadata"]["usage"]
        runtime.close()
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert len(lines) == 2
    assert lines[0]["usage"] == plain
    assert lines[1]["usage"] == streamed  # as received, exactly as for converse
    assert streamed["cacheReadInputTokens"] == plain["cacheWriteInputTokens"] > 1024
    report = audit_paths([record])
    usages = [row.usage for row in report.requests]
    assert all(u is not None for u in usages)
    assert [u.cache_read_tokens for u in usages if u is not None] == [
        0,
        streamed["cacheReadInputTokens"],
    ]
    assert [u.cache_write_tokens for u in usages if u is not None] == [
        plain["cacheWriteInputTokens"],
        0,
    ]


def test_the_record_carries_an_invoke_model_streams_usage(tmp_path: Path) -> None:
    record = tmp_path / "emu.jsonl"
    body = {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "What is the high tide?"}],
    }
    with Emulator(clock=ManualClock(), record=record) as server:
        runtime = _runtime(server.base_url)
        answer = runtime.invoke_model_with_response_stream(
            modelId="anthropic.claude-3-haiku-20240307-v1:0", body=json.dumps(body)
        )
        events = [json.loads(e["chunk"]["bytes"]) for e in answer["body"] if "chunk" in e]
        runtime.close()
    start = events[0]["message"]["usage"]
    delta = [e for e in events if e["type"] == "message_delta"][-1]["usage"]
    (line,) = [json.loads(line) for line in record.read_text().splitlines()]
    assert line["usage"] == {**start, **delta}
    assert line["usage"]["input_tokens"] > 0 and line["usage"]["output_tokens"] > 0


@pytest.mark.full_count
@settings(max_examples=examples(full=2000, sample=200))
@given(
    st.lists(st.text(min_size=1, max_size=30), max_size=6),
    st.integers(0, 10**7),
    st.integers(0, 10**7),
    st.lists(st.integers(1, 64), min_size=1, max_size=40),
)
def test_the_tap_reads_the_metadata_usage_however_the_frames_are_cut(
    texts: list[str], read: int, written: int, cuts: list[int]
) -> None:
    from llmcore.audit.tap import EVENTSTREAM, UsageTap

    usage = {"inputTokens": 3, "outputTokens": 5, "cacheReadInputTokens": read}
    usage["cacheWriteInputTokens"] = written
    body = b"".join(
        [
            event_frame("messageStart", {"role": "assistant"}),
            *(event_frame("contentBlockDelta", {"delta": {"text": t}}) for t in texts),
            event_frame("messageStop", {"stopReason": "end_turn"}),
            event_frame("metadata", {"usage": usage, "metrics": {"latencyMs": 1}}),
        ]
    )
    tap, at = UsageTap(EVENTSTREAM), 0
    while at < len(body):
        size = cuts[at % len(cuts)]
        tap.feed(body[at : at + size])
        at += size
    assert tap.finish() == usage
    broken = UsageTap(EVENTSTREAM)
    broken.feed(b"\x00\x00\x00\x05" + body)  # a total length under the 16-byte minimum
    assert broken.finish() is None and broken.broken
