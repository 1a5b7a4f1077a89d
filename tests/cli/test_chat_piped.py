"""``llmcore chat`` with piped input: the transcript reads as a terminal's would.

Each line read is written after its prompt (``you> hi``), the next output starts on its own
line, nothing is wrapped at 80 columns, and the end of the input leaves no bare prompt.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from llmcore.cli.chat import _plain_line


def _chat(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["COLUMNS"] = "80"
    args = [sys.executable, "-m", "llmcore", "chat", "--config-dir", str(tmp_path / "cfg")]
    args += ["--workspace", str(tmp_path / "ws"), "--no-history"]
    return subprocess.run(args, input=text, capture_output=True, text=True, env=env, timeout=120)


def test_the_piped_transcript_has_each_line_after_its_prompt(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "notes.txt").write_text("hello world\n")
    done = _chat(tmp_path, "hi\nread notes.txt\n")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("New session ") and lines[0].endswith(" · /help")
    assert lines[1] == "you> hi"
    assert lines[2] == "  ↳ list_files"
    turn = [n for n, line in enumerate(lines) if line.startswith("turn ")]
    assert len(turn) == 2
    assert all(" · hit rate " in lines[n] and lines[n].endswith(tuple("0123456789")) for n in turn)
    assert lines[turn[0] + 1] == "you> read notes.txt"
    assert lines[turn[0] + 2] == "  ↳ read_file notes.txt"
    assert lines[-1].startswith("Session ") and lines[-1].endswith(" saved.")
    assert lines[-2] == lines[turn[1]]  # no bare "you> " left by the end of the input
    assert not any(line.startswith("you>") and line.strip() == "you>" for line in lines)


def test_a_last_line_without_a_newline_is_read(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("one\ntwo"))
    assert _plain_line("you> ") == "one"
    assert _plain_line("you> ") == "two"
    with pytest.raises(EOFError):
        _plain_line("you> ")
    assert capsys.readouterr().out == "you> one\nyou> two\n"
