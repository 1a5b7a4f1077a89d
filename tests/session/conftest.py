"""Session test fixtures: a workspace, a config folder, an injected clock and ids, a fake key.

Every test that uses ``config`` has every file it wrote there scanned for secrets afterwards
(:func:`llmcore.session.find_secrets` and the fake environment key): zero hits allowed. The
count of files scanned is printed in the terminal summary of a run without xdist.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from llmcore.session import find_secrets

FAKE_KEY = "sk-ant-api03-FAKEKEYfakekeyFAKEKEY0123456789abcdef"
SCANNED: list[Path] = []


class Clock:
    """UTC time that moves one minute per call (never the wall clock)."""

    def __init__(self, start: datetime = datetime(2026, 3, 30, 10, 15, tzinfo=UTC)) -> None:
        self.now = start

    def __call__(self) -> datetime:
        current = self.now
        self.now += timedelta(minutes=1)
        return current


class Ids:
    """Deterministic hex tokens for new session ids."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, size: int) -> str:
        self.count += 1
        return f"{self.count:0{size * 2}x}"[-size * 2 :].replace("0", "a", 1)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "my project"
    folder.mkdir()
    return folder


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    folder = tmp_path / "config"
    yield folder
    files = [p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()]
    for path in files:
        text = path.read_bytes().decode("utf-8", "replace")
        assert find_secrets(text) == [], path
        assert FAKE_KEY not in text, path
    SCANNED.extend(files)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def ids() -> Ids:
    return Ids()


def pytest_terminal_summary(terminalreporter) -> None:
    if SCANNED:
        terminalreporter.write_line(
            f"session secret scan: {len(SCANNED)} files written by the tests scanned, 0 hits"
        )
