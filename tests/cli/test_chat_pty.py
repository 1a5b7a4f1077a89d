"""``llmcore chat`` through a real pseudo-terminal (pexpect): prompt_toolkit input, the
embedded emulator, sessions saved and resumed across processes (SPEC S2–S6, R2)."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pexpect
import pytest

from llmcore.cli.chat import APP, HOLD_ENV
from llmcore.session import ProjectPaths

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")

SAFETY = 60  # seconds: a safety net only; every wait is for an expected output


def _spawn(tmp_path: Path, *extra: str, env: dict[str, str] | None = None) -> pexpect.spawn:
    full = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    full.update(PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm", NO_COLOR="1", **(env or {}))
    args = ["-m", "llmcore", "chat", "--config-dir", str(tmp_path / "cfg")]
    args += ["--workspace", str(tmp_path / "ws"), *extra]
    return pexpect.spawn(
        sys.executable, args, env=full, encoding="utf-8", timeout=SAFETY, dimensions=(50, 220)
    )


def _started(child: pexpect.spawn, kind: str = "New") -> str:
    child.expect(rf"{kind} session ([0-9a-f]{{12}})")
    session_id = child.match.group(1)
    child.expect("you>")
    return session_id


def _turn(child: pexpect.spawn, text: str) -> None:
    child.sendline(text)
    child.expect(r"turn \d+ · \d+ requests? · input [\d,]+ · cache read [\d,]+ · cache write")
    child.expect("hit rate")
    child.expect("you>")


def _exit(child: pexpect.spawn, code: int = 0) -> None:
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == code


def _paths(tmp_path: Path) -> ProjectPaths:
    return ProjectPaths.for_workspace(tmp_path / "ws", app=APP, config=tmp_path / "cfg")


def _record(tmp_path: Path, session_id: str) -> dict:
    return json.loads(_paths(tmp_path).session_file(session_id).read_text("utf-8"))


def _user_texts(record: dict) -> list[str]:
    return [
        block["text"]
        for message in record["recent_messages"]
        if message["role"] == "user"
        for block in message["content"]
        if block["type"] == "text"
    ]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "agent_spec.md").write_text("# Agent spec\n\nv1\n")
    return tmp_path / "ws"


def test_first_start_turn_save_exit_then_resume_yes_shows_drift_then_no_starts_new(
    tmp_path: Path, workspace: Path
) -> None:
    child = _spawn(tmp_path)
    first = _started(child)
    _turn(child, "look around")
    child.sendline("/save")
    child.expect(rf"Saved session {first}, checkpoint 1")
    child.expect("you>")
    _exit(child)
    record = _record(tmp_path, first)
    assert record["agent_spec_path"] == "agent_spec.md"
    assert "look around" in _user_texts(record)

    (workspace / "agent_spec.md").write_text("# Agent spec\n\nv2, changed outside the agent\n")
    child = _spawn(tmp_path)
    child.expect(r"Previous session found \(last active: \d{4}-\d\d-\d\d \d\d:\d\d UTC\)")
    child.expect(r"Resume previous session\? \[Y/n\]")
    child.sendline("y")
    assert _started(child, "Resumed") == first
    child.sendline("/resume")
    child.expect("# Resumed Session Context")
    child.expect(rf"This is a resumed session \(ID: {first}\)")
    child.expect("## File Changes Since Last Session")
    child.expect("- agent_spec.md: modified")
    child.expect("IMPORTANT: You are resuming a previous session.")
    child.expect("you>")
    _exit(child)

    child = _spawn(tmp_path)
    child.expect(r"Resume previous session\? \[Y/n\]")
    child.sendline("n")
    second = _started(child)
    assert second != first
    child.sendline("/resume")
    child.expect("No resume context")
    child.expect("you>")
    child.sendline("/exit")
    child.expect("Nothing to save: no message in this session.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert _paths(tmp_path).session_file(first).is_file()  # the old file is left
    assert not _paths(tmp_path).session_file(second).exists()  # an empty session is not kept

    child = _spawn(tmp_path)  # so the real session is still the one offered
    child.expect(r"Resume previous session\? \[Y/n\]")
    child.sendline("y")
    assert _started(child, "Resumed") == first
    child.sendline("what is here?")
    child.expect(r"turn 2 · \d+ requests? · ")  # the session's second turn, not the process's first
    child.expect(r"hit rate (\d+\.\d)%")
    assert float(child.match.group(1)) > 0  # a new emulator: the turn's 2nd request reads the 1st
    child.expect("you>")
    _exit(child)


def test_ctrl_c_mid_turn_saves_the_session_without_the_cut_turn(
    tmp_path: Path, workspace: Path
) -> None:
    go = tmp_path / "tools-may-run"
    go.touch()
    child = _spawn(tmp_path, env={HOLD_ENV: str(go)})
    session_id = _started(child)
    _turn(child, "first question")
    go.unlink()  # the next tool call waits: the turn is observably in flight
    child.sendline("second question")
    child.expect("↳ ")
    child.sendintr()
    child.expect("Interrupted; session saved.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130
    texts = _user_texts(_record(tmp_path, session_id))
    assert "first question" in texts
    assert "second question" not in texts


def test_kill_9_after_a_turn_keeps_that_turn_on_restart(tmp_path: Path, workspace: Path) -> None:
    child = _spawn(tmp_path)
    session_id = _started(child)
    _turn(child, "look around")
    child.kill(signal.SIGKILL)
    child.expect(pexpect.EOF)
    child.close()
    assert child.signalstatus == signal.SIGKILL

    child = _spawn(tmp_path)
    child.expect(r"Resume previous session\? \[Y/n\]")
    child.sendline("y")
    child.expect(rf"Resumed session {session_id} \((\d+) messages of history\)")
    assert int(child.match.group(1)) >= 2
    child.expect("you>")
    _exit(child)
    assert "look around" in _user_texts(_record(tmp_path, session_id))


def test_a_tampered_pointer_is_refused_and_the_agent_still_starts(
    tmp_path: Path, workspace: Path
) -> None:
    paths = _paths(tmp_path)
    paths.sessions.mkdir(parents=True, mode=0o700)
    gone = 2**22 + 4321  # above Linux's pid_max: never a running process
    paths.pointer_file(gone).write_text('{"session_id": "../../../etc/passwd"}\n')
    child = _spawn(tmp_path)
    child.expect("Ignored a saved session: .*refused session id")
    _started(child)
    _exit(child)


def test_ctrl_c_at_the_prompt_saves_and_leaves(tmp_path: Path, workspace: Path) -> None:
    child = _spawn(tmp_path)
    session_id = _started(child)
    _turn(child, "look around")
    child.sendintr()
    child.expect("Interrupted; session saved.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130
    assert "look around" in _user_texts(_record(tmp_path, session_id))
