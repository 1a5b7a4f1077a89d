"""A turn shown is a turn saved (SPEC S2): the status line appears only once the turn is on disk,
a failed save is one line and the chat goes on, and killed saves leave no temporary file behind
after the next start."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from llmcore.errors import SessionWriteError
from llmcore.session import Session
from tests.chat import reliability
from tests.chat.reliability import Place, _chat, _fresh, _lines, _user_texts


class _Screen(io.StringIO):
    """A terminal that, when a status line is written, reads what the session file holds."""

    def __init__(self, place: Place) -> None:
        super().__init__()
        self.place = place
        self.on_disk_when_shown: list[list[str] | None] = []

    def write(self, text: str) -> int:
        if "turn 1 ·" in text or "turn 2 ·" in text:
            self.on_disk_when_shown.append(_user_texts(self.place))
        return super().write(text)

    def isatty(self) -> bool:
        return True


def test_the_status_line_appears_only_after_the_turn_is_on_disk(tmp_path: Path) -> None:
    place = _fresh(tmp_path / "case")
    screen = _Screen(place)
    assert _chat(place, screen, _lines("first question", "second question")) == 0
    assert len(screen.on_disk_when_shown) == 2
    first, second = screen.on_disk_when_shown
    assert first is not None and "first question" in first
    assert second is not None and "second question" in second


def test_a_failed_save_is_one_line_and_the_chat_goes_on(tmp_path: Path) -> None:
    place = _fresh(tmp_path / "case")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    place.paths.sessions.parent.mkdir(parents=True)
    place.paths.sessions.symlink_to(elsewhere)
    screen = io.StringIO()
    with pytest.raises(SessionWriteError, match="refused: the folder is a symlink"):
        _chat(place, screen, _lines("first question", "second question"))  # the exit save: exit 2
    out = screen.getvalue()
    assert "turn 1 ·" in out and "turn 2 ·" in out  # both turns ran
    assert out.count("The session could not be saved:") == 2
    assert "Ignored the saved sessions:" in out and "Traceback" not in out
    assert list(elsewhere.iterdir()) == []


def test_the_next_start_removes_the_temporary_files_of_killed_saves(tmp_path: Path) -> None:
    place = _fresh(tmp_path / "case")
    with open(os.devnull, "w") as out:
        assert _chat(place, out, _lines("first question")) == 0
    sessions = place.paths.sessions
    session_file = next(p for p in sessions.glob("*.json") if not p.name.startswith("active_"))
    checkpoints = sessions / session_file.name.replace(".json", ".checkpoints")
    checkpoints.mkdir(mode=0o700)
    gone, running = reliability.GONE, os.getpid()
    dead = [
        sessions / f".{session_file.name}.{gone}.0123abcd.tmp",
        sessions / f".active_{gone}.json.{gone}.89abcdef.tmp",
        checkpoints / f".1.json.{gone}.00000000.tmp",
    ]
    live = sessions / f".{session_file.name}.{running}.fedcba98.tmp"
    for path in [*dead, live]:
        path.write_bytes(b'{"half": ')
    said: list[str] = []
    Session.start(
        place.workspace, app="llmcore-chat", ask=lambda q: True, say=said.append,
        config=place.config, pid=running + 1, alive=lambda pid: pid == running,
    )  # fmt: skip
    assert [p.exists() for p in dead] == [False, False, False]
    assert live.exists()  # a running terminal's save in progress is left alone
    assert json.loads(session_file.read_bytes())["session_id"] in session_file.name
