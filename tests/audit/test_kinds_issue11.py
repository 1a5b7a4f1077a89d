"""Kinds beyond stable/break/new (issue 11): deferred tools, retries, shorter reruns, divergence."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore.audit import Verdict, audit_bodies

from . import _bodies as b


def _tool(name: str, deferred: bool = False) -> dict[str, Any]:
    tool: dict[str, Any] = {
        "name": name,
        "description": f"The {name} tool.",
        "input_schema": {"type": "object", "properties": {}},
    }
    if deferred:
        tool["defer_loading"] = True
    return tool


SEARCH = {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"}


def test_appending_deferred_tools_is_its_own_kind():
    msgs = b.session()
    before = b.anthropic(msgs[:3], tools=[SEARCH, _tool("read_file")])
    after = b.anthropic(
        msgs[:5], tools=[SEARCH, _tool("read_file"), _tool("deploy", True), _tool("rollback", True)]
    )
    report = audit_bodies([before, after])
    rec = report.requests[1]
    assert rec.verdict is Verdict.DEFERRED_TOOLS
    assert rec.changes == (Verdict.DEFERRED_TOOLS,)
    assert rec.path == "tools[2]" and rec.first_break_offset == after.index(b'{"name":"deploy"')
    assert rec.divergence is None and report.stable
    assert "(+2)" in (rec.detail or "")
    assert rec.lost_tokens == 0  # nothing of the previous prefix is lost


def test_a_deferred_tool_inserted_before_others_is_allowed_too():
    msgs = b.session()
    before = b.anthropic(msgs[:1], tools=[_tool("a"), _tool("b")])
    after = b.anthropic(msgs[:3], tools=[_tool("a"), _tool("late", True), _tool("b")])
    assert audit_bodies([before, after]).requests[1].verdict is Verdict.DEFERRED_TOOLS


def test_appending_a_tool_that_is_not_deferred_is_a_tools_divergence():
    msgs = b.session()
    before = b.anthropic(msgs[:3], tools=[_tool("read_file")])
    after = b.anthropic(msgs[:5], tools=[_tool("read_file"), _tool("deploy")])
    rec = audit_bodies([before, after]).requests[1]
    assert rec.verdict is Verdict.BREAK and rec.divergence == "tools"
    assert rec.path == "tools[1]" and rec.detail == "tools[1] added"


def test_deferred_tools_then_a_history_edit_lists_both_kinds():
    before = b.anthropic([b.user("q"), b.assistant("x"), b.user("r")], tools=[_tool("a")])
    after = b.anthropic(
        [b.user("q"), b.assistant("EDITED"), b.user("r")], tools=[_tool("a"), _tool("d", True)]
    )
    rec = audit_bodies([before, after]).requests[1]
    assert rec.verdict is Verdict.BREAK
    assert rec.changes == (Verdict.DEFERRED_TOOLS, Verdict.BREAK)
    assert rec.divergence == "messages" and rec.path == "messages[1].content[0].text"


def test_an_identical_retry_is_its_own_kind():
    body = b.anthropic(b.session()[:3])
    report = audit_bodies([body, body])
    rec = report.requests[1]
    assert rec.verdict is Verdict.RETRY and rec.changes == (Verdict.RETRY,)
    assert rec.compared_with == 0 and rec.detail == "identical to request 0 (a retry)"
    assert rec.first_break_offset is None and report.stable


def test_a_shorter_rerun_is_not_a_break_and_its_continuation_is_stable():
    msgs = b.session()
    long, short = b.anthropic(msgs[:5]), b.anthropic(msgs[:3])
    branch = b.anthropic([*msgs[:3], b.assistant("another answer"), b.user("next")])
    report = audit_bodies([long, short, branch])
    rerun, after = report.requests[1], report.requests[2]
    assert rerun.verdict is Verdict.SHORTER_RERUN and rerun.compared_with == 0
    assert rerun.path == "messages[3]"
    assert rerun.detail == (
        "shorter rerun: the history stops after 3 of the previous request's 5 items, "
        "every one unchanged"
    )
    assert after.verdict is Verdict.STABLE and after.compared_with == 1
    assert report.stable


def test_divergences_are_named():
    msgs = b.session()
    base = b.anthropic(msgs[:3], tools=[_tool("a")])
    tools = b.anthropic(msgs[:5], tools=[_tool("b")])
    system = b.anthropic(msgs[:5], tools=[_tool("a")], system="Changed.")
    history = b.anthropic([msgs[0], b.assistant("changed"), *msgs[2:5]], tools=[_tool("a")])
    got = [audit_bodies([base, x]).requests[1].divergence for x in (tools, system, history)]
    assert got == ["tools", "system", "messages"]
    sys_a = {"role": "system", "content": "A"}
    sys_b = {"role": "system", "content": "B"}
    q = {"role": "user", "content": "q"}
    chat = audit_bodies([b.chat([sys_a, q]), b.chat([sys_b, q])]).requests[1]
    assert chat.verdict is Verdict.BREAK  # grouped by the first non-system message
    assert chat.divergence == "system" and chat.path == "messages[0].content"
    instr = audit_bodies(
        [b.responses([q], instructions="A"), b.responses([q], instructions="B")]
    ).requests[1]
    assert instr.divergence == "system" and instr.path == "instructions"
    assert instr.to_dict()["divergence"] == "system"


_MSG = st.sampled_from(["a", "b", "c", "d"])


def _messages(words: list[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, w in enumerate(words):
        out.append(b.user(w) if i % 2 == 0 else b.assistant(w))
    return out


@settings(max_examples=80, deadline=None)
@given(
    words=st.lists(_MSG, min_size=1, max_size=8),
    cut=st.integers(1, 8),
    deferred=st.lists(st.sampled_from(["x", "y", "z"]), max_size=3),
    op=st.sampled_from(["deferred", "retry", "rerun"]),
)
def test_deferred_tools_retries_and_shorter_reruns_never_break(words, cut, deferred, op):
    msgs = _messages(words)
    tools = [_tool("base")]
    first = b.anthropic(msgs, tools=tools)
    if op == "deferred":
        second = b.anthropic(msgs, tools=[*tools, *(_tool(n, True) for n in deferred)])
    elif op == "retry":
        second = first
    else:
        second = b.anthropic(msgs[: min(cut, len(msgs))], tools=tools)
    rec = audit_bodies([first, second]).requests[1]
    assert rec.verdict is not Verdict.BREAK
    assert Verdict.BREAK not in rec.changes
    assert rec.compared_with == 0


def test_deferred_tools_are_not_counted_in_the_prefix_and_keep_it_cacheable():
    msgs = b.session()
    plain = b.anthropic(msgs[:3], tools=[SEARCH, _tool("read_file")])
    with_deferred = b.anthropic(
        msgs[:3], tools=[SEARCH, _tool("read_file"), _tool("deploy", True), _tool("rollback", True)]
    )
    again, both = audit_bodies([plain, plain]), audit_bodies([plain, with_deferred])
    assert both.requests[1].verdict is Verdict.DEFERRED_TOOLS
    assert both.requests[1].total_tokens == again.requests[1].total_tokens > 0
    assert both.requests[1].max_cacheable_tokens == again.requests[1].max_cacheable_tokens
