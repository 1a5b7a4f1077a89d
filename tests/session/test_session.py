"""S2–S5 lifecycle: start-up, resume block, drift, saves, reset, checkpoints, bad files, terminals."""

from __future__ import annotations

import json
import os

import pytest

from llmcore.archive import ConversationState
from llmcore.compaction import SUMMARY_HEAD
from llmcore.errors import SessionConflictError, SessionError, SessionIdError, SessionNotFoundError
from llmcore.messages import Message, Text, ToolCall, ToolResult
from llmcore.providers.base import ParsedResponse
from llmcore.runner import Runner
from llmcore.session import RECENT_MESSAGES, RESUME_QUESTION, Session, list_sessions
from llmcore.session.summary import parse_extraction, split_history
from llmcore.usage import Usage

from .conftest import FAKE_KEY


class Replies:
    """A transport answering every request with the next text (and recording bodies)."""

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.bodies: list[bytes] = []

    def send(self, provider, body, *, stream=False):
        self.bodies.append(body)
        text = self.texts.pop(0) if self.texts else "ok"
        return ParsedResponse(content=(Text(text=text),), usage=Usage(input=1000, output=50))


class Terminal:
    """Starts sessions as one terminal would, recording what it was told and asked."""

    def __init__(self, workspace, config, clock, ids, pid=100, answer=True):
        self.workspace, self.config, self.clock, self.ids = workspace, config, clock, ids
        self.pid, self.answer = pid, answer
        self.said: list[str] = []
        self.asked: list[str] = []

    def start(self, **options) -> Session:
        def ask(question):
            self.asked.append(question)
            return self.answer

        options.setdefault("alive", lambda pid: False)
        return Session.start(
            self.workspace,
            app="agent",
            ask=ask,
            say=self.said.append,
            config=self.config,
            pid=self.pid,
            clock=self.clock,
            token=self.ids,
            **options,
        )


def _turn(session: Session, runner: Runner, text: str) -> None:
    runner.run_turn(session.conversation, text)
    session.record_turn()


@pytest.fixture
def terminal(workspace, config, clock, ids):
    return Terminal(workspace, config, clock, ids)


@pytest.fixture
def runner():
    return Runner(provider="anthropic", model="claude-sonnet-4-5", transport=Replies())


def test_first_start_is_a_new_session_and_exit_saves_file_and_pointer(terminal, runner):
    with terminal.start() as session:
        assert session.resume_block == "" and session.drift is None
        _turn(session, runner, "hello")
    assert terminal.asked == [] and terminal.said == []
    path = session.store.paths.session_file(session.session_id)
    assert json.loads(path.read_text())["session_id"] == session.session_id
    assert session.store.read_pointer(100) == session.session_id


def test_resume_yes_keeps_id_rebuilds_history_and_builds_the_exact_block(
    terminal, runner, workspace
):
    (workspace / "agent_spec.md").write_text("spec v1")
    (workspace / "tools.py").write_text("x = 1")
    with terminal.start() as first:
        first.track("tools.py")
        first.summary = "User designed a customer support agent with three tools."
        first.decisions = ("Selected GPT-5 as the agent model", "Chose REST API tools")
        _turn(first, runner, "design it")
    (workspace / "agent_spec.md").write_text("spec v2")
    second = terminal.start()
    assert terminal.said == ["Previous session found (last active: 2026-03-30 10:17 UTC)"]
    assert terminal.asked == [RESUME_QUESTION]
    assert second.session_id == first.session_id
    assert second.conversation.history == first.conversation.history
    assert second.resume_block == (
        "# Resumed Session Context\n"
        f"This is a resumed session (ID: {first.session_id}).\n"
        "Originally started: 2026-03-30 10:15 UTC\n"
        "Last active: 2026-03-30 10:17 UTC\n"
        "\n"
        "Agent specification file: agent_spec.md\n"
        "\n"
        "## Previous Session Summary\n"
        "User designed a customer support agent with three tools.\n"
        "\n"
        "## Key Decisions Made\n"
        "- Selected GPT-5 as the agent model\n"
        "- Chose REST API tools\n"
        "\n"
        "## File Changes Since Last Session\n"
        "- 1 tracked file unchanged\n"
        "- agent_spec.md: modified\n"
        "\n"
        "IMPORTANT: You are resuming a previous session. Review the context above\n"
        "before proceeding. If the user's request seems to continue prior work,\n"
        "use this context. If they start a new topic, proceed normally."
    )
    assert second.system_prompt("BASE") == ("BASE", second.resume_block)
    block = second.resume_block
    _turn(second, runner, "more")
    assert second.resume_block == block  # computed once: byte-identical for the session


def test_drift_outcomes_unchanged_modified_deleted(terminal, runner, workspace):
    for name in ("a.txt", "b.txt", "c.txt"):
        (workspace / name).write_text(name)
    with terminal.start() as first:
        first.track("a.txt", "b.txt", "c.txt", "../escape.txt", "/etc/passwd")
        _turn(first, runner, "x")
    (workspace / "b.txt").write_text("changed")
    (workspace / "c.txt").unlink()
    os.symlink(workspace / "a.txt", workspace / "c.txt")  # replaced by a symlink: deleted
    drift = terminal.start().drift
    assert (drift.unchanged, drift.modified, drift.deleted) == (1, ("b.txt",), ("c.txt",))
    assert drift.lines() == ["1 tracked file unchanged", "b.txt: modified", "c.txt: deleted"]


def test_resume_no_starts_new_and_leaves_the_old_file(terminal, runner):
    with terminal.start() as first:
        _turn(first, runner, "x")
    old = first.store.paths.session_file(first.session_id)
    before = old.read_bytes()
    terminal.answer = False
    with terminal.start() as second:
        assert second.session_id != first.session_id and second.conversation.history == ()
        assert second.resume_block == ""
        _turn(second, runner, "y")
    assert old.read_bytes() == before  # kept, and still listed
    assert second.store.read_pointer(100) == second.session_id
    assert list_sessions(second.store).ids() == (second.session_id, first.session_id)
    terminal.pid, terminal.answer, terminal.said = 101, True, []
    assert terminal.start().session_id == second.session_id  # the newer one is offered


def test_an_empty_new_session_is_not_kept_and_never_hides_the_previous_one(terminal, runner):
    with terminal.start() as first:
        _turn(first, runner, "real work")
    terminal.pid, terminal.answer = 101, False  # answer n, then /exit without a message
    with terminal.start() as empty:
        assert empty.session_id != first.session_id
    assert not empty.saved and empty.close() is None
    assert empty.store.load(empty.session_id) is None
    assert list_sessions(empty.store).ids() == (first.session_id,)
    terminal.pid, terminal.answer, terminal.said = 102, True, []
    resumed = terminal.start()
    assert len(terminal.said) == 1 and terminal.said[0].startswith("Previous session found")
    assert resumed.session_id == first.session_id and resumed.saved
    assert resumed.conversation.history == first.conversation.history


def test_a_chosen_session_is_resumed_without_asking_and_an_unknown_id_names_the_known_ones(
    terminal, runner
):
    with terminal.start() as first:
        _turn(first, runner, "first task")
    terminal.pid, terminal.answer = 101, False
    with terminal.start() as second:
        _turn(second, runner, "second task")
    terminal.pid, terminal.asked = 102, []
    chosen = terminal.start(session_id=first.session_id)
    assert terminal.asked == [] and chosen.session_id == first.session_id
    assert chosen.conversation.history == first.conversation.history
    assert chosen.resume_block.startswith("# Resumed Session Context")
    assert chosen.store.read_pointer(102) == first.session_id
    with pytest.raises(SessionNotFoundError) as caught:
        terminal.start(session_id="0123456789ab")
    assert caught.value.message == (
        "no saved session '0123456789ab'; known sessions (newest first): "
        f"{second.session_id}, {first.session_id}"
    )
    with pytest.raises(SessionIdError):
        terminal.start(session_id="../../etc")


def test_exit_saves_on_exception_and_ctrl_c(terminal, runner):
    with pytest.raises(RuntimeError), terminal.start() as session:
        runner.run_turn(session.conversation, "x")
        raise RuntimeError("crash")
    assert (
        session.store.load(session.session_id).record.recent_messages
        == session.conversation.history
    )
    terminal.pid = 101
    with pytest.raises(KeyboardInterrupt), terminal.start() as other:
        runner.run_turn(other.conversation, "y")
        raise KeyboardInterrupt
    assert len(other.store.load(other.session_id).record.recent_messages) == len(
        other.conversation.history
    )


def test_reset_confirms_deletes_and_suppresses_auto_save_until_the_next_response(
    terminal, runner, workspace
):
    (workspace / "agent_spec.md").write_text("spec")
    (workspace / "templates").mkdir()
    (workspace / "templates" / "t.txt").write_text("t")
    session = terminal.start(template_dir="templates")
    _turn(session, runner, "x")
    session.checkpoint()
    old_id, store = session.session_id, session.store
    asked = []
    deleted = session.reset(lambda q: asked.append(q) or q.startswith("Delete agent_spec"))
    assert asked == ["Delete agent_spec.md? [y/N]", "Delete templates? [y/N]"]
    assert deleted == ["agent_spec.md"] and (workspace / "templates").is_dir()
    assert not (workspace / "agent_spec.md").exists()
    assert not store.paths.session_file(old_id).exists() and store.read_pointer(100) is None
    assert not store.paths.checkpoints_dir(old_id).exists()
    assert session.session_id != old_id and session.conversation.history == ()
    assert session.resume_block == "" and session.system_prompt("BASE") == ("BASE",)
    assert session.close() is None  # just reset: no auto-save
    assert not store.paths.session_file(session.session_id).exists()
    _turn(session, runner, "after reset")  # a successful response re-enables saving
    assert session.close() is not None and store.paths.session_file(session.session_id).exists()


def test_checkpoints_list_and_restore(terminal, runner):
    session = terminal.start()
    _turn(session, runner, "one")
    assert session.checkpoint() == 1
    _turn(session, runner, "two")
    assert session.checkpoint() == 2
    listing = session.checkpoints()
    assert [(c.number, c.messages) for c in listing] == [(1, 2), (2, 4)]
    assert listing[0].line().startswith("#1  2026-03-30T")
    session.restore(1)
    assert [m.content[0].text for m in session.conversation.history] == ["one", "ok"]
    saved = session.store.load(session.session_id).record
    assert saved.checkpoint_count == 2 and len(saved.recent_messages) == 2
    assert session.checkpoint() == 3


def test_bad_session_files_are_reported_in_one_line_kept_and_a_new_session_starts(terminal, runner):
    with terminal.start() as first:
        _turn(first, runner, "x")
    path = first.store.paths.session_file(first.session_id)
    for content in (b'{"schema_version": 9}', b"\x00garbage"):
        path.write_bytes(content)
        terminal.said.clear()
        second = terminal.start()
        assert len(terminal.said) == 1 and "Ignored a saved session" in terminal.said[0]
        assert "\n" not in terminal.said[0]
        assert second.session_id != first.session_id and path.read_bytes() == content


def test_a_crafted_pointer_is_refused_with_a_clear_message(terminal):
    store = terminal.start().store
    store.paths.sessions.mkdir(parents=True, exist_ok=True)
    store.paths.pointer_file(100).write_text('{"session_id": "../../../../tmp/evil"}')
    session = terminal.start()
    assert "must be 12 lowercase hex digits" in terminal.said[0]
    assert session.resume_block == ""


def test_two_terminals_have_their_own_pointers_and_a_running_one_is_left_alone(
    terminal, runner, workspace, config, clock, ids
):
    a = terminal.start()
    _turn(a, runner, "in a")
    b_term = Terminal(workspace, config, clock, ids, pid=200)
    b = b_term.start(alive=lambda pid: pid == 100)  # terminal 100 still runs
    assert b_term.asked == [] and b.session_id != a.session_id
    _turn(b, runner, "in b")
    assert a.store.pointer_pids() == [100, 200]
    assert a.store.read_pointer(100) == a.session_id and a.store.read_pointer(200) == b.session_id


def test_the_same_session_saved_from_two_terminals_never_loses_a_turn(
    terminal, runner, workspace, config, clock, ids
):
    with terminal.start() as first:
        _turn(first, runner, "start")
    a = Terminal(workspace, config, clock, ids, pid=300).start()
    b = Terminal(workspace, config, clock, ids, pid=400).start()
    assert a.session_id == b.session_id == first.session_id
    _turn(a, runner, "turn in a")
    kept = a.store.paths.session_file(a.session_id).read_bytes()
    runner.run_turn(b.conversation, "turn in b")
    with pytest.raises(SessionConflictError):
        b.record_turn()
    assert a.store.paths.session_file(a.session_id).read_bytes() == kept


def test_save_makes_one_extraction_call_and_returns_its_cost(terminal):
    answer = json.dumps({"summary": f"Built the spec. key {FAKE_KEY}", "decisions": ["Use REST"]})
    runner = Runner(
        provider="anthropic", model="claude-sonnet-4-5", transport=Replies("hi", answer)
    )
    session = terminal.start(runner=runner)
    _turn(session, runner, "hello")
    outcome = session.save()
    assert len(runner.transport.bodies) == 2
    assert (
        b"one JSON object" in runner.transport.bodies[1]
        and b'"tools"' not in runner.transport.bodies[1]
    )
    assert outcome.extraction.decisions == ("Use REST",)
    assert outcome.extraction.usage == Usage(input=1000, output=50)
    assert outcome.extraction.cost.dollars > 0
    saved = session.store.load(session.session_id).record
    assert saved.decisions == ("Use REST",) and saved.summary.startswith("Built the spec.")
    assert FAKE_KEY not in saved.summary


def test_extraction_tolerates_plain_text_and_fences():
    assert parse_extraction("Just a summary.") == ("Just a summary.", ())
    fenced = '```json\n{"summary": "S", "decisions": ["a", 3, " "]}\n```'
    assert parse_extraction(fenced) == ("S", ("a",))


def test_the_tail_is_the_compaction_tail_or_the_last_n_messages_at_a_turn_start():
    summary = Message.user(f"{SUMMARY_HEAD}\n\nOlder work.")
    kept = (Message.user("a"), Message.assistant("b"))
    assert split_history((summary, *kept)) == ("Older work.", kept)
    history = []
    for turn in range(15):
        call = ToolCall(id=f"c{turn}", name="read_file", arguments=b"{}")
        history += [
            Message.user(f"turn {turn}"),
            Message.assistant(call),
            Message.tool(
                ToolResult(call_id=f"c{turn}", tool_name="read_file", content=b"r", is_error=False)
            ),
            Message.assistant("done"),
        ]
    compacted, tail = split_history(tuple(history))
    assert compacted is None and len(tail) == RECENT_MESSAGES and tail[0] == Message.user("turn 10")
    assert ConversationState(history=tail).history[0].role == "user"


def test_secrets_in_messages_never_reach_any_session_file(terminal, runner, config):
    session = terminal.start()
    token = "ghp_" + "Q" * 36
    _turn(session, runner, f"my key is {FAKE_KEY} and my token is {token}; password=hunter2hunter2")
    session.summary = f"The user pasted {token}."
    session.checkpoint()
    session.close()
    written = [p.read_text() for p in config.rglob("*.json")]
    assert len(written) >= 3  # session file, pointer, checkpoint
    assert not any(FAKE_KEY in t or token in t or "hunter2hunter2" in t for t in written)
    assert any("[REDACTED:environment]" in t for t in written)


def test_compact_stores_the_compaction_summary_and_tail(terminal, runner):
    session = terminal.start()
    for index in range(4):
        _turn(session, runner, f"turn {index}")
    runner.transport.texts = ["Earlier: four greetings."]
    outcome = session.compact(runner)
    assert outcome.ok
    saved = session.store.load(session.session_id).record
    assert saved.compacted_history_summary == "Earlier: four greetings."
    assert saved.recent_messages == session.conversation.history[1:]
    assert [m.content[0].text for m in saved.recent_messages] == ["turn 2", "ok", "turn 3", "ok"]
    terminal.pid = 555
    resumed = terminal.start()
    assert resumed.conversation.history == session.conversation.history


def test_new_files_not_in_the_manifest_are_not_detected(terminal, runner, workspace):
    (workspace / "a.txt").write_text("a")
    with terminal.start() as first:
        first.track("a.txt")
        _turn(first, runner, "x")
    (workspace / "new.txt").write_text("new")
    drift = terminal.start().drift
    assert drift.lines() == ["1 tracked file unchanged"]


def test_an_unreadable_checkpoint_is_listed_as_such_and_kept(terminal, runner):
    session = terminal.start()
    _turn(session, runner, "one")
    session.checkpoint()
    path = session.store.paths.checkpoints_dir(session.session_id) / "1.json"
    path.write_bytes(b"{broken")
    (info,) = session.checkpoints()
    assert info.problem and info.line().startswith("#1  unreadable:")
    with pytest.raises(SessionError):
        session.restore(1)
    with pytest.raises(SessionError, match="no checkpoint 7"):
        session.restore(7)
    assert path.read_bytes() == b"{broken"


_KILLED = """
import os, signal, sys
from pathlib import Path
from llmcore.messages import Text
from llmcore.providers.base import ParsedResponse
from llmcore.runner import Runner
from llmcore.session import Session

class Replies:
    calls = 0
    def send(self, provider, body, *, stream=False):
        Replies.calls += 1
        if Replies.calls == 3:  # the third turn is in flight
            os.kill(os.getpid(), signal.SIGKILL)
        return ParsedResponse(content=(Text(text="ok"),))

runner = Runner(provider="anthropic", model="claude-sonnet-4-5", transport=Replies())
with Session.start(Path(sys.argv[1]), app="agent", ask=lambda q: True, config=Path(sys.argv[2]), pid=900) as s:
    for index in range(5):
        runner.run_turn(s.conversation, f"turn {index}")
        s.record_turn()
"""


def test_sigkill_loses_at_most_the_turn_in_flight(terminal, workspace, config):
    import signal
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _KILLED, str(workspace), str(config)], check=False)
    assert done.returncode == -signal.SIGKILL
    resumed = terminal.start()
    assert [m.content[0].text for m in resumed.conversation.history] == [
        "turn 0",
        "ok",
        "turn 1",
        "ok",
    ]


def test_the_listing_reports_a_bad_file_and_refuses_a_symlinked_folder(terminal, runner, tmp_path):
    with terminal.start() as session:
        _turn(session, runner, "keep me")
    store = session.store
    (store.paths.sessions / "0123456789ab.json").write_text("{not json")
    (store.paths.sessions / "notes.json").write_text("{}")  # not a session id: not read
    listing = list_sessions(store)
    assert listing.ids() == (session.session_id,)
    (info,) = listing.sessions
    assert (info.messages, info.turns, info.summary) == (2, 1, "keep me")
    assert len(listing.problems) == 1 and "0123456789ab.json" in listing.problems[0]
    assert (store.paths.sessions / "0123456789ab.json").read_text() == "{not json"  # kept
    moved = tmp_path / "elsewhere"
    store.paths.sessions.rename(moved)
    store.paths.sessions.symlink_to(moved)
    with pytest.raises(SessionError, match="symlink"):
        list_sessions(store)
