"""Compaction (SPEC C1–C3): the planner's cuts, the one call, the result, the CLI, and the cache.

The cut property is checked over generated histories with parallel calls, error results, image
follow-ups and turns that hit the step limit; the emulator proves the cache misses once after a
compaction and then hits, and the auditor names the change ``compaction``.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore.archive import ArchiveStore, Conversation, ConversationState
from llmcore.audit import audit_bodies
from llmcore.bench import _agent_tools
from llmcore.cli.compact import compact_command
from llmcore.compaction import (
    SUMMARY_HEAD,
    SUMMARY_PROMPT,
    Refusal,
    plan_compaction,
    run_compaction,
    transcript,
    turn_starts,
)
from llmcore.emulator import AgentWorkspace, Emulator, ManualClock, parse_script
from llmcore.emulator.script import NO_TOOLS_TEXT
from llmcore.errors import APIStatusError
from llmcore.facts import SentFacts, TurnFacts
from llmcore.messages import Image, Message, Text, ToolCall, ToolResult
from llmcore.providers.base import ParsedResponse, Provider
from llmcore.runner import IMAGE_FOLLOW_UP_TEXT, Runner
from llmcore.transport import HTTPTransport
from llmcore.usage import Usage

PNG = b"\x89PNG\r\n\x1a\n" + b"\x01" * 20
SYSTEM = "You are a coding agent working in the user's project.\n" + "".join(
    f"- Rule {n}: read a file before you change it, keep changes small, and report each step.\n"
    for n in range(60)
)  # about 1,500 tokens: agent system prompts are long, and cached above the 1,024 minimum
MODEL = "claude-sonnet-4-5"

# ------------------------------------------------------------------- generated histories


@st.composite
def histories(draw: st.DrawFn) -> tuple[ConversationState, list[int]]:
    """A history of whole turns (and their true starts), as the runner builds them."""
    history: list[Message] = []
    starts: list[int] = []
    for turn in range(draw(st.integers(0, 7))):
        starts.append(len(history))
        user: list = [Text(text=f"turn {turn}")]
        if draw(st.booleans()):
            user.append(Image(data=PNG, mime_type="image/png"))
        history.append(Message(role="user", content=tuple(user)))
        for step in range(draw(st.integers(0, 3))):
            calls = [
                ToolCall(id=f"c{turn}_{step}_{k}", name="read_file", arguments=b'{"path":"a"}')
                for k in range(draw(st.integers(1, 3)))  # parallel calls
            ]
            history.append(Message.assistant(*calls))
            results = [
                ToolResult(
                    call_id=c.id, tool_name=c.name, content=b"x", is_error=draw(st.booleans())
                )
                for c in calls
            ]
            history.append(Message.tool(*results))
            if draw(st.booleans()):  # a tool returned an image
                history.append(
                    Message.user(IMAGE_FOLLOW_UP_TEXT, Image(data=PNG, mime_type="image/png"))
                )
        if draw(st.booleans()) or not history[-1].role == "tool":
            history.append(Message.assistant(f"done {turn}"))
        # else: the turn hit the step limit and ended on its tool results
    facts = SentFacts(turns=tuple(TurnFacts(message=s) for s in starts))
    with_facts = draw(st.booleans())
    state = ConversationState(
        history=tuple(history), sent_facts=facts if with_facts else SentFacts(), model=MODEL
    )
    return state, starts


def _unpaired(messages: tuple[Message, ...]) -> list[str]:
    calls = {p.id for m in messages for p in m.content if isinstance(p, ToolCall)}
    return [
        p.call_id
        for m in messages
        for p in m.content
        if isinstance(p, ToolResult) and p.call_id not in calls
    ]


@settings(max_examples=300, deadline=None)
@given(histories())
def test_every_cut_the_planner_makes_is_at_a_turn_start_and_keeps_calls_with_results(case):
    state, starts = case
    plan = plan_compaction(state)
    found = turn_starts(state)
    if state.sent_facts.turns:
        assert list(found) == starts  # exact with the turn facts
    if len(found) <= 2:
        assert plan.refusal is Refusal.TOO_FEW_TURNS and not plan.offered
        return
    assert plan.offered
    tail = state.history[plan.keep_from :]
    assert (
        tail[0].role == "user"
        and state.history[plan.keep_from - 1].role != "tool"
        or (plan.keep_from in starts)
    )
    assert plan.keep_from in starts  # a real turn start, never an image follow-up
    assert _unpaired(tail) == []  # no tool result separated from its call
    if state.sent_facts.turns:
        assert plan.keep_from == starts[-2]  # exactly the last two turns are kept


# -------------------------------------------------------------------------- on the emulator


_READ = {"tool_calls": [{"name": "read_file", "arguments": '{"path": "data/big.log"}'}]}
SCRIPT = parse_script(json.dumps([_READ, {"text": "Done."}] * 20).encode())
"""Each turn reads a 12 KB file and answers: no images (their first appearance resets
Anthropic's messages-level cache, PROVIDER-RULES §1.6, which would blur the figures)."""


class _Stopping(Emulator):
    """Closes the session's transport when the emulator stops."""

    transport: HTTPTransport | None = None

    def stop(self) -> None:
        if self.transport is not None:
            self.transport.close()
        super().stop()


def _session(turns: int, provider: str = "anthropic") -> tuple[Emulator, Runner, Conversation]:
    emulator = _Stopping(clock=ManualClock(), script=SCRIPT).start()
    transport = HTTPTransport(
        base_urls={provider: emulator.base_url}, api_keys={provider: "emulator"}
    )
    emulator.transport = transport
    runner = Runner(
        provider=provider,
        model=MODEL if provider == "anthropic" else "gpt-4.1",
        transport=transport,
        system=(SYSTEM,),
        tools=_agent_tools(AgentWorkspace()),
    )
    conversation = Conversation()
    for index in range(turns):
        runner.run_turn(conversation, f"Step {index}: keep going with the project.")
    return emulator, runner, conversation


def test_compaction_on_the_emulator_is_exactly_c1_and_misses_once_then_hits():
    emulator, runner, conversation = _session(5)
    try:
        before = conversation.state
        plan = plan_compaction(conversation, model=runner.model)
        assert plan.offered and plan.turns == 5 and plan.input_source == "last_request"
        last = before.usage.last_round
        assert plan.input_tokens == last.input + last.cache_read + last.cache_write
        assert plan.dollars is not None and plan.dollars > 0
        starts = turn_starts(before)
        outcome = run_compaction(conversation, runner, plan)
        assert outcome.ok and outcome.summary == NO_TOOLS_TEXT  # tools-only reply, no tools
        after = conversation.state
        assert after.history[0] == Message.user(f"{SUMMARY_HEAD}\n\n{NO_TOOLS_TEXT}")
        assert after.history[1:] == before.history[starts[-2] :]  # the last two turns verbatim
        assert not any(isinstance(p, Image) for p in after.history[0].content)
        assert after.items == (*before.items, after.items[-1])
        assert after.items[-1].type == "notice"
        assert [t.message for t in after.sent_facts.turns] == [1, 1 + starts[-1] - starts[-2]]
        assert all(t.sections is None for t in after.sent_facts.turns)
        assert after.usage.total.output > before.usage.total.output  # the call is paid for
        assert after.usage.cost.dollars > before.usage.cost.dollars
        bodies: list[bytes] = []
        usages: list[Usage] = []
        for index in range(3):
            result = runner.run_turn(conversation, f"After compaction {index}.")
            bodies.extend(result.bodies)
            usages.extend(r.usage for r in result.responses)
        first, second = usages[0], usages[1]
        # The head changed: the first request reads only tools and system and writes the rest
        # (a miss of the messages); the next reads everything the first wrote, and so on.
        assert first.input == 0 and first.cache_write > 0
        assert second.cache_read == first.cache_read + first.cache_write
        tools_and_system = first.cache_read
        assert tools_and_system > 1024
        assert all(u.cache_read > tools_and_system for u in usages[1:])
    finally:
        emulator.stop()
    whole = [*_bodies_of(before, runner), *bodies]
    records = audit_bodies(whole, provider="anthropic").requests
    kinds = [r.verdict.value for r in records]
    assert "break" not in kinds
    assert kinds[1] == "compaction" and {r.conversation for r in records} == {0}


def _bodies_of(state: ConversationState, runner: Runner) -> list[bytes]:
    from llmcore.request import Request

    provider = runner.current_provider()
    request = Request(
        model=runner.model,
        system=runner.system,
        tools=tuple(t.tool for t in runner.tools),
        messages=state.history,
        params=runner.params,
    )
    return [provider.build_body(request)]


class _Failing:
    def __init__(self, error: Exception | None = None, text: str = "") -> None:
        self.error = error
        self.text = text
        self.bodies: list[bytes] = []

    def send(self, provider: Provider, body: bytes, *, stream: bool = False) -> ParsedResponse:
        self.bodies.append(body)
        if self.error is not None:
            raise self.error
        content = (Text(text=self.text),) if self.text else ()
        return ParsedResponse(
            content=content, usage=Usage(input=5, output=1), stop_reason="end_turn"
        )


def _three_turns() -> Conversation:
    history: list[Message] = []
    turns = []
    for index in range(3):
        turns.append(TurnFacts(message=len(history)))
        history += [Message.user(f"q{index}"), Message.assistant(f"a{index}")]
    return Conversation(
        ConversationState(
            history=tuple(history), sent_facts=SentFacts(turns=tuple(turns)), model=MODEL
        )
    )


@pytest.mark.parametrize(
    "transport",
    [_Failing(APIStatusError("overloaded", provider="anthropic", status=529)), _Failing(text="  ")],
    ids=["failed call", "empty summary"],
)
def test_a_failed_call_or_empty_summary_changes_nothing_but_adds_a_failure(transport):
    conversation = _three_turns()
    before = conversation.state
    runner = Runner(provider="anthropic", model=MODEL, transport=transport)
    outcome = run_compaction(conversation, runner)
    assert not outcome.ok and len(transport.bodies) == 1  # exactly one call
    after = conversation.state
    assert after.history == before.history and after.usage == before.usage
    assert after.sent_facts == before.sent_facts
    assert [i.type for i in after.items] == ["failure"]


def test_the_call_is_one_request_with_the_prompt_the_transcript_and_no_tools():
    conversation = _three_turns()
    transport = _Failing(text="the summary")
    runner = Runner(provider="anthropic", model=MODEL, transport=transport)
    assert run_compaction(conversation, runner).ok
    body = json.loads(transport.bodies[0])
    assert "tools" not in body
    assert body["system"][0]["text"] == SUMMARY_PROMPT
    assert body["messages"][0]["content"][0]["text"] == "User: q0\n\nAssistant: a0"
    assert conversation.history[0] == Message.user(f"{SUMMARY_HEAD}\n\nthe summary")


def test_refusals_are_typed():
    assert plan_compaction(_three_turns(), turn_running=True).refusal is Refusal.TURN_RUNNING
    assert plan_compaction(_three_turns(), cli_backend=True).refusal is Refusal.CLI_BACKEND
    two = Conversation(ConversationState(history=_three_turns().history[:4]))
    assert plan_compaction(two).refusal is Refusal.TOO_FEW_TURNS


def test_the_preview_uses_characters_over_4_without_usage_and_prices_the_model():
    conversation = _three_turns()
    plan = plan_compaction(conversation)
    characters = sum(len(p.text) for m in conversation.history for p in m.content)
    assert plan.input_source == "characters" and plan.input_tokens == characters // 4
    assert plan_compaction(conversation, model="no-such-model").dollars is None


def test_transcript_cuts_long_results_and_names_images():
    long = ToolResult(call_id="c", tool_name="read_file", content=b"x" * 2500, is_error=True)
    text = transcript(
        [
            Message.user("look", Image(data=PNG, mime_type="image/png")),
            Message.assistant(ToolCall(id="c", name="read_file", arguments=b'{"path":"a"}')),
            Message.tool(long),
        ]
    )
    assert "User: [image, image/png]" in text
    assert 'Assistant called read_file({"path":"a"})' in text
    assert "Tool read_file failed: " + "x" * 2000 + " [… 500 more characters cut]" in text


# ------------------------------------------------------------------------------------ the CLI


def _archive(tmp_path: Path, turns: int) -> tuple[Emulator, Path]:
    emulator, _, conversation = _session(turns)
    folder = tmp_path / "agent"
    folder.parent.mkdir(parents=True, exist_ok=True)
    ArchiveStore(folder).save(conversation)
    return emulator, folder


def _run(folder: Path, **options) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = compact_command(folder, **options)
        except typer.Exit as exit_:
            code = exit_.exit_code
    return code, out.getvalue(), err.getvalue()


def test_cli_dry_run_prints_the_preview_and_calls_nothing(tmp_path):
    emulator, folder = _archive(tmp_path, 4)
    emulator.stop()  # a call would fail now
    before = (folder / "conversation.json").read_bytes()
    code, out, err = _run(folder, dry_run=True)
    assert (code, err) == (0, "")
    assert out.startswith("4 turns: 2 would be summarized") and "input tokens" in out
    assert (folder / "conversation.json").read_bytes() == before


def test_cli_compacts_through_the_emulator_and_saves(tmp_path):
    emulator, folder = _archive(tmp_path, 4)
    try:
        code, out, err = _run(folder, yes=True, base_url=emulator.base_url)
    finally:
        emulator.stop()
    assert (code, err) == (0, ""), err
    state = ArchiveStore(folder).load().state
    assert state.history[0].content[0].text.startswith(SUMMARY_HEAD)
    assert state.items[-1].type == "notice"


def test_cli_errors_are_one_line_exit_2(tmp_path):
    code, _, err = _run(tmp_path / "none", yes=True)
    assert code == 2 and err.count("\n") == 1 and "no conversation.json" in err
    emulator, folder = _archive(tmp_path, 2)
    emulator.stop()
    code, _, err = _run(folder, yes=True)
    assert code == 2 and "not offered" in err and err.count("\n") == 1
    emulator, folder = _archive(tmp_path / "more", 4)
    emulator.stop()
    code, _, err = _run(folder)  # no terminal to ask on
    assert code == 2 and "--yes" in err
    code, out, err = _run(folder, confirm=False)
    assert (code, err) == (0, "") and out.endswith("Not compacted.\n")
