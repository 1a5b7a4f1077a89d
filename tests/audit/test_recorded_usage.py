"""Real token counts (issue 11): usage reported by recorded responses, beside the estimate."""

from __future__ import annotations

import base64
import gzip
import io
import json
from pathlib import Path

import pytest

from llmcore import jsonbytes
from llmcore.audit import audit_paths
from llmcore.audit.usage import RecordedUsage, read_response, usage_of
from llmcore.cli.audit import EXIT_STABLE, audit_command

from . import _bodies as b
from . import _cassettes as cas

ANTHROPIC_USAGE = {
    "input_tokens": 12,
    "cache_read_input_tokens": 3000,
    "cache_creation_input_tokens": 500,
    "output_tokens": 40,
}


def _usage(i: int, r: int, w: int) -> RecordedUsage:
    return RecordedUsage(input_tokens=i, cache_read_tokens=r, cache_write_tokens=w)


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (ANTHROPIC_USAGE, _usage(3512, 3000, 500)),
        (
            {"prompt_tokens": 2048, "prompt_tokens_details": {"cached_tokens": 1024}},
            _usage(2048, 1024, 0),
        ),
        ({"prompt_tokens": 10}, _usage(10, 0, 0)),
        (  # OpenRouter's Chat usage with the upstream cache writes
            {
                "prompt_tokens": 2572,
                "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 2569},
            },
            _usage(2572, 0, 2569),
        ),
        (
            {"input_tokens": 1500, "input_tokens_details": {"cached_tokens": 1280}},
            _usage(1500, 1280, 0),
        ),
        ({"promptTokenCount": 900, "cachedContentTokenCount": 800}, _usage(900, 800, 0)),
        (
            {"inputTokens": 5, "cacheReadInputTokens": 100, "cacheWriteInputTokens": 7},
            _usage(112, 100, 7),
        ),
        ({"prompt_tokens": "ten"}, None),
        ({"output_tokens": 5}, None),
        ({"input_tokens": -1}, None),
        ([1, 2], None),
    ],
)
def test_usage_shapes(usage, expected):
    assert usage_of(usage) == expected


def test_hit_rate_and_total():
    total = RecordedUsage.total([_usage(100, 50, 10), _usage(300, 250, 0)])
    assert total == _usage(400, 300, 10) and total.hit_rate == 0.75
    assert _usage(0, 0, 0).hit_rate == 0.0


def _sse(events: list[dict]) -> str:
    return "".join(f"event: {e.get('type', 'x')}\ndata: {json.dumps(e)}\n\n" for e in events)


def test_anthropic_stream_message_start_and_delta():
    start = {"input_tokens": 4, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
    text = _sse(
        [
            {"type": "message_start", "message": {"id": "msg_1", "usage": start}},
            {"type": "content_block_delta", "delta": {"text": "hi"}},
            {"type": "message_delta", "usage": {"output_tokens": 3}},
        ]
    )
    assert read_response(text) == read_response({"string": text})
    got = read_response(text)
    assert got.id == "msg_1" and got.usage == _usage(4, 0, 0)
    restated = _sse(
        [
            {"type": "message_start", "message": {"id": "msg_2", "usage": start}},
            {"type": "message_delta", "usage": ANTHROPIC_USAGE},
        ]
    )
    assert read_response(restated).usage == _usage(3512, 3000, 500)


def test_openai_chat_stream_final_chunk():
    text = (
        'data: {"id":"chatcmpl-1","choices":[{"delta":{"content":"a"}}],"usage":null}\n\n'
        'data: {"id":"chatcmpl-1","choices":[],"usage":{"prompt_tokens":3000,'
        '"prompt_tokens_details":{"cached_tokens":2944}}}\n\ndata: [DONE]\n\n'
    )
    got = read_response(text)
    assert got.id == "chatcmpl-1" and got.usage == _usage(3000, 2944, 0)


def test_responses_stream_completed_event():
    usage = {"input_tokens": 2100, "input_tokens_details": {"cached_tokens": 2048}}
    text = _sse(
        [
            {"type": "response.created", "response": {"id": "resp_9", "usage": None}},
            {"type": "response.output_text.delta", "delta": "x"},
            {"type": "response.completed", "response": {"id": "resp_9", "usage": usage}},
        ]
    )
    got = read_response(text)
    assert got.id == "resp_9" and got.usage == _usage(2100, 2048, 0)


def test_gzip_binary_base64_and_unreadable_bodies():
    body = json.dumps({"id": "msg_7", "usage": ANTHROPIC_USAGE}).encode()
    packed = gzip.compress(body)
    assert read_response({"string": packed}).usage == _usage(3512, 3000, 500)
    assert read_response(base64.b64encode(packed).decode()).id == "msg_7"
    assert read_response(base64.b64encode(body)).id == "msg_7"
    for bad in (b"\x1f\x8b broken", "not json at all", b"\xff\xfe", 42, None, "{oops", "[1]"):
        assert read_response(bad).usage is None


def test_cassette_usage_reaches_the_report_and_the_cli(tmp_path: Path):
    msgs = b.session()
    first, second = b.anthropic(msgs[:1]), b.anthropic(msgs[:3])
    cold = {"input_tokens": 2000, "cache_creation_input_tokens": 0, "output_tokens": 5}
    warm = gzip.compress(json.dumps({"id": "msg_2", "usage": ANTHROPIC_USAGE}).encode())
    path = cas.write(
        tmp_path / "t.yaml",
        [
            cas.interaction(first, response=json.dumps({"id": "msg_1", "usage": cold})),
            cas.interaction(second, response=warm, headers={"content-encoding": ["gzip"]}),
            cas.interaction(b.anthropic(msgs[:5]), response="<html>oops</html>"),
        ],
    )
    assert "!!binary" in path.read_text()
    report = audit_paths([path])
    assert [r.usage for r in report.requests] == [_usage(2000, 0, 0), _usage(3512, 3000, 500), None]
    assert report.recorded_usage == _usage(5512, 3000, 500)
    out, err = io.StringIO(), io.StringIO()
    assert audit_command([path], None, False, out=out, err=err) == EXIT_STABLE
    text = " ".join(line.strip() for line in out.getvalue().splitlines())  # plain: wrapped at 100
    assert "recorded hit rate: 54.4% (3,000 of 5,512 input tokens read from cache, 500 " in text
    assert "written; 2 of 3 requests recorded usage)" in text
    assert "tokens, estimated)" in text and "recorded in/read/write: 2,000/0/0" in text
    out = io.StringIO()
    audit_command([path], None, True, out=out, err=err)
    doc = json.loads(out.getvalue())
    assert doc["token_counts"] == "estimated" and doc["recorded_requests"] == 2
    assert doc["recorded_usage"] == {
        "input_tokens": 5512,
        "cache_read_tokens": 3000,
        "cache_write_tokens": 500,
    }
    rec = doc["records"][1]
    assert rec["recorded_hit_rate"] == 3000 / 3512
    assert rec["theoretical_hit_rate"] == rec["max_cacheable_tokens"] / rec["total_tokens"]
    assert doc["records"][2]["recorded_usage"] is None


def test_without_recorded_responses_the_cli_says_so(tmp_path: Path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(jsonbytes.dumps(jsonbytes.loads(b.anthropic([b.user("q")]))) + b"\n")
    out = io.StringIO()
    audit_command([path], None, False, out=out, err=io.StringIO())
    assert "recorded hit rate: - (no recorded response reported usage)" in out.getvalue()


CASSETTES = Path(__file__).resolve().parents[2] / "cassettes"


@pytest.mark.parametrize("name", ["anthropic-tool-turn.yaml", "openai-chat-tool-turn.yaml"])
def test_recorded_cassettes_usage_matches_their_responses(name: str):
    import yaml

    path = CASSETTES / name
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    expected = []
    for inter in doc["interactions"]:
        usage = json.loads(inter["response"]["body"]["string"])["usage"]
        if "prompt_tokens" in usage:
            cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
            expected.append(_usage(usage["prompt_tokens"], cached, 0))
        else:
            read = usage.get("cache_read_input_tokens") or 0
            write = usage.get("cache_creation_input_tokens") or 0
            expected.append(_usage(usage["input_tokens"] + read + write, read, write))
    report = audit_paths([path])
    assert [r.usage for r in report.requests] == expected
    assert len(expected) == 2 and all(u.input_tokens > 0 for u in expected)
