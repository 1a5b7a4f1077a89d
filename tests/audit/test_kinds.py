"""Allowed changes (SPEC P4, M4, C1) are reported as their own kinds, never as breaks."""

from __future__ import annotations

from llmcore import jsonbytes
from llmcore.audit import Verdict, audit_bodies

from . import _bodies as b

THINK = {"type": "thinking", "thinking": "Let me look.", "signature": "EoS1gnature=="}


def _thinking_turn():
    call = {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a"}}
    with_thinking = {"role": "assistant", "content": [THINK, call]}
    without = {"role": "assistant", "content": [call]}
    return with_thinking, without


def test_thinking_dropped_after_the_turn_ends():
    with_thinking, without = _thinking_turn()
    q, result = b.user("read a"), b.tool_result("toolu_1", "contents")
    mid_turn = b.anthropic([q, with_thinking, result])  # thinking carried within the turn
    next_turn = b.anthropic([q, without, result, b.assistant("done"), b.user("next")])
    report = audit_bodies([mid_turn, next_turn])
    rec = report.requests[1]
    assert rec.verdict is Verdict.THINKING_DROPPED
    assert rec.changes == (Verdict.THINKING_DROPPED,)
    assert rec.path == "messages[1].content[0].type"
    assert rec.first_break_offset == next_turn.index(b'{"type":"tool_use"') + len(b'{"type":"t')
    assert rec.lost_bytes > 0 and report.stable


def test_thinking_dropped_within_the_running_turn_is_a_break():
    with_thinking, without = _thinking_turn()
    q, result = b.user("read a"), b.tool_result("toolu_1", "contents")
    second_call = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_2", "name": "read_file", "input": {}}],
    }
    mid_turn = b.anthropic([q, with_thinking, result])
    still_running = b.anthropic([q, without, result, second_call, b.tool_result("toolu_2", "more")])
    rec = audit_bodies([mid_turn, still_running]).requests[1]
    assert rec.verdict is Verdict.BREAK


def test_thinking_drop_with_an_edit_is_a_break():
    with_thinking, _ = _thinking_turn()
    edited = {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "b"}}
        ],
    }
    q, result = b.user("read a"), b.tool_result("toolu_1", "contents")
    report = audit_bodies(
        [
            b.anthropic([q, with_thinking, result]),
            b.anthropic([q, edited, result, b.assistant("done"), b.user("next")]),
        ]
    )
    rec = report.requests[1]
    assert rec.verdict is Verdict.BREAK
    assert rec.changes == (Verdict.THINKING_DROPPED, Verdict.BREAK)
    assert rec.path == "messages[1].content[0].input.path"


def _reasoning_items():
    user = {"role": "user", "content": "What is the weather?"}
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA=="}
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "weather",
        "arguments": '{"city":"Paris"}',
        "status": "completed",
    }
    output = {"type": "function_call_output", "call_id": "call_1", "output": "sunny"}
    bare_call = {
        "type": "function_call",
        "call_id": "call_1",
        "name": "weather",
        "arguments": '{"city":"Paris"}',
    }
    answer = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Sunny."}],
    }
    return user, reasoning, call, output, bare_call, answer


def test_reasoning_items_dropped_with_id_and_status_after_the_turn():
    user, reasoning, call, output, bare_call, answer = _reasoning_items()
    first = b.responses([user, reasoning, call, output])
    second = b.responses(
        [user, bare_call, output, answer, {"role": "user", "content": "And tomorrow?"}]
    )
    rec = audit_bodies([first, second]).requests[1]
    assert rec.provider == "openai-responses"
    assert rec.verdict is Verdict.REASONING_DROPPED
    assert rec.changes == (Verdict.REASONING_DROPPED,)
    assert rec.path.startswith("input[1]")


def test_reasoning_dropped_mid_turn_is_a_break():
    user, reasoning, call, output, bare_call, _ = _reasoning_items()
    first = b.responses([user, reasoning, call, output])
    second = b.responses([user, bare_call, output])
    assert audit_bodies([first, second]).requests[1].verdict is Verdict.BREAK


def test_compaction_is_its_own_kind_and_later_requests_are_stable():
    u = [b.user(f"question {i}") for i in range(5)]
    a = [b.assistant(f"answer {i}") for i in range(5)]
    before = b.anthropic([u[0], a[0], u[1], a[1], u[2], a[2], u[3]])
    summary = b.user("# Conversation so far\nThe user asked three questions.")
    compacted = [summary, u[2], a[2], u[3], a[3], u[4]]
    after = b.anthropic(compacted)
    later = b.anthropic(compacted + [a[4], b.user("bye")])
    report = audit_bodies([before, after, later])
    rec = report.requests[1]
    assert rec.conversation == report.requests[0].conversation == report.requests[2].conversation
    assert rec.grouping == "joined by compaction: 3 messages after the summary continue request 0"
    assert rec.verdict is Verdict.COMPACTION and rec.path is not None
    assert rec.path.startswith("messages[0]")
    assert rec.lost_bytes == sum(
        len(jsonbytes.dumps(m)) for m in [u[0], a[0], u[1], a[1], u[2], a[2], u[3]]
    )
    assert report.requests[2].verdict is Verdict.STABLE
    assert report.stable


def test_compaction_in_chat_keeps_the_system_message_first():
    sys_msg = {"role": "system", "content": "You are terse."}
    msgs = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(7)]
    before = b.chat([sys_msg, *msgs])
    summary = {"role": "user", "content": "# Conversation so far\nsummary"}
    after = b.chat(
        [
            sys_msg,
            summary,
            *msgs[4:],
            {"role": "assistant", "content": "m7"},
            {"role": "user", "content": "m8"},
        ]
    )
    rec = audit_bodies([before, after]).requests[1]
    assert rec.verdict is Verdict.COMPACTION
    assert rec.path.startswith("messages[1]")
