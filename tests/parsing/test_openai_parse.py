"""OpenAI Chat, Responses and OpenRouter response parsing: corpus, stream equivalence, faults."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from llmcore.errors import APIStatusError, ResponseParseError
from llmcore.messages import Text, ToolCall
from llmcore.providers import openai_chat, openai_responses, openrouter
from llmcore.providers._sse import iter_events
from llmcore.providers.base import ParsedResponse, Provider
from llmcore.usage import Usage
from tests.parsing.corpus import body_bytes, chunked, json_cases, sse_cases
from tests.parsing.emit import chat_stream, responses_stream

CHAT = openai_chat.PROVIDER
RESP = openai_responses.PROVIDER
CHAT_OK = json_cases("openai-chat")
CHAT_ERR = json_cases("openai-chat", None)
CHAT_SSE = sse_cases("openai-chat")
RESP_OK = json_cases("openai-responses")
RESP_ERR = json_cases("openai-responses", None)
RESP_SSE = sse_cases("openai-responses")


def parse_stream(provider: Provider, data: bytes, size: int = 11) -> ParsedResponse:
    parser = provider.stream_parser()
    for event in iter_events(chunked(data, size), provider.name):
        parser.feed(event)
    return parser.finish()


def ids(cases: list[tuple[str, Any]]) -> list[str]:
    return [n for n, _ in cases]


# --- Chat Completions ------------------------------------------------------------------------


def chat_usage(usage: dict[str, Any] | None) -> Usage:
    usage = usage or {}
    details = usage.get("prompt_tokens_details") or {}
    read, write = details.get("cached_tokens") or 0, details.get("cache_write_tokens") or 0
    return Usage(
        input=usage.get("prompt_tokens", 0) - read - write,
        output=usage.get("completion_tokens", 0),
        cache_read=read,
        cache_write=write,
    )


def check_chat_content(parsed: ParsedResponse, message: dict[str, Any]) -> None:
    texts = [message[k] for k in ("content", "refusal") if message.get(k)]
    assert [p.text for p in parsed.content if isinstance(p, Text)] == texts
    calls = [p for p in parsed.content if isinstance(p, ToolCall)]
    wanted = message.get("tool_calls") or []
    assert [c.id for c in calls] == [w["id"] for w in wanted]
    for call, want in zip(calls, wanted, strict=True):
        inner = want.get("function") or want.get("custom")
        assert call.name == inner["name"]
        assert call.arguments == (inner.get("arguments") or inner.get("input") or "").encode(
            "utf-8"
        )


@pytest.mark.parametrize(("name", "case"), CHAT_OK, ids=ids(CHAT_OK))
def test_chat_json_response(name: str, case: dict[str, Any]) -> None:
    response = case["response"]
    parsed = CHAT.parse_response(body_bytes(response))
    assert parsed.usage == chat_usage(response.get("usage"))
    check_chat_content(parsed, response["choices"][0]["message"])
    assert parsed.raw_stop_reason == response["choices"][0]["finish_reason"]
    ChatCompletion.model_validate(response)  # P7: no defaults needed for these recordings


@pytest.mark.parametrize(("name", "case"), CHAT_OK, ids=ids(CHAT_OK))
def test_chat_reemitted_stream_matches(name: str, case: dict[str, Any]) -> None:
    response = case["response"]
    plain = CHAT.parse_response(body_bytes(response))
    streamed = parse_stream(CHAT, chat_stream(response))
    assert (streamed.content, streamed.usage, streamed.stop_reason) == (
        plain.content,
        plain.usage,
        plain.stop_reason,
    )


@pytest.mark.parametrize(("name", "case"), CHAT_SSE, ids=ids(CHAT_SSE))
def test_chat_recorded_stream(name: str, case: dict[str, Any]) -> None:
    raw = case["response_sse"].encode()
    chunks = [json.loads(e.data) for e in iter_events([raw], "x") if e.data != "[DONE]"]
    text = "".join(
        c["choices"][0]["delta"].get("content") or ""
        for c in chunks
        if c.get("choices") and c["choices"][0]["index"] == 0
    )
    args: dict[int, str] = {}
    for c in chunks:
        for choice in [ch for ch in c.get("choices") or [] if ch["index"] == 0]:
            for tc in choice["delta"].get("tool_calls") or []:
                args[tc["index"]] = args.get(tc["index"], "") + (
                    tc.get("function", {}).get("arguments") or ""
                )
    usage = next((c["usage"] for c in chunks if c.get("usage")), None)
    for size in (1, 9, len(raw)):
        parsed = parse_stream(CHAT, raw, size)
        assert [p.text for p in parsed.content if isinstance(p, Text)] == ([text] if text else [])
        assert [p.arguments for p in parsed.content if isinstance(p, ToolCall)] == [
            args[i].encode() for i in sorted(args)
        ]
        assert parsed.usage == chat_usage(usage)


@pytest.mark.parametrize(("name", "case"), CHAT_ERR, ids=ids(CHAT_ERR))
def test_chat_error_response(name: str, case: dict[str, Any]) -> None:
    error = CHAT.parse_error(
        case["status"], body_bytes(case["response"]), {"x-request-id": "req_1"}
    )
    want = case["response"]["error"]
    assert (error.status, error.request_id) == (case["status"], "req_1")
    assert error.error_type == (want.get("type") or want.get("code"))
    assert want["message"] in str(error)


def test_chat_stream_faults() -> None:
    good = b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\n\n'
    with pytest.raises(ResponseParseError, match=r"before \[DONE\] \(truncated\)"):
        parse_stream(CHAT, good)
    with pytest.raises(ResponseParseError, match="not valid JSON"):
        parse_stream(CHAT, b"data: {oops\n\ndata: [DONE]\n\n")
    with pytest.raises(ResponseParseError, match="unknown stream event type 'weird'"):
        parse_stream(CHAT, b"event: weird\ndata: {}\n\n")
    with pytest.raises(APIStatusError) as info:
        parse_stream(
            CHAT,
            good + b'data: {"error":{"message":"Rate limit","type":"rate_limit_exceeded"}}\n\n',
        )
    assert info.value.status == 429 and info.value.retryable
    with pytest.raises(ResponseParseError, match="no id or name"):
        parse_stream(
            CHAT,
            b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0}]}}]}\n\ndata: [DONE]\n\n',
        )


# --- OpenRouter ------------------------------------------------------------------------------

ROUTER_BODY = (
    b'{"id":"gen-1","model":"anthropic/claude-sonnet-4.5","choices":[{"index":0,"finish_reason":"stop",'
    b'"message":{"role":"assistant","content":"ok","reasoning":"secret"}}],"usage":{"prompt_tokens":3000,'
    b'"completion_tokens":20,"prompt_tokens_details":{"cached_tokens":2000,"cache_write_tokens":500},'
    b'"cost":0.001234,"is_byok":false}}'
)


def test_openrouter_reads_cost_and_cache_tokens() -> None:
    parsed = openrouter.PROVIDER.parse_response(ROUTER_BODY)
    assert parsed.usage == Usage(
        input=500, output=20, cache_read=2000, cache_write=500, reported_cost=0.001234
    )
    assert parsed.content == (Text(text="ok"),)
    assert parsed.notes == ("left out message.reasoning (provider-only, M4)",)


def test_openrouter_stream_with_keepalive_comments_and_mid_stream_error() -> None:
    stream = b": OPENROUTER PROCESSING\n\n" + chat_stream(json.loads(ROUTER_BODY))
    parsed = parse_stream(openrouter.PROVIDER, stream)
    assert parsed.usage.reported_cost == 0.001234
    failing = b': OPENROUTER PROCESSING\n\ndata: {"error":{"code":502,"message":"Provider returned error"}}\n\n'
    with pytest.raises(APIStatusError) as info:
        parse_stream(openrouter.PROVIDER, failing)
    assert info.value.status == 502 and info.value.provider == "openrouter"


def test_openrouter_error_with_numeric_code() -> None:
    body = b'{"error":{"code":402,"message":"Insufficient credits"}}'
    error = openrouter.PROVIDER.parse_error(402, body, {})
    assert (
        error.status == 402
        and "Insufficient credits" in str(error)
        and error.provider == "openrouter"
    )


# --- Responses -------------------------------------------------------------------------------


def responses_usage(response: dict[str, Any]) -> Usage:
    usage = response.get("usage") or {}
    details = usage.get("input_tokens_details") or {}
    read, write = details.get("cached_tokens") or 0, details.get("cache_write_tokens") or 0
    searches = sum(1 for item in response["output"] if item["type"] == "web_search_call")
    return Usage(
        input=usage.get("input_tokens", 0) - read - write,
        output=usage.get("output_tokens", 0),
        cache_read=read,
        cache_write=write,
        web_search_requests=searches,
    )


def check_responses_content(parsed: ParsedResponse, output: list[dict[str, Any]]) -> None:
    texts = [
        p["text"] for i in output if i["type"] == "message" for p in i["content"] if p.get("text")
    ]
    assert [p.text for p in parsed.content if isinstance(p, Text)] == texts
    calls = [i for i in output if i["type"] in ("function_call", "custom_tool_call")]
    got = [p for p in parsed.content if isinstance(p, ToolCall)]
    assert [(c.id, c.name, c.arguments) for c in got] == [
        (i["call_id"], i["name"], (i.get("arguments") or i.get("input") or "").encode())
        for i in calls
    ]
    # with a reasoning item, every output item is carried as received (ids kept); else nothing
    reasoning = any(i["type"] == "reasoning" for i in output)
    assert [json.loads(c) for c in parsed.carry] == (output if reasoning else [])


def validate_response(response: dict[str, Any]) -> None:
    """P7 with the documented defaults of fields newer package versions require."""
    response = json.loads(json.dumps(response))
    if response.get("usage"):
        response["usage"]["input_tokens_details"].setdefault("cache_write_tokens", 0)  # §2.2
    for item in response["output"]:
        action = item.get("action") if item["type"] == "web_search_call" else None
        if isinstance(action, dict) and action.get("sources"):
            # The package models only {"type":"url"} sources; the API also returns
            # {"type":"api","name":…} ones (openai-responses/0102). Those are left out here.
            action["sources"] = [s for s in action["sources"] if s.get("type") == "url"]
    Response.model_validate(response)


@pytest.mark.parametrize(("name", "case"), RESP_OK, ids=ids(RESP_OK))
def test_responses_json_response(name: str, case: dict[str, Any]) -> None:
    response = case["response"]
    raw = body_bytes(response)
    parsed = RESP.parse_response(raw)
    assert parsed.usage == responses_usage(response)
    check_responses_content(parsed, response["output"])
    for text in parsed.carry:
        assert text.encode() in raw  # carried exactly as received
    validate_response(response)


STREAMABLE = [(n, c) for n, c in RESP_OK if c["response"]["status"] in ("completed", "incomplete")]


@pytest.mark.parametrize(("name", "case"), STREAMABLE, ids=ids(STREAMABLE))
def test_responses_reemitted_stream_matches(name: str, case: dict[str, Any]) -> None:
    response = case["response"]
    plain = RESP.parse_response(body_bytes(response))
    streamed = parse_stream(RESP, responses_stream(response))
    assert (streamed.content, streamed.usage, streamed.stop_reason) == (
        plain.content,
        plain.usage,
        plain.stop_reason,
    )
    assert streamed.carry == plain.carry


@pytest.mark.parametrize(("name", "case"), RESP_SSE, ids=ids(RESP_SSE))
def test_responses_recorded_stream(name: str, case: dict[str, Any]) -> None:
    raw = case["response_sse"].encode()
    events = [json.loads(e.data) for e in iter_events([raw], "x")]
    final = next(
        e["response"] for e in events if e["type"] in ("response.completed", "response.incomplete")
    )
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    args = "".join(
        e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta"
    )
    for size in (1, 13, len(raw)):
        parsed = parse_stream(RESP, raw, size)
        check_responses_content(parsed, done or final["output"])
        assert (
            b"".join(p.arguments for p in parsed.content if isinstance(p, ToolCall))
            == args.encode()
        )
        assert parsed.usage == responses_usage({**final, "output": done or final["output"]})


@pytest.mark.parametrize(("name", "case"), RESP_ERR, ids=ids(RESP_ERR))
def test_responses_error_response(name: str, case: dict[str, Any]) -> None:
    error = RESP.parse_error(case["status"], body_bytes(case["response"]), {})
    want = case["response"]["error"]
    assert error.status == case["status"] and error.error_type == (
        want.get("type") or want.get("code")
    )
    assert want["message"] in str(error)


def test_responses_stream_faults() -> None:
    created = b'event: response.created\ndata: {"type":"response.created","response":{"id":"r","status":"in_progress","output":[]}}\n\n'
    with pytest.raises(ResponseParseError, match="truncated"):
        parse_stream(RESP, created)
    with pytest.raises(ResponseParseError, match="unknown stream event type 'response.teleport'"):
        parse_stream(RESP, created + b'data: {"type":"response.teleport"}\n\n')
    with pytest.raises(APIStatusError) as info:
        parse_stream(
            RESP,
            created
            + b'event: error\ndata: {"type":"error","code":"server_error","message":"boom"}\n\n',
        )
    assert info.value.status == 500 and "boom" in str(info.value)
    failed = b'data: {"type":"response.failed","response":{"status":"failed","output":[],"error":{"code":"rate_limit_exceeded","message":"slow"}}}\n\n'
    with pytest.raises(APIStatusError) as info:
        parse_stream(RESP, created + failed)
    assert info.value.status == 429


def test_corpus_counts() -> None:
    assert (len(CHAT_OK), len(CHAT_SSE), len(CHAT_ERR)) == (68, 14, 7)
    assert (len(RESP_OK), len(RESP_SSE), len(RESP_ERR)) == (116, 13, 8)
    assert len(STREAMABLE) == 115
