"""Grouping into conversations (SPEC V1): longest leading run, ties to the most recent."""

from __future__ import annotations

from llmcore.audit import GROUPING_RULE, Verdict, audit_bodies

from . import _bodies as b


def test_interleaved_conversations_are_separated():
    a = [
        b.user("alpha"),
        b.assistant("A1"),
        b.user("alpha 2"),
        b.assistant("A2"),
        b.user("alpha 3"),
    ]
    c = [b.user("beta"), b.assistant("B1"), b.user("beta 2")]
    bodies = [
        b.anthropic(a[:1]),
        b.anthropic(c[:1]),
        b.anthropic(a[:3]),
        b.anthropic(c[:3]),
        b.anthropic(a[:5]),
    ]
    report = audit_bodies(bodies)
    assert [r.conversation for r in report.requests] == [0, 1, 0, 1, 0]
    assert [r.compared_with for r in report.requests] == [None, None, 0, 1, 2]
    assert [r.verdict for r in report.requests] == [Verdict.NEW, Verdict.NEW] + [Verdict.STABLE] * 3
    assert report.conversations == 2
    assert report.requests[4].grouping == "joined: shares 3 leading history messages with request 2"
    assert report.requests[1].grouping == (
        "new conversation: no earlier conversation shares its first history message"
    )
    assert report.to_dict()["grouping_rule"] == GROUPING_RULE
    assert "longest leading run" in GROUPING_RULE


def test_longest_leading_run_wins_and_a_divergent_branch_is_a_break():
    base = [b.user("q"), b.assistant("x"), b.user("r")]
    report = audit_bodies(
        [
            b.anthropic(base),
            b.anthropic([b.user("q"), b.assistant("DIFFERENT"), b.user("r")]),
        ]
    )
    rec = report.requests[1]
    assert rec.conversation == 0 and rec.verdict is Verdict.BREAK
    assert rec.path == "messages[1].content[0].text"


def test_compaction_ties_go_to_the_most_recent_conversation():
    shared = [b.user("common q"), b.assistant("common a"), b.user("common q2")]
    conv_x = b.anthropic([b.user("x start"), b.assistant("x"), *shared])
    conv_y = b.anthropic([b.user("y start"), b.assistant("y"), *shared])
    compacted = b.anthropic(
        [b.user("# Conversation so far\n..."), *shared, b.assistant("z"), b.user("n")]
    )
    report = audit_bodies([conv_x, conv_y, compacted])
    assert report.requests[2].conversation == 1
    assert report.requests[2].compared_with == 1
    report = audit_bodies([conv_y, conv_x, compacted])
    assert report.requests[2].conversation == 1 and report.requests[2].compared_with == 1


def test_summary_head_joins_the_conversation_that_has_it():
    s = b.user("# Conversation so far\nsame")
    c1 = [b.user("one"), b.assistant("1"), b.user("tail one")]
    c2 = [b.user("two"), b.assistant("2"), b.user("tail two")]
    bodies = [
        b.anthropic(c1),
        b.anthropic(c2),
        b.anthropic([s, c1[2], b.assistant("t1"), b.user("u1")]),  # compaction of conversation 0
        b.anthropic([s, b.user("fresh")]),  # shares the summary head with conversation 0
        b.anthropic([b.user("# Conversation so far\nother"), b.user("unknown")]),
    ]
    report = audit_bodies(bodies)
    assert [r.conversation for r in report.requests] == [0, 1, 0, 0, 2]
    assert [r.verdict for r in report.requests] == [
        Verdict.NEW,
        Verdict.NEW,
        Verdict.COMPACTION,
        Verdict.BREAK,
        Verdict.NEW,
    ]
    assert report.requests[4].grouping == (
        "new conversation: a compaction summary with no earlier conversation"
    )


def test_system_messages_do_not_group_unrelated_chat_conversations():
    sys_msg = {"role": "system", "content": "Shared system prompt."}
    report = audit_bodies(
        [
            b.chat([sys_msg, {"role": "user", "content": "first"}]),
            b.chat([sys_msg, {"role": "user", "content": "second"}]),
        ]
    )
    assert [r.conversation for r in report.requests] == [0, 1]


def test_providers_are_never_grouped_together():
    report = audit_bodies(
        [
            b.chat([{"role": "user", "content": "hi"}], model="gpt-4.1"),
            b.anthropic([{"role": "user", "content": "hi"}]),
        ]
    )
    assert [r.provider for r in report.requests] == ["openai-chat", "anthropic"]
    assert [r.conversation for r in report.requests] == [0, 1]


def test_provider_flag_overrides_the_shape():
    body = b.chat([{"role": "user", "content": "hi"}])
    report = audit_bodies([body], provider="openrouter")
    assert report.requests[0].provider == "openrouter"


def test_shape_detection_of_minimal_bodies():
    from llmcore import jsonbytes

    def provider(body):
        return audit_bodies([jsonbytes.dumps(body)]).requests[0].provider

    hi = [{"role": "user", "content": "hi"}]
    assert provider({"model": "claude-3-opus", "max_tokens": 5, "messages": hi}) == "anthropic"
    assert provider({"model": "llama-3", "max_tokens": 5, "messages": hi}) == "openai-chat"
    assert provider({"model": "x", "system": "s", "messages": hi}) == "anthropic"
    assert provider({"model": "x", "messages": hi, "max_completion_tokens": 5}) == "openai-chat"
    assert (
        provider(
            {"model": "x", "messages": [{"role": "tool", "tool_call_id": "a", "content": "r"}]}
        )
        == "openai-chat"
    )
    assert provider({"model": "x", "input": "hi"}) == "openai-responses"
    assert provider({"model": "x", "prompt": {"id": "pmpt_1"}}) == "openai-responses"
    assert provider({"model": "anthropic/claude-sonnet-4", "messages": hi}) == "openai-chat"
