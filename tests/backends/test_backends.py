"""CLI backends on fake executables replaying recorded streams (SPEC B1); these always run."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest

from llmcore.archive import ArchiveStore, Conversation, ConversationState, Item
from llmcore.backends import (
    PREAMBLE_CHARS,
    ClaudeCodeBackend,
    CLIBackend,
    CodexBackend,
    preamble,
    transcript,
)
from llmcore.errors import (
    BackendError,
    BackendExitError,
    BackendNotFoundError,
    BackendStreamError,
    ProviderError,
)
from llmcore.usage import Usage
from tests.backends.fakes import fake_cli

CLAUDE_TURNS = ["claude_turn1.jsonl", "claude_turn2_resume.jsonl"]
CODEX_TURNS = ["codex_turn1.jsonl", "codex_turn2_resume.jsonl", "codex_turn3_resume.jsonl"]
CLAUDE_SESSION = "898a8231-f8d4-4de8-8037-bcf2be247c50"
CODEX_THREAD = "01a23184-0d06-74e1-bf43-1978166f43d3"

Backend = type[ClaudeCodeBackend] | type[CodexBackend]
BACKENDS: list[tuple[Backend, list[str]]] = [
    (ClaudeCodeBackend, CLAUDE_TURNS),
    (CodexBackend, CODEX_TURNS),
]


def _ids() -> Callable[[], str]:
    counter = itertools.count(1)
    return lambda: f"item-{next(counter)}"


def _backend(
    kind: Backend, executable: Path | str, conversation: Conversation | None = None, **kw: object
) -> CLIBackend:
    return kind(
        conversation if conversation is not None else Conversation(),
        executable=str(executable),
        new_id=_ids(),
        **kw,  # type: ignore[arg-type]
    )


def _message(argv: list[str]) -> str:
    assert argv[-2] == "--"
    return argv[-1]


def _texts(conversation: Conversation) -> list[tuple[str, str]]:
    return [(i.type, str(i.fields().get("text", ""))) for i in conversation.state.items]


def test_claude_turns_from_recorded_streams(tmp_path: Path) -> None:
    fake = fake_cli(tmp_path / "bin", CLAUDE_TURNS)
    conversation = Conversation()
    backend = _backend(ClaudeCodeBackend, fake.path, conversation)
    first = backend.run_turn("What files are here?")
    assert first.session_id == CLAUDE_SESSION
    assert first.usage == Usage(
        input=1539, output=29, cache_read=19636, cache_write=21248, cache_write_1h=0
    )
    assert first.cost.kind == "estimated" and first.cost.dollars == pytest.approx(0.153558)
    assert [i.type for i in first.items] == ["user", "assistant", "tool", "assistant"]
    tool = first.items[2].fields()
    assert tool["name"] == "Bash" and tool["text"] == '{"command":"ls","description":"List files"}'
    assert tool["detail"] == "README.md\napp.py" and tool["isError"] is False
    backend.run_turn("Read the README")
    first_argv, second_argv = fake.runs
    assert first_argv[:4] == ["-p", "--output-format", "stream-json", "--verbose"]
    assert "--resume" not in first_argv
    assert second_argv[second_argv.index("--resume") + 1] == CLAUDE_SESSION
    assert _message(second_argv) == "Read the README"
    state = conversation.state
    assert state.history == () and state.provider == "claude-code"
    assert state.model == "claude-opus-4-8"
    assert _texts(conversation)[-2:] == [
        ("tool", '{"file_path":"README.md"}'),
        ("assistant", "README.md says: a tiny project."),
    ]
    assert state.usage.total.cache_read == 19636 + 19531
    assert conversation.edited


def test_codex_turns_from_recorded_streams(tmp_path: Path) -> None:
    fake = fake_cli(tmp_path / "bin", CODEX_TURNS)
    conversation = Conversation()
    backend = _backend(CodexBackend, fake.path, conversation, model="gpt-5")
    results = [backend.run_turn(m) for m in ("What files are here?", "Read the README", "Sum up")]
    # turn.completed reports the thread's running totals: 19,671 → 39,826 → 50,056 input tokens
    assert [r.usage for r in results] == [
        Usage(input=9943, output=23, cache_read=9728),
        Usage(input=315, output=17, cache_read=19840),
        Usage(input=118, output=10, cache_read=10112),
    ]
    assert conversation.state.usage.total == Usage(input=10376, output=50, cache_read=39680)
    assert all(r.session_id == CODEX_THREAD for r in results)
    runs = fake.runs
    assert runs[0][:3] == ["exec", "--json", "--skip-git-repo-check"] and "resume" not in runs[0]
    for argv in runs[1:]:
        assert argv[argv.index("resume") + 1] == CODEX_THREAD
    assert ["-m", "gpt-5"] == runs[0][3:5]
    kinds = [i.type for i in results[0].items]
    assert kinds == ["user", "notice", "assistant", "tool", "assistant"]
    tool = results[0].items[3].fields()
    assert tool["name"] == "command_execution" and tool["text"] == "/bin/bash -lc ls"
    assert tool["detail"].endswith("README.md\napp.py\n") and tool["isError"] is False
    assert conversation.state.provider == "codex" and conversation.state.model == "gpt-5"
    assert results[0].cost.kind == "estimated"


def _restored(tmp_path: Path, text_size: int) -> tuple[ArchiveStore, Conversation]:
    """A conversation saved with a long transcript, then reopened from disk."""
    store = ArchiveStore(tmp_path / "agent")
    first = Conversation()
    # astral characters: one code point, two UTF-16 units, four UTF-8 bytes
    long = ("ab😀" * text_size)[:text_size]
    items = [
        Item.make(id="u1", type="user", text="hello"),
        Item.make(id="t1", type="tool", name="Bash", text="ls"),
        Item.make(id="a1", type="assistant", text=long),
        Item.make(id="u2", type="user", text="last question"),
        Item.make(id="a2", type="assistant", text="last answer"),
    ]
    first.end_turn(messages=(), provider="claude-code", model="m", items=items)
    store.save(first)
    return store, store.open()


@pytest.mark.parametrize(("kind", "streams"), BACKENDS)
def test_first_turn_after_reopen_sends_the_preamble_once(
    tmp_path: Path, kind: Backend, streams: list[str]
) -> None:
    fake = fake_cli(tmp_path / "bin", streams)
    store, reopened = _restored(tmp_path, 30_000)
    restored_text = transcript(reopened.state.items)
    assert restored_text.startswith("User: hello\n\nAssistant: ab😀")
    assert restored_text.endswith("User: last question\n\nAssistant: last answer")
    backend = _backend(kind, fake.path, reopened)
    assert backend.restored
    first = backend.run_turn("next step")
    second = backend.run_turn("and then")
    first_argv, second_argv = fake.runs
    expected = "# Conversation so far\n" + restored_text[-PREAMBLE_CHARS:] + "\n\nnext step"
    assert _message(first_argv) == expected == first.sent
    assert len(restored_text[-PREAMBLE_CHARS:]) == 20_000  # code points, not bytes or units
    assert "--resume" not in first_argv and "resume" not in first_argv
    assert _message(second_argv) == "and then" == second.sent
    assert "--resume" in second_argv or "resume" in second_argv
    for item in reopened.state.items:  # the preamble is in no item
        assert "# Conversation so far" not in item.json
    assert first.items[0].fields()["text"] == "next step"
    store.save(reopened)
    assert "# Conversation so far" not in store.conversation_file.read_text("utf-8")


@pytest.mark.parametrize(("kind", "streams"), BACKENDS)
def test_conversation_not_restored_sends_the_message_only(
    tmp_path: Path, kind: Backend, streams: list[str]
) -> None:
    fake = fake_cli(tmp_path / "bin", streams)
    backend = _backend(kind, fake.path)
    assert not backend.restored
    assert backend.run_turn("first").sent == "first"
    assert [_message(argv) for argv in fake.runs] == ["first"]


def test_restored_flag_overrides_the_items_check(tmp_path: Path) -> None:
    fake = fake_cli(tmp_path / "bin", CLAUDE_TURNS)
    state = ConversationState(items=(Item.make(id="u", type="user", text="earlier"),))
    backend = _backend(ClaudeCodeBackend, fake.path, Conversation(state), restored=False)
    backend.run_turn("now")
    assert _message(fake.runs[0]) == "now"
    explicit = _backend(ClaudeCodeBackend, fake.path, Conversation(), restored=True)
    assert explicit.message_for("now") == "# Conversation so far\n\n\nnow"


def test_preamble_and_transcript_formats() -> None:
    items = [
        Item.make(id="1", type="user", text="q"),
        Item.make(id="2", type="thinking", text="hidden"),
        Item.make(id="3", type="assistant", text="a"),
        Item.make(id="4", type="notice", text="n"),
        Item.make(id="5", type="assistant", text=""),
    ]
    assert transcript(items) == "User: q\n\nAssistant: a"
    assert preamble("x" * 20_001) == "# Conversation so far\n" + "x" * 20_000 + "\n\n"


def test_a_failed_first_turn_after_reopen_keeps_the_preamble_for_the_next(tmp_path: Path) -> None:
    fake = fake_cli(tmp_path / "bin", ["claude_api_error.jsonl"], status=1)
    _, reopened = _restored(tmp_path, 10)
    backend = _backend(ClaudeCodeBackend, fake.path, reopened)
    with pytest.raises(BackendExitError):
        backend.run_turn("one")
    # the stream named a session, so the next turn resumes it: the preamble was delivered
    assert backend.session_id == "76f45f19-f11d-4427-ba64-fcc1b5383915"
    assert backend.message_for("two") == "two"


@pytest.mark.parametrize("kind", [ClaudeCodeBackend, CodexBackend])
def test_missing_executable_is_one_clear_error(tmp_path: Path, kind: Backend) -> None:
    conversation = Conversation()
    backend = _backend(kind, tmp_path / "no-such-cli", conversation)
    with pytest.raises(BackendNotFoundError) as caught:
        backend.run_turn("hi")
    error = caught.value
    assert isinstance(error, BackendError) and isinstance(error, ProviderError)
    assert error.provider == kind.provider and error.executable.endswith("no-such-cli")
    assert "\n" not in str(error) and "cannot run" in str(error)
    assert [i.type for i in conversation.state.items] == ["user", "failure"]


def test_default_executable_comes_from_the_environment(tmp_path: Path) -> None:
    backend = ClaudeCodeBackend(Conversation(), env={"LLMCORE_CLAUDE": "/x/claude"})
    assert backend.executable == "/x/claude"
    codex = CodexBackend(Conversation(), env={"LLMCORE_CODEX": "", "PATH": str(tmp_path)})
    assert codex.executable == "codex"


def test_non_zero_exit_keeps_the_stderr_tail(tmp_path: Path) -> None:
    noise = "x" * 5000 + "\nfatal: bad config\n"
    fake = fake_cli(tmp_path / "bin", ["codex_turn1.jsonl"], stop=1, stderr=noise, status=3)
    conversation = Conversation()
    with pytest.raises(BackendExitError) as caught:
        _backend(CodexBackend, fake.path, conversation).run_turn("hi")
    error = caught.value
    assert error.status == 3 and str(error) == "codex exited with status 3: fatal: bad config"
    assert len(error.stderr_tail) == 2000 and error.stderr_tail.endswith("fatal: bad config")
    assert [i.type for i in conversation.state.items] == ["user", "failure"]
    assert conversation.state.usage.total == Usage()


def test_claude_api_error_result_names_the_api_error(tmp_path: Path) -> None:
    fake = fake_cli(tmp_path / "bin", ["claude_api_error.jsonl"], status=1)
    conversation = Conversation()
    with pytest.raises(BackendExitError) as caught:
        _backend(ClaudeCodeBackend, fake.path, conversation).run_turn("hi")
    assert str(caught.value) == (
        "claude-code exited with status 1: API Error: 400 messages.1.role: Input should be "
        "'user' or 'assistant'"
    )
    # the synthetic assistant text is not shown twice: only the failure item carries it
    assert [i.type for i in conversation.state.items] == ["user", "failure"]


def test_codex_turn_failed_names_the_error(tmp_path: Path) -> None:
    fake = fake_cli(tmp_path / "bin", ["codex_turn_failed.jsonl"], status=1)
    with pytest.raises(BackendExitError, match="Unknown parameter: 'client_metadata'"):
        _backend(CodexBackend, fake.path).run_turn("hi")


@pytest.mark.parametrize(("kind", "streams"), BACKENDS)
def test_stream_ending_mid_turn(tmp_path: Path, kind: Backend, streams: list[str]) -> None:
    fake = fake_cli(tmp_path / "bin", streams, stop=4)
    conversation = Conversation()
    with pytest.raises(BackendStreamError, match="ended mid-turn"):
        _backend(kind, fake.path, conversation).run_turn("hi")
    kinds = [i.type for i in conversation.state.items]
    assert kinds[0] == "user" and kinds[-1] == "failure" and "assistant" in kinds
    assert conversation.state.usage.total == Usage()


def test_crash_mid_stream_by_signal(tmp_path: Path) -> None:
    fake = fake_cli(tmp_path / "bin", CLAUDE_TURNS, stop=3, kill=True)
    with pytest.raises(BackendExitError) as caught:
        _backend(ClaudeCodeBackend, fake.path).run_turn("hi")
    assert caught.value.status == -9
    assert str(caught.value) == "claude-code exited with status -9: no output on stderr"


def test_torn_last_line_is_skipped(tmp_path: Path) -> None:
    lines = (Path(__file__).parent / "streams" / "claude_turn1.jsonl").read_text().splitlines()
    torn = tmp_path / "torn.jsonl"
    torn.write_text("\n".join([*lines, "not json", lines[-1][:40]]) + "\n")
    fake = fake_cli(tmp_path / "bin", [torn])
    result = _backend(ClaudeCodeBackend, fake.path).run_turn("hi")
    assert result.items[-1].fields()["text"] == "There are two files: README.md and app.py."


def test_panel_reopens_identically(tmp_path: Path) -> None:
    fake = fake_cli(tmp_path / "bin", CLAUDE_TURNS)
    store = ArchiveStore(tmp_path / "agent")
    conversation = store.open()
    _backend(ClaudeCodeBackend, fake.path, conversation).run_turn("What files are here?")
    store.save(conversation)
    assert store.open().state == conversation.state


def test_events_reach_the_callback(tmp_path: Path) -> None:
    fake = fake_cli(tmp_path / "bin", CODEX_TURNS)
    seen: list[str] = []
    backend = _backend(CodexBackend, fake.path, on_event=lambda e: seen.append(e["type"]))
    backend.run_turn("hi")
    assert seen[0] == "thread.started" and seen[-1] == "turn.completed"


def test_a_failing_event_callback_stops_the_program(tmp_path: Path) -> None:
    fake = fake_cli(tmp_path / "bin", CODEX_TURNS)

    def explode(event: object) -> None:
        raise RuntimeError("host callback failed")

    backend = _backend(CodexBackend, fake.path, on_event=explode)
    with pytest.raises(RuntimeError, match="host callback failed"):
        backend.run_turn("hi")


def test_claude_error_subtype_without_is_error_fails_the_turn(tmp_path: Path) -> None:
    lines = (Path(__file__).parent / "streams" / "claude_turn1.jsonl").read_text().splitlines()
    result = lines[-1].replace('"subtype":"success"', '"subtype":"error_max_turns"')
    stream = tmp_path / "max_turns.jsonl"
    stream.write_text("\n".join([*lines[:-1], result.replace('"result":', '"_result":')]) + "\n")
    fake = fake_cli(tmp_path / "bin", [stream])
    with pytest.raises(BackendError, match="claude-code: error_max_turns"):
        _backend(ClaudeCodeBackend, fake.path).run_turn("hi")
