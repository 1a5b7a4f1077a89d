"""The live audit, the usage tap and the record format (SPEC V6)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore import jsonbytes
from llmcore.audit import LiveAudit, audit_paths
from llmcore.audit.live import RecordWriter, record_line
from llmcore.audit.tap import UsageTap
from llmcore.audit.usage import usage_of
from tests.examples import examples


def _body(first: str, *turns: str, system: str = "sys") -> bytes:
    messages = [{"role": "user", "content": [{"type": "text", "text": first}]}]
    for turn in turns:
        messages += [
            {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
            {"role": "user", "content": [{"type": "text", "text": turn}]},
        ]
    return jsonbytes.dumps(
        {"model": "claude-sonnet-4-6", "max_tokens": 5, "system": system, "messages": messages}
    )


ANTHROPIC_SSE = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":10,"cache_read_input_tokens":2000,"cache_creation_input_tokens":30,"output_tokens":1}}}\n\n'
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}\n\n'
    b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}\n\n'
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
)


@pytest.mark.full_count
@settings(max_examples=examples(full=2000, sample=200))
@given(st.lists(st.integers(min_value=1, max_value=len(ANTHROPIC_SSE) - 1), max_size=12))
def test_usage_read_from_a_stream_does_not_depend_on_its_chunking(cuts: list[int]) -> None:
    tap = UsageTap("text/event-stream")
    edges = [0, *sorted(set(cuts)), len(ANTHROPIC_SSE)]
    for start, end in zip(edges, edges[1:], strict=False):
        tap.feed(ANTHROPIC_SSE[start:end])
    assert tap.finish() == {
        "input_tokens": 10,
        "cache_read_input_tokens": 2000,
        "cache_creation_input_tokens": 30,
        "output_tokens": 7,
    }


def test_usage_of_a_gzipped_json_answer_and_a_chat_stream() -> None:
    body = gzip.compress(
        b'{"id":"chatcmpl-1","usage":{"prompt_tokens":1500,"prompt_tokens_details":{"cached_tokens":1408}}}'
    )
    tap = UsageTap("application/json", "gzip")
    for i in range(0, len(body), 7):
        tap.feed(body[i : i + 7])
    got = usage_of(tap.finish())
    assert got is not None and (got.input_tokens, got.cache_read_tokens) == (1500, 1408)
    chat = UsageTap(None)
    chat.feed(b'data: {"choices":[{"delta":{"content":"x"}}],"usage":null}\n\n')
    chat.feed(
        b'data: {"choices":[],"usage":{"prompt_tokens":9,"prompt_tokens_details":{"cached_tokens":0}}}\n\ndata: [DONE]\n\n'
    )
    assert chat.finish() == {"prompt_tokens": 9, "prompt_tokens_details": {"cached_tokens": 0}}


def test_an_unreadable_encoding_gives_no_usage() -> None:
    tap = UsageTap("application/json", "br")
    tap.feed(b"\x8b\x02\x80")
    assert tap.finish() is None


def test_memory_is_bounded_and_a_kept_conversation_goes_on_from_its_baseline() -> None:
    audit = LiveAudit(max_conversations=3)
    audit.observe(_body("keep me"), path="/v1/messages")
    for n in range(40):  # 40 other conversations, and the first kept active
        audit.observe(_body(f"other {n}"), path="/v1/messages")
        if n % 2 == 0:
            kept = audit.observe(
                _body("keep me", *[f"t{k}" for k in range(n // 2 + 1)]), path="/v1/messages"
            )
            assert kept.record.verdict == "stable" and kept.conversation == 0
    rows = audit.rows()
    assert len(rows) <= 3 and rows[0].conversation == 0 and rows[0].requests == 21
    edited = audit.observe(
        _body("keep me", *[f"t{k}" for k in range(21)], system="edited"), path="/v1/messages"
    )
    assert edited.is_break and edited.record.path == "system" and edited.conversation == 0
    assert audit.requests == 62


def test_the_record_reads_back_with_usage_time_and_the_same_verdicts(tmp_path: Path) -> None:
    audit = LiveAudit()
    path = tmp_path / "r.jsonl"
    writer = RecordWriter(path)
    first = audit.observe(_body("a"), path="/v1/messages", time=1_700_000_000.25)
    second = audit.observe(
        _body("a", "b", system="other"), path="/v1/messages", time=1_700_000_001.5
    )
    usage = {"input_tokens": 3, "cache_read_input_tokens": 2048, "cache_creation_input_tokens": 0}
    writer.write(second, 200, usage)  # the later answer ends first: still written second
    assert path.read_bytes() == b""
    writer.write(first, 200, None)
    writer.close()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["conversation"] for line in lines] == ["live-0", "live-0"]
    assert lines[1]["time"] == "2023-11-14T22:13:21.500000Z" and lines[1]["usage"] == usage
    assert lines[0]["body"]["system"] == "sys"  # a JSON value, as it round-trips
    report = audit_paths([path])
    assert [r.verdict for r in report.requests] == ["new", "break"]
    assert report.requests[1].path == second.record.path == "system"
    assert (
        report.requests[1].usage is not None and report.requests[1].usage.cache_read_tokens == 2048
    )


def test_a_body_that_does_not_round_trip_is_recorded_as_its_exact_text(tmp_path: Path) -> None:
    raw = b'{"model": "gpt-4o",  "messages": [{"role": "user", "content": "\\u00e9"}]}'
    audit = LiveAudit()
    observation = audit.observe(raw, path="/v1/chat/completions")
    line = json.loads(record_line(observation, 200, None))
    assert line["body"] == raw.decode() and line["path"] == "/v1/chat/completions"
    assert line["provider"] == "openai-chat" and line["status"] == 200


def test_an_envelope_with_status_and_usage_is_read_as_an_envelope(tmp_path: Path) -> None:
    # Before: a line with keys beyond body/conversation was audited as a (Responses) body.
    first = {"conversation": "c1", "body": json.loads(_body("q")), "status": 200}
    second = {
        "conversation": "c1",
        "body": json.loads(_body("q", "r", system="changed")),
        "status": 200,
        "usage": None,
    }
    path = tmp_path / "e.jsonl"
    path.write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n")
    report = audit_paths([path])
    assert [(r.provider, r.verdict, r.path) for r in report.requests] == [
        ("anthropic", "new", None),
        ("anthropic", "break", "system"),
    ]
