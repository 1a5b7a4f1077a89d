"""Issue 19, the maximum's side: an upper bound on what the provider did (SPEC V1, V5).

Breakpoints as written (a prefix never marked is never written; 20-block lookback; at most 4
breakpoints; automatic mode), the no-breakpoint diagnosis, the "not visible in the input"
labels, and keyless requests grouped by meaning so that an early edit is a break.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llmcore import jsonbytes
from llmcore.audit import Verdict, audit_bodies, audit_paths

from . import _bodies as b
from . import _cassettes as cas

BIG = "word " * 1500  # 1,500 tokens of system prompt: above Sonnet 4.5's 1,024 minimum
CC = {"type": "ephemeral"}


def _turns(n: int, cache_last: bool) -> list[dict[str, Any]]:
    """``n`` alternating user / assistant messages, the last one a user message."""
    msgs: list[dict[str, Any]] = []
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        block: dict[str, Any] = {"type": "text", "text": f"turn {i}"}
        if cache_last and i == n - 1:
            block["cache_control"] = CC
        msgs.append({"role": role, "content": [block]})
    return msgs


def _body(messages: list[dict[str, Any]], **extra: Any) -> bytes:
    return b.anthropic(messages, system=BIG, extra=extra or None)


# --- breakpoints as written ------------------------------------------------------------------


def test_a_conversation_without_breakpoints_reads_nothing_and_is_diagnosed():
    report = audit_bodies([_body(_turns(1, False)), _body(_turns(3, False))])
    second = report.requests[1]
    assert second.breakpoints == 0
    assert second.max_cacheable_tokens == 0  # was the whole first request before issue 19
    assert second.ideal_cacheable_tokens == report.requests[0].total_tokens > 1024
    assert report.theoretical_hit_rate == 0.0
    [diagnosis] = report.diagnoses
    assert diagnosis.startswith("conversation 0 (requests 0-1, anthropic): no cache breakpoint")
    assert f"would reach {second.ideal_cacheable_tokens}" in diagnosis


def test_a_moving_breakpoint_reads_what_the_previous_one_wrote():
    report = audit_bodies([_body(_turns(1, True)), _body(_turns(3, True))])
    assert report.requests[1].max_cacheable_tokens == report.requests[0].total_tokens
    assert report.diagnoses == ()


def test_automatic_mode_marks_the_last_block():
    report = audit_bodies(
        [_body(_turns(1, False), cache_control=CC), _body(_turns(3, False), cache_control=CC)]
    )
    assert report.requests[1].breakpoints == 1
    assert report.requests[1].max_cacheable_tokens == report.requests[0].total_tokens


def test_the_lookback_reaches_20_blocks_back_and_no_further():
    # the first request writes at block 1 (system + 1 message); the second's only breakpoint
    # sits 21 or 22 blocks later: the 20-block lookback from it reaches block 1 or misses it
    first = _body(_turns(1, True))
    within = audit_bodies([first, _body(_turns(21, True))]).requests[1]
    beyond = audit_bodies([first, _body(_turns(22, True))]).requests[1]
    assert within.max_cacheable_tokens == audit_bodies([first]).requests[0].total_tokens
    assert beyond.max_cacheable_tokens == 0
    assert beyond.ideal_cacheable_tokens == within.max_cacheable_tokens


def test_more_than_four_breakpoints_read_nothing():
    def marked(n: int) -> list[dict[str, Any]]:
        msgs = _turns(n, False)
        for m in msgs:
            m["content"][0]["cache_control"] = CC
        return msgs

    first = _body(marked(1))
    four = audit_bodies([first, _body(marked(4))]).requests[1]
    five = audit_bodies([first, _body(marked(5))]).requests[1]
    assert four.max_cacheable_tokens > 0
    assert five.breakpoints == 5 and five.max_cacheable_tokens == 0  # the API refuses it (400)


def test_a_string_and_its_one_text_block_are_one_prefix():
    """Claude Code sends the prompt as a one-block list with cache_control, then as a string:
    the provider reads the whole prefix across the change (issue 19: 4,597 written, then read)."""
    first = _body(
        [{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": CC}]}]
    )
    second = _body(
        [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"},
            {"role": "user", "content": [{"type": "text", "text": "go", "cache_control": CC}]},
        ]
    )
    report = audit_bodies([first, second])
    assert report.requests[1].max_cacheable_tokens == report.requests[0].total_tokens


# --- not visible in the input ----------------------------------------------------------------


def _usage(read: int, write: int, fresh: int) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "usage": {
            "input_tokens": fresh,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write,
        },
    }


def test_a_cache_warm_before_the_recording_is_labelled(tmp_path: Path):
    body = _body(_turns(1, True))
    path = cas.write(
        tmp_path / "warm.yaml",
        [cas.interaction(body, response=_usage(1500, 0, 10)), cas.interaction(body)],
    )
    first = audit_paths([path]).requests[0]
    assert first.max_cacheable_tokens == 0 < first.usage.cache_read_tokens
    assert first.not_visible is not None
    assert first.not_visible.startswith("not visible in the input: the cache was warm")


def test_server_side_state_and_tool_loops_are_labelled():
    chained = jsonbytes.dumps(
        {
            "model": "gpt-5",
            "previous_response_id": "resp_1",
            "input": [{"role": "user", "content": "go"}],
        }
    )
    searched = _body(_turns(1, True), tools=[{"type": "web_search_20250305", "name": "web_search"}])
    plain = _body(_turns(1, True))
    labels = [r.not_visible for r in audit_bodies([chained, searched, plain]).requests]
    assert labels[0] == "not visible in the input: previous_response_id continues server-held items"
    assert labels[1] == (
        "not visible in the input: a server-side tool loop inside one request (web_search_20250305)"
    )
    assert labels[2] is None


# --- keyless grouping by meaning -------------------------------------------------------------


def _messages(first: str) -> list[dict[str, Any]]:
    return [b.user(first), b.assistant("Sure."), b.user("And the second part?")]


def test_a_first_message_edit_in_a_keyless_log_is_a_break_at_its_path(tmp_path: Path):
    log = tmp_path / "gateway.jsonl"
    bodies = [b.anthropic(_messages("Summarize a.txt")), b.anthropic(_messages("Summarize b.txt"))]
    log.write_bytes(b"\n".join(bodies) + b"\n")
    record = audit_paths([log]).requests[1]
    assert record.verdict is Verdict.BREAK  # was a new conversation: the break went unreported
    assert record.compared_with == 0
    assert record.path == "messages[0].content[0].text"
    assert record.first_break_offset == bodies[1].index(b"b.txt")


def test_a_chat_first_message_edit_in_a_keyless_log_is_a_break():
    def chat(first: str) -> bytes:
        return b.chat(
            [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": first},
                {"role": "assistant", "content": "Sure."},
                {"role": "user", "content": "Next?"},
            ]
        )

    record = audit_bodies([chat("one"), chat("two")]).requests[1]
    assert record.verdict is Verdict.BREAK and record.path == "messages[1].content"


def test_grouping_ignores_escapes_and_key_order_and_the_bytes_are_then_judged():
    first = jsonbytes.dumps(
        {"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": _messages("30°C")}
    )
    escaped = first.replace("°".encode(), b"\\u00b0")
    longer = jsonbytes.loads(escaped)
    longer["messages"] += [b.assistant("ok"), b.user("more")]
    second = jsonbytes.dumps(longer).replace("°".encode(), b"\\u00b0")
    record = audit_bodies([first, second]).requests[1]
    assert record.compared_with == 0  # joined: the same meaning
    assert record.grouping.startswith("joined: shares 3 leading history messages")


def test_a_genuinely_new_conversation_stays_new():
    first = b.anthropic(_messages("Summarize a.txt"), system="You are a poet.")
    other = b.anthropic(
        [b.user("Translate this."), b.assistant("Which language?"), b.user("French.")],
        system="You are a translator.",
    )
    one_shared = b.anthropic(
        [b.user("Write a haiku."), b.assistant("Sure."), b.user("About the sea.")],
        system="You are a judge.",
    )
    report = audit_bodies([first, other, one_shared])
    # the third shares one later message ("Sure.") but not the system prompt: not enough
    assert [r.verdict for r in report.requests] == [Verdict.NEW] * 3


def test_a_tool_order_edit_in_a_keyless_log_is_a_break_at_tools():
    tools = [
        {"name": "a", "description": "A", "input_schema": {"type": "object"}},
        {"name": "b", "description": "B", "input_schema": {"type": "object"}},
    ]
    first = b.anthropic(_messages("Go."), tools=tools)
    second = b.anthropic(_messages("Go.")[:1], tools=tools[::-1])
    record = audit_bodies([first, second]).requests[1]
    assert record.verdict is Verdict.BREAK and record.path == "tools[0].name"
