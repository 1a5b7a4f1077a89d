"""``--help`` names values with words (FILE, PROVIDER, N), never Python types (issue 11)."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from llmcore.cli import app

_COMMANDS = [name for name in typer.main.get_command(app).commands]  # type: ignore[attr-defined]
_TYPES = ("<str>", "<path>", "<int>", "<bool>", "<float>", "<list", "<Path>")


def test_every_command_is_checked() -> None:
    assert {"body", "import", "audit", "emulate", "verify", "compact", "bench", "chat"} <= set(
        _COMMANDS
    )


@pytest.mark.parametrize("command", [[], *([name] for name in _COMMANDS)])
def test_help_shows_no_python_type(command: list[str]) -> None:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output
    found = [t for t in _TYPES if t in result.output]
    assert not found, result.output


def test_words_name_the_values() -> None:
    body = CliRunner().invoke(app, ["body", "--help"], env={"COLUMNS": "200"}).output
    assert "FILE" in body
    assert "PROVIDER" in body
    emulate = CliRunner().invoke(app, ["emulate", "--help"], env={"COLUMNS": "200"}).output
    assert " N " in emulate
