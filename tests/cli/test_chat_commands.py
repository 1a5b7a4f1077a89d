"""``llmcore chat`` slash commands with piped input (no terminal: plain ``input()``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from llmcore.cli.chat import APP
from llmcore.session import ProjectPaths


def _chat(tmp_path: Path, lines: list[str], *extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    args = [sys.executable, "-m", "llmcore", "chat", "--config-dir", str(tmp_path / "cfg")]
    args += ["--workspace", str(tmp_path / "ws"), *extra]
    return subprocess.run(
        args, input="\n".join(lines) + "\n", capture_output=True, text=True, env=env, timeout=120
    )


def test_compact_save_checkpoint_restore_reset_help(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "agent_spec.md").write_text("spec\n")
    lines = ["one", "two", "three", "/compact", "/save", "/checkpoint", "/checkpoint 1"]
    lines += ["/checkpoint x", "/help", "/bogus", "/reset", "y", "/resume", "/exit"]
    done = _chat(tmp_path, lines)
    assert done.returncode == 0, done.stderr
    out = " ".join(done.stdout.split())
    assert "turn 3 · " in out and "hit rate" in out
    assert "Compacted: " in out
    assert "checkpoint 1 (summary call: $" in out
    assert "#1 " in out and "Restored checkpoint 1" in out
    assert "usage: /checkpoint [n]" in out
    assert "/checkpoint [n] list the checkpoints" in out
    assert "unknown command /bogus" in out
    assert "Deleted: agent_spec.md." in out
    assert "No resume context" in out
    assert "saved." not in out.rsplit("No resume context", 1)[1]  # just reset: no auto-save
    assert not (tmp_path / "ws" / "agent_spec.md").exists()
    paths = ProjectPaths.for_workspace(tmp_path / "ws", app=APP, config=tmp_path / "cfg")
    assert not list(paths.sessions.glob("*.json"))


def test_no_resume_answers_without_asking(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    assert _chat(tmp_path, ["hello", "/exit"]).returncode == 0
    done = _chat(tmp_path, ["/exit"], "--no-resume")
    assert "Previous session found" in done.stdout
    assert "Resume previous session?" not in done.stdout
    assert "New session" in done.stdout


def test_bad_options_are_one_line_exit_2(tmp_path: Path) -> None:
    done = _chat(tmp_path, [], "--provider", "nope")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "unknown provider 'nope'" in done.stderr
    (tmp_path / "ws").mkdir()
    done = _chat(tmp_path, [], "--live", "--provider", "openai-chat")
    assert done.returncode == 2
    assert done.stderr == "llmcore: --live: no API key for openai-chat: set OPENAI_API_KEY\n"


def test_piped_input_is_not_taken_as_the_resume_answer(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "README.md").write_text("# hello\n")
    first = _chat(tmp_path, ["hello", "/exit"], "--no-history")
    assert first.returncode == 0, first.stderr
    done = _chat(tmp_path, ["read README.md", "/exit"], "--no-history")
    assert done.returncode == 0, done.stderr
    out = " ".join(done.stdout.split())
    assert "Previous session found" in out and "Resume previous session?" not in out
    assert out.count("Input is not a terminal: resuming it (--no-resume starts a new one).") == 1
    assert "Resumed session " in out and "(4 messages of history)" in out
    assert "↳ read_file README.md" in out and "You said: «read README.md»." in out
    assert "turn 2 · " in out  # the piped line was the second turn, not the answer
    again = _chat(tmp_path, ["/exit"], "--no-history", "--no-resume")
    assert "New session" in again.stdout and "not a terminal" not in again.stdout


def test_a_config_dir_that_is_not_a_folder_is_one_line_exit_2(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "file").write_text("x\n")
    for given in (tmp_path / "file", tmp_path / "file" / "under"):
        for extra in ((), ("--list",)):
            args = [sys.executable, "-m", "llmcore", "chat", "--config-dir", str(given)]
            args += ["--workspace", str(tmp_path / "ws"), *extra]
            done = subprocess.run(
                args, input="hello\n/exit\n", capture_output=True, text=True, timeout=120
            )
            assert done.returncode == 2, (given, extra, done.stdout)
            assert done.stderr == f"llmcore: --config-dir: {given}: not a folder\n"
            assert "you>" not in done.stdout and "Session" not in done.stdout
    assert (tmp_path / "file").read_text() == "x\n"
