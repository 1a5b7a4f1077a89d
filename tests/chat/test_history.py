"""The prompt history keeps no secrets (SPEC S6): scrubbed lines, a 0600 file in 0700 folders,
removed by ``/reset``, none with ``--no-history``; tool bytes that are not UTF-8 are scrubbed
in the session file and its checkpoints."""

from __future__ import annotations

import base64
import os
import stat
import sys
from pathlib import Path

import pytest

from llmcore.chat.history import PromptHistory
from llmcore.messages import Message, Text, ToolCall, ToolResult
from llmcore.session import Session, find_secrets

KEY = "sk-ant-api03-" + "Zq7_" * 10
AWS = "AKIAIOSFODNN7EXAMPLE"


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_key_typed_at_the_prompt_is_stored_redacted_in_a_0600_file(tmp_path: Path) -> None:
    path = tmp_path / "cfg" / "llmcore-chat" / "projects" / "ws_0000" / "history"
    history = PromptHistory(path)
    history.append_string(f"use {KEY} please")
    history.append_string("plain line")
    text = path.read_text()
    assert KEY not in text and "[REDACTED:anthropic-key]" in text and "+plain line" in text
    assert _mode(path) == 0o600
    for folder in (path.parent, path.parent.parent, path.parent.parent.parent, tmp_path / "cfg"):
        assert _mode(folder) == 0o700, folder
    assert history.get_strings() == ["use [REDACTED:anthropic-key] please", "plain line"]
    reloaded = PromptHistory(path)
    assert list(reloaded.load_history_strings()) == [
        "plain line", "use [REDACTED:anthropic-key] please",
    ]  # fmt: skip


def test_an_old_history_file_is_set_to_0600_and_rewritten_without_its_secrets(
    tmp_path: Path,
) -> None:
    path = tmp_path / "history"
    path.write_text(f"\n# 2026-01-01 10:00:00\n+export KEY={KEY}\n\n# 2026-01-01\n+ls\n")
    path.chmod(0o644)
    loaded = list(PromptHistory(path).load_history_strings())
    assert loaded == ["ls", "export KEY=[REDACTED:anthropic-key]"]
    assert KEY not in path.read_text() and _mode(path) == 0o600


def test_clear_removes_the_file_and_what_was_loaded(tmp_path: Path) -> None:
    history = PromptHistory(tmp_path / "history")
    history.append_string("one")
    history.clear()
    assert not (tmp_path / "history").exists() and history.get_strings() == []


def test_a_symlink_in_place_of_the_history_is_never_written_through(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("untouched\n")
    (tmp_path / "history").symlink_to(target)
    history = PromptHistory(tmp_path / "history")
    history.append_string("line")
    assert list(history.load_history_strings()) == []
    assert target.read_text() == "untouched\n"


def test_non_utf8_tool_bytes_with_a_key_never_reach_the_session_or_checkpoint(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    session = Session.start(workspace, app="agent", ask=lambda q: True, config=tmp_path / "cfg")
    secret_bytes = b"\xff\xfe" + AWS.encode() + b"\x80"
    session.conversation.end_turn(
        messages=(
            Message.user("read it"),
            Message(role="assistant", content=(
                ToolCall(id="c1", name="read_file", arguments=b"\xff{" + AWS.encode() + b"}"),
            )),
            Message(role="tool", content=(
                ToolResult(call_id="c1", tool_name="read_file", content=secret_bytes),
            )),
            Message(role="assistant", content=(Text(text="done"),)),
        ),
        provider="anthropic",
        model="m",
    )  # fmt: skip
    session.save(summarize=False)
    session.checkpoint()
    files = [p for p in (tmp_path / "cfg").rglob("*.json")]
    assert len(files) >= 3
    for path in files:
        data = path.read_bytes()
        decoded = [base64.b64decode(chunk) for chunk in _base64_values(data.decode())]
        assert AWS.encode() not in data and all(AWS.encode() not in d for d in decoded), path
        assert find_secrets(data.decode()) == []


def _base64_values(text: str) -> list[str]:
    import json

    found: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key.endswith("Base64") and isinstance(item, str):
                    found.append(item)
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(json.loads(text))
    return found


pexpect = pytest.importorskip("pexpect")


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")
def test_on_a_terminal_the_history_is_scrubbed_removed_by_reset_and_optional(
    tmp_path: Path,
) -> None:
    from tests.cli.test_chat_pty import _paths, _spawn, _started, _turn

    (tmp_path / "ws").mkdir()
    history = _paths(tmp_path).sessions.parent / "history"
    child = _spawn(tmp_path)
    _started(child)
    _turn(child, f"my key is {KEY}")
    assert KEY not in history.read_text() and "[REDACTED:anthropic-key]" in history.read_text()
    assert _mode(history) == 0o600 and _mode(history.parent) == 0o700
    assert _mode(history.parent.parent) == 0o700  # projects/, created by llmcore
    child.sendline("/reset")
    child.expect("New session")
    child.expect("you>")
    assert "my key is" not in (history.read_text() if history.exists() else "")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0

    history.unlink(missing_ok=True)
    child = _spawn(tmp_path, "--no-history", "--no-resume")
    _started(child)
    _turn(child, "nothing kept")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0 and not history.exists()
