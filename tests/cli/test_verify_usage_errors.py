"""Usage errors of every command (verify and the others) are one line on stderr, exit 2."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from llmcore.cli import app


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["body", "x.json"],
            "llmcore: body: Missing option '--provider' / '-p' (see 'llmcore body --help')",
        ),
        (
            ["import", "x.json"],
            "llmcore: import: Missing option '--provider' / '-p' (see 'llmcore import --help')",
        ),
        (["audit"], "llmcore: audit: Missing argument 'PATH' (see 'llmcore audit --help')"),
        (
            ["emulate", "--port", "abc"],
            "llmcore: emulate: Invalid value for '--port': Input should be a valid integer, "
            "unable to parse string as an integer (see 'llmcore emulate --help')",
        ),
        (["verify"], "llmcore: verify: Missing argument 'ARCHIVE' (see 'llmcore verify --help')"),
        (
            ["bench", "--live", "--model"],
            "llmcore: Option '--model' requires an argument.",  # click gives no context here
        ),
        (["nosuch"], "llmcore: No such command 'nosuch' (see 'llmcore --help')"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(args, line):
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr == line + "\n"


def test_unknown_option_is_one_line():
    result = CliRunner().invoke(app, ["verify", "a", "--nope"])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("llmcore: verify: No such option: --nope")


def test_help_is_still_shown_and_exits_0():
    result = CliRunner().invoke(app, ["verify", "--help"])
    assert result.exit_code == 0
    assert "ARCHIVE" in result.stdout.upper() and result.stderr == ""


def test_no_arguments_shows_the_help():
    result = CliRunner().invoke(app, [])
    assert result.exit_code == 2
    assert "verify" in result.stdout and "bench" in result.stdout


def test_a_command_error_is_still_one_line(tmp_path):
    result = CliRunner().invoke(app, ["verify", str(tmp_path / "none")])
    assert result.exit_code == 2
    assert result.stderr == f"llmcore: {tmp_path / 'none'}: no such folder\n"
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(app, ["verify", str(tmp_path / "empty")])
    assert result.exit_code == 2
    assert result.stderr == f"llmcore: {tmp_path / 'empty'}: no conversation.json in this folder\n"
