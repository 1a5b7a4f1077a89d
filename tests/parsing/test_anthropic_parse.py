"""Anthropic response parsing: every corpus response, stream equivalence, malformed input."""

from __future__ import annotations

import json
from typing import Any

import anthropic.types as atypes
import anthropic.types.beta as btypes
import pytest

from llmcore.errors import APIStatusError, ResponseParseError
from llmcore.messages import Text, ToolCall
from llmcore.providers._sse import SSEEvent, iter_events
from llmcore.providers.anthropic import PROVIDER
from llmcore.providers.base import ParsedResponse
from llmcore.usage import Usage
from tests.parsing.corpus import body_bytes, chunked, json_cases, sse_cases
from tests.parsing.emit import anthropic_stream

OK_CASES = json_cases("anthropic")
ERROR_CASES = json_cases("anthropic", None)
STREAM_CASES = sse_cases("anthropic")
SERVER_BLOCKS = ("server_tool_use", "mcp_tool_use", "compaction")


def parse_stream(data: bytes, size: int = 7) -> ParsedResponse:
    parser = PROVIDER.stream_parser()
    for event in iter_events(chunked(data, size), "anthropic"):
        parser.feed(event)
    return parser.finish()


def expected_usage(usage: dict[str, Any]) -> Usage:
    one_hour = (usage.get("cache_creation") or {}).get("ephemeral_1h_input_tokens") or None
    return Usage(
        input=usage.get("input_tokens") or 0,
        output=usage.get("output_tokens") or 0,
        cache_read=usage.get("cache_read_input_tokens") or 0,
        cache_write=usage.get("cache_creation_input_tokens") or 0,
        web_search_requests=(usage.get("server_tool_use") or {}).get("web_search_requests") or 0,
        cache_write_1h=one_hour,
    )


def check_content(parsed: ParsedResponse, blocks: list[dict[str, Any]]) -> None:
    want_text = [b["text"] for b in blocks if b["type"] == "text" and b["text"]]
    got_text = [p.text for p in parsed.content if isinstance(p, Text)]
    searches = [b for b in blocks if b["type"] == "web_search_tool_result"]
    assert len(got_text) == len(want_text) + len(searches)
    assert [t for t in got_text if not t.startswith("Web search")] == want_text
    calls = [p for p in parsed.content if isinstance(p, ToolCall)]
    uses = [b for b in blocks if b["type"] == "tool_use"]
    assert [(c.id, c.name) for c in calls] == [(b["id"], b["name"]) for b in uses]
    for call, use in zip(calls, uses, strict=True):
        assert json.loads(call.arguments or b"{}") == use["input"]
    thinking = [b for b in blocks if b["type"] in ("thinking", "redacted_thinking")]
    assert [json.loads(c) for c in parsed.carry] == thinking


def validate_official(name: str, case: dict[str, Any]) -> None:
    """P7: the recorded body is a valid object of the official package (beta URL → beta model)."""
    response = json.loads(json.dumps(case["response"]))
    server = response.get("usage", {}).get("server_tool_use")
    if isinstance(server, dict):
        server.setdefault("web_fetch_requests", 0)  # newer package field, documented default 0
    beta = "beta=true" in case["meta"].get("uri", "")
    model = btypes.BetaMessage if beta else atypes.Message
    model.model_validate(response)


@pytest.mark.parametrize(("name", "case"), OK_CASES, ids=[n for n, _ in OK_CASES])
def test_json_response_parses_to_content_and_usage(name: str, case: dict[str, Any]) -> None:
    response = case["response"]
    parsed = PROVIDER.parse_response(body_bytes(response))
    assert parsed.usage == expected_usage(response["usage"])
    check_content(parsed, response["content"])
    assert parsed.raw_stop_reason == response.get("stop_reason")
    assert parsed.response_id == response["id"]
    validate_official(name, case)


@pytest.mark.parametrize(("name", "case"), OK_CASES, ids=[n for n, _ in OK_CASES])
def test_reemitted_stream_parses_to_the_same_history_content(
    name: str, case: dict[str, Any]
) -> None:
    response = case["response"]
    plain = PROVIDER.parse_response(body_bytes(response))
    streamed = parse_stream(anthropic_stream(response))
    assert streamed.content == plain.content
    assert streamed.usage == plain.usage
    assert streamed.stop_reason == plain.stop_reason
    assert len(streamed.carry) == len(plain.carry)


@pytest.mark.parametrize(("name", "case"), STREAM_CASES, ids=[n for n, _ in STREAM_CASES])
def test_recorded_stream_parses(name: str, case: dict[str, Any]) -> None:
    raw = case["response_sse"].encode("utf-8")
    events = [json.loads(e.data) for e in iter_events([raw], "anthropic")]
    usage: dict[str, Any] = {}
    blocks: dict[int, dict[str, Any]] = {}
    args: dict[int, str] = {}
    for event in events:
        if event["type"] == "message_start":
            usage.update(event["message"]["usage"])
        elif event["type"] == "message_delta":
            usage.update({k: v for k, v in (event.get("usage") or {}).items() if v is not None})
        elif event["type"] == "content_block_start":
            blocks[event["index"]] = event["content_block"]
        elif (
            event["type"] == "content_block_delta" and event["delta"]["type"] == "input_json_delta"
        ):
            args[event["index"]] = args.get(event["index"], "") + event["delta"]["partial_json"]
    for size in (1, 5, len(raw)):
        parsed = parse_stream(raw, size)
        assert parsed.usage == expected_usage(usage)
        calls = [p for p in parsed.content if isinstance(p, ToolCall)]
        tool_blocks = [i for i in sorted(blocks) if blocks[i]["type"] == "tool_use"]
        assert [c.arguments for c in calls] == [args.get(i, "").encode() for i in tool_blocks]


@pytest.mark.parametrize(("name", "case"), ERROR_CASES, ids=[n for n, _ in ERROR_CASES])
def test_error_response_becomes_typed_error(name: str, case: dict[str, Any]) -> None:
    body = body_bytes(case["response"])
    error = PROVIDER.parse_error(case["status"], body, {"request-id": "req_hdr"})
    assert isinstance(error, APIStatusError)
    assert error.status == case["status"]
    assert error.error_type == case["response"]["error"]["type"]
    assert case["response"]["error"]["message"] in str(error)
    assert error.request_id == case["response"].get("request_id", "req_hdr")
    assert error.retryable is False


def test_corpus_counts() -> None:
    assert len(OK_CASES) == 111
    assert len(STREAM_CASES) == 24
    assert len(ERROR_CASES) == 4


RAW = (
    b'{"id":"msg_1","type":"message","role":"assistant","model":"m","content":['
    b'{"type":"thinking","thinking":"hm \\u00e9","signature":"sig"},'
    b'{"type":"text","text":"hi"},'
    b'{"type":"tool_use","id":"toolu_1","name":"f","input":{ "b" : 1,"a":[1, 2.50]}}],'
    b'"stop_reason":"tool_use","stop_sequence":null,'
    b'"usage":{"input_tokens":3,"output_tokens":4,"cache_read_input_tokens":5,'
    b'"cache_creation_input_tokens":6,"cache_creation":{"ephemeral_5m_input_tokens":2,'
    b'"ephemeral_1h_input_tokens":4}}}'
)


def test_tool_arguments_are_the_exact_byte_span_and_thinking_is_carried_as_received() -> None:
    parsed = PROVIDER.parse_response(RAW)
    assert parsed.content == (
        Text(text="hi"),
        ToolCall(id="toolu_1", name="f", arguments=b'{ "b" : 1,"a":[1, 2.50]}'),
    )
    assert parsed.carry == ('{"type":"thinking","thinking":"hm \\u00e9","signature":"sig"}',)
    assert parsed.stop_reason == "tool_use"
    assert parsed.usage == Usage(input=3, output=4, cache_read=5, cache_write=6, cache_write_1h=4)


def sse(*events: tuple[str, str]) -> bytes:
    return "".join(f"event: {e}\ndata: {d}\n\n" for e, d in events).encode()


START = (
    "message_start",
    '{"type":"message_start","message":{"id":"m","model":"x","usage":{"input_tokens":1}}}',
)
STOP = ("message_stop", '{"type":"message_stop"}')


def test_stream_without_message_stop_is_truncated() -> None:
    with pytest.raises(ResponseParseError, match="truncated"):
        parse_stream(sse(START))


def test_stream_cut_inside_an_event_is_truncated() -> None:
    with pytest.raises(ResponseParseError, match="truncated"):
        parse_stream(sse(START)[:-1] + b"\nevent: content_block_start\ndata: {")


def test_invalid_json_in_an_event() -> None:
    with pytest.raises(ResponseParseError, match="not valid JSON"):
        parse_stream(sse(START, ("content_block_start", "{nope")))


def test_unknown_event_type() -> None:
    with pytest.raises(ResponseParseError, match="unknown stream event type 'surprise'"):
        parse_stream(sse(START, ("surprise", '{"type":"surprise"}')))


def test_unknown_delta_type() -> None:
    start = (
        "content_block_start",
        '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}',
    )
    delta = (
        "content_block_delta",
        '{"type":"content_block_delta","index":0,"delta":{"type":"odd_delta"}}',
    )
    with pytest.raises(ResponseParseError, match="unknown delta type 'odd_delta'"):
        parse_stream(sse(START, start, delta))


def test_delta_for_an_unstarted_block() -> None:
    delta = (
        "content_block_delta",
        '{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}',
    )
    with pytest.raises(ResponseParseError, match="unstarted block 3"):
        parse_stream(sse(START, delta))


def test_error_event_mid_stream_is_a_retryable_status_error() -> None:
    error = ("error", '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}')
    with pytest.raises(APIStatusError) as info:
        parse_stream(sse(START, error, STOP))
    assert info.value.status == 529
    assert info.value.error_type == "overloaded_error"
    assert info.value.retryable is True
    assert "Overloaded" in str(info.value)


def test_events_after_message_stop_are_refused() -> None:
    with pytest.raises(ResponseParseError, match="after message_stop"):
        parse_stream(sse(START, STOP, ("ping", '{"type":"ping"}')))


def test_streamed_thinking_is_rebuilt_and_carried() -> None:
    parser = PROVIDER.stream_parser()
    for event, data in (
        START,
        (
            "content_block_start",
            '{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}',
        ),
        (
            "content_block_delta",
            '{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"a\\"b"}}',
        ),
        (
            "content_block_delta",
            '{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"S"}}',
        ),
        ("content_block_stop", '{"type":"content_block_stop","index":0}'),
        (
            "message_delta",
            '{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}',
        ),
        STOP,
    ):
        parser.feed(SSEEvent(event=event, data=data))
    parsed = parser.finish()
    assert parsed.content == ()
    assert parsed.carry == ('{"type":"thinking","thinking":"a\\"b","signature":"S"}',)
    assert parsed.usage == Usage(input=1, output=9)


def test_json_body_errors() -> None:
    with pytest.raises(ResponseParseError, match="not valid JSON"):
        PROVIDER.parse_response(b"<html>502 Bad Gateway</html>")
    with pytest.raises(ResponseParseError, match="unknown content block type 'hologram'"):
        PROVIDER.parse_response(
            b'{"type":"message","content":[{"type":"hologram"}],"usage":{"input_tokens":1}}'
        )
    with pytest.raises(APIStatusError) as info:
        PROVIDER.parse_response(b'{"type":"error","error":{"type":"api_error","message":"boom"}}')
    assert info.value.status == 500


def test_non_json_error_body_still_gives_a_typed_error() -> None:
    error = PROVIDER.parse_error(502, b"<html>bad gateway</html>", {"retry-after": "3"})
    assert error.status == 502
    assert error.error_type is None
    assert error.retry_after == 3.0
    assert error.retryable
    assert "bad gateway" in str(error)
