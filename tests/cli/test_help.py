"""``--help`` pages in typer's panels, drawn without ``typer.rich_utils`` (issue 12).

:mod:`llmcore.cli._help` draws the root help and every command's help. The pages are compared
with typer's own renderer (the same page at 200 columns; the same words in the same order at
80 and 60, where only the line breaks inside a help cell may differ), and read back panel by
panel: every option's names, metavar, help, default and required marker.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st
from typer import rich_utils
from typer.testing import CliRunner

from llmcore.cli import _help, app
from llmcore.cli._app import COMMANDS, _Command, load_commands

_PAGES = [[], *([name] for name in COMMANDS)]
_BOX = re.compile(r"[│╭╮╰╯─]")


def _help_page(args: list[str], columns: int = 200, **env: str) -> str:
    result = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": str(columns), **env})
    assert result.exit_code == 0, result.output
    return result.output


def _typers_page(monkeypatch: pytest.MonkeyPatch, args: list[str], columns: int) -> str:
    """The page typer's own renderer draws for the same command."""
    with monkeypatch.context() as patch:
        patch.setattr(
            _help,
            "print_help",
            lambda command, ctx: rich_utils.rich_format_help(
                obj=command, ctx=ctx, markup_mode="rich"
            ),
        )
        return _help_page(args, columns)


def _rows(page: str, title: str) -> list[tuple[str, ...]]:
    """The rows of the panel ``title``, each split into its cells (2+ spaces apart)."""
    panel = page.split(f"╭─ {title} ─")[1].split("╰")[0]
    rows = [line.strip("│ ") for line in panel.splitlines()[1:] if line.startswith("│")]
    return [tuple(re.split(r" {2,}", row)) for row in rows]


@pytest.mark.parametrize("args", _PAGES, ids=lambda args: " ".join(args) or "llmcore")
def test_every_page_is_typers_own_page(monkeypatch, args) -> None:
    assert _help_page(args) == _typers_page(monkeypatch, args, 200)
    for columns in (80, 60):
        ours, typers = _help_page(args, columns), _typers_page(monkeypatch, args, columns)
        assert _BOX.sub(" ", ours).split() == _BOX.sub(" ", typers).split(), columns


def test_the_root_page_has_the_usage_the_help_and_the_options() -> None:
    page = _help_page([])
    assert page.splitlines()[1].strip() == "Usage: llmcore [OPTIONS] COMMAND [ARGS]..."
    assert (
        page.splitlines()[3].strip()
        == "Provider-agnostic LLM request bodies with byte-stable prompt-cache verification."
    )
    assert _rows(page, "Options") == [
        ("--version", "Print 'llmcore <version>' and exit."),
        ("--help", "Show this message and exit."),
    ]
    assert [name for name, _ in _rows(page, "Commands")] == list(COMMANDS)


def test_the_body_page_marks_the_required_argument_and_option() -> None:
    page = _help_page(["body"])
    assert page.splitlines()[1].strip() == "Usage: llmcore body [OPTIONS] {FILE}"
    assert _rows(page, "Arguments") == [
        ("*", "FILE", "A request file (docs/guides/bodies.md); - for stdin. [required]")
    ]
    assert _rows(page, "Options") == [
        (
            "*",
            "--provider",
            "-p",
            "PROVIDER",
            "One of: anthropic, openai-chat, openai-responses, openrouter, gemini, bedrock-converse."
            " [required]",
        ),
        ("--help", "Show this message and exit."),
    ]


def test_the_chat_page_shows_the_defaults_and_the_negative_flag() -> None:
    page = _help_page(["chat"])
    assert "─ Arguments ─" not in page
    assert _rows(page, "Options") == [
        ("--workspace", "-w", "DIR", "The project folder (default: here). [default: .]"),
        ("--config-dir", "DIR", "Sessions under this folder instead of the user's."),
        ("--live", "Use the real API of --provider."),
        (
            "--provider",
            "-p",
            "PROVIDER",
            "One of: anthropic, openai-chat, openai-responses, openrouter, gemini, bedrock-converse."
            " [default: anthropic]",
        ),
        ("--model", "-m", "MODEL", "The model."),
        ("--base-url", "URL", "A compatible endpoint, e.g. the emulator's."),
        ("--endpoint", "CLOUD", "The provider's API on a cloud: vertex, bedrock or azure."),
        ("--resume", "--no-resume", "Answer the resume question without asking."),
        (
            "--history",
            "--no-history",
            "Keep the prompt history (scrubbed, 0600) in the project folder.",
        ),
        ("--session", "ID", "Resume this saved session (ids: --list)."),
        ("--list", "List the saved sessions of the workspace and exit."),
        ("--help", "Show this message and exit."),
    ]


def test_the_emulate_page_shows_a_number_default_and_a_flag_default() -> None:
    assert _rows(_help_page(["emulate"]), "Options") == [
        ("--port", "N", "TCP port on 127.0.0.1; 0 picks a free one. [default: 0]"),
        ("--script", "FILE", "Reply script (JSON); default: the built-in agent."),
        (
            "--access-log",
            "--no-access-log",
            "Print one line per request on stderr (client, status, ms, id)."
            " [default: no-access-log]",
        ),
        ("--record", "FILE", "Append each request as a JSONL line llmcore audit reads."),
        ("--help", "Show this message and exit."),
    ]


def test_every_parameter_of_every_command_is_listed_with_its_help() -> None:
    loaded: dict[str, Any] = {}
    for module in dict.fromkeys(module for module, _ in COMMANDS.values()):
        loaded.update(load_commands(module))
    for name, command in loaded.items():
        page = _help_page([name])
        rows = {
            row[1 if row[0] == "*" else 0]: row
            for title in ("Arguments", "Options")
            if f"─ {title} ─" in page
            for row in _rows(page, title)
        }
        for param in command.params:
            first = param.metavar if param.param_type_name == "argument" else param.opts[0]
            row = rows[first]
            assert (row[0] == "*") is param.required, (name, first)
            assert row[-1].startswith(param.help), (name, first)
            assert set(param.opts[1:] + param.secondary_opts) <= set(row), (name, first)


def _markup_app() -> typer.Typer:
    markup = typer.Typer(add_completion=False)

    @markup.command(cls=_Command)
    def run(
        level: Annotated[
            int, typer.Option(help="Use ``--level`` [italic]with care[/italic]; see [0, 9].")
        ] = 3,
    ) -> None:
        """Print [bold]bold[/bold] words and `code` spans.

        More [dim]detail[/dim]
        here; :smile: stays text.

        \b
        kept
        lines

        \f
        Not shown: after a form feed.
        """

    @markup.command(cls=_Command)
    def other() -> None:
        """Another command."""

    return markup


def test_markup_backquotes_and_clicks_conventions_are_drawn_not_printed() -> None:
    result = CliRunner().invoke(_markup_app(), ["run", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    lines = [line.strip() for line in result.output.splitlines()]
    assert "Print bold words and code spans." in lines
    assert "More detail here; :smile: stays text." in lines
    assert lines[lines.index("kept") + 1] == "lines"  # a \b paragraph keeps its line breaks
    assert _rows(result.output, "Options")[0] == (
        "--level",
        "<int>",
        "Use --level with care; see [0, 9]. [default: 3]",
    )
    assert "Not shown" not in result.output
    assert not {"[bold]", "[/", "`", "[italic]", "\x1b"} & set(
        re.findall(r"\[/?\w+\]|`|\x1b", result.output)
    )


def test_colours_come_only_with_a_terminal_and_style_the_markup() -> None:
    plain = CliRunner().invoke(_markup_app(), ["run", "--help"], env={"COLUMNS": "200"})
    assert "\x1b" not in plain.output  # the runner's output is not a terminal
    forced = CliRunner().invoke(
        _markup_app(), ["run", "--help"], env={"COLUMNS": "200", "FORCE_COLOR": "1"}
    )
    assert "\x1b[1mbold\x1b[0m" in forced.output
    assert "\x1b[1mcode\x1b[0m" in forced.output
    # the option's name in typer's bold cyan (its "-level" also matches the switch pattern)
    assert re.search(r"\x1b\[1;36m-(\x1b\[0m\x1b\[1;36m)?-level\x1b\[0m", forced.output)


def test_without_typers_rich_help_the_page_is_clicks_plain_one(monkeypatch) -> None:
    monkeypatch.setattr(typer.core, "HAS_RICH", False)
    for args in ([], ["body"]):
        page = _help_page(args)
        assert "╭" not in page
        assert "Options:" in page
    assert "  -p, --provider PROVIDER" in _help_page(["body"])


def test_no_arguments_show_the_root_page() -> None:
    result = CliRunner().invoke(app, [], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert [name for name, _ in _rows(result.output, "Commands")] == list(COMMANDS)


@settings(max_examples=40, deadline=None)
@given(columns=st.integers(min_value=30, max_value=160), args=st.sampled_from(_PAGES))
def test_every_line_fits_the_terminal_and_the_boxes_fill_it(columns, args) -> None:
    lines = _help_page(args, columns).splitlines()
    assert max(len(line) for line in lines) <= columns
    boxes = [line for line in lines if line[:1] and line[0] in "╭│╰"]
    assert boxes
    assert {len(line) for line in boxes} == {columns}


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_a_terminal_without_utf8_gets_question_marks_not_a_traceback(encoding) -> None:
    # the root help holds an en dash (C1–C3); a subprocess, since the stream's encoding is the
    # interpreter's
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONIOENCODING": encoding, "COLUMNS": "100"}
    env.pop("FORCE_COLOR", None)
    run = subprocess.run(
        [sys.executable, "-c", "from llmcore.cli import main; main()", "--help"],
        capture_output=True,
        env=env,
        check=False,
    )
    assert (run.returncode, run.stderr) == (0, b"")
    page = run.stdout.decode(encoding)
    assert "(C1?C3)" in page and "Commands" in page


def test_a_stream_that_already_replaces_or_speaks_utf8_is_left_alone() -> None:
    import io

    for encoding, errors in [("utf-8", "strict"), ("ascii", "backslashreplace")]:
        stream = io.TextIOWrapper(io.BytesIO(), encoding=encoding, errors=errors)
        _help._replace_unencodable(stream)
        assert stream.errors == errors
    stream = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    _help._replace_unencodable(stream)
    assert stream.errors == "replace"


def _help_run(stdout: Any, *args: str) -> Any:
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "PYTHONIOENCODING")}
    return subprocess.run(
        [sys.executable, "-c", "from llmcore.cli import main; main()", *args, "--help"],
        stdout=stdout,
        stderr=subprocess.PIPE,
        env=env,
        check=False,
    )


UNWRITABLE = b"llmcore: cannot write to stdout (Bad file descriptor)\n"
"""What a write to a read-only stdout says (a full disk says ``No space left on device``)."""


@pytest.mark.parametrize("args", [(), ("body",)])
def test_a_help_page_on_an_unwritable_stdout_is_one_line_on_stderr(args, tmp_path) -> None:
    # A file opened for reading: every write to it fails (EBADF), as a full disk's do (ENOSPC).
    (tmp_path / "out").write_bytes(b"")
    with open(tmp_path / "out", "rb") as read_only:
        run = _help_run(read_only, *args)
    assert run.returncode == 2
    assert run.stderr == UNWRITABLE


def test_a_help_page_into_a_closed_pipe_ends_quietly() -> None:
    import os

    read, write = os.pipe()
    os.close(read)  # every write fails with EPIPE
    try:
        run = _help_run(write)
    finally:
        os.close(write)
    assert (run.returncode, run.stderr) == (1, b"")


@pytest.mark.parametrize("value", ["²", "٣٠", "abc", "-1", " 80", ""])
@pytest.mark.parametrize("name", ["COLUMNS", "LINES", "TERMINAL_WIDTH"])
def test_a_size_that_is_not_ascii_digits_is_ignored(name, value) -> None:
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "", name: value})
    assert result.exit_code == 0 and result.exception is None
    assert _rows(result.output, "Commands")


@pytest.mark.parametrize(
    ("value", "width"),
    [("0000070", 70), ("1000", 1000), ("5000", 4096), ("1" + "0" * 30, 4096), ("9" * 5000, 4096)],
)
@pytest.mark.parametrize("name", ["COLUMNS", "TERMINAL_WIDTH"])
def test_a_page_is_as_wide_as_the_environment_says_up_to_4096_columns(name, value, width) -> None:
    result = CliRunner().invoke(app, ["body", "--help"], env={"COLUMNS": "", name: value})
    assert result.exit_code == 0 and result.exception is None
    assert max(len(line) for line in result.output.splitlines()) == width


def _version_run(stdout: Any) -> Any:
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-c", "from llmcore.cli import main; main()", "--version"],
        stdout=stdout,
        stderr=subprocess.PIPE,
        check=False,
    )


def test_the_version_on_an_unwritable_stdout_is_one_line_on_stderr(tmp_path) -> None:
    (tmp_path / "out").write_bytes(b"")
    with open(tmp_path / "out", "rb") as read_only:
        run = _version_run(read_only)
    assert (run.returncode, run.stderr) == (2, UNWRITABLE)


def test_the_version_into_a_closed_pipe_ends_quietly() -> None:
    import os

    read, write = os.pipe()
    os.close(read)
    try:
        run = _version_run(write)
    finally:
        os.close(write)
    assert (run.returncode, run.stderr) == (1, b"")
