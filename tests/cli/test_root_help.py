"""The root help drawn without typer is typer's page, byte for byte (issue 24).

:func:`llmcore.cli._root_help.fast_help` answers ``llmcore --help`` and bare ``llmcore`` with
:mod:`llmcore.cli._layout`. Its page is compared with the one typer draws (with the rich
installed here) at every width from 1 to 260 and at wider ones up to the 4096 cap, without
colours, with colours and with ``NO_COLOR``; its reading of the console (width, colours) is
compared with rich's own for any mix of the variables rich and typer read; on a real terminal
(a pty) both pages are the same bytes.
"""

from __future__ import annotations

import errno
import io
import os
import sys
import types
from typing import Any

import pexpect
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from llmcore.cli import _help, _root_help, app
from llmcore.cli._root_help import COMMANDS, HELP_HELP, ROOT_HELP, VERSION_HELP, fast_help
from tests.examples import FULL_ENV, examples

_CONSOLE_VARIABLES = (
    "COLUMNS",
    "LINES",
    "TERMINAL_WIDTH",
    "FORCE_COLOR",
    "PY_COLORS",
    "GITHUB_ACTIONS",
    "NO_COLOR",
    "TERM",
    "COLORTERM",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
    "_TYPER_FORCE_DISABLE_TERMINAL",
    "TYPER_USE_RICH",
    "_LLMCORE_COMPLETE",
)
"""Every variable that changes how typer or rich draws the page."""
MODES = {
    "plain": {},
    "colour": {"FORCE_COLOR": "1"},
    "no colour": {"FORCE_COLOR": "1", "NO_COLOR": "1"},
}
"""The three kinds of page: text alone, styles and colours, styles without colours."""
WIDTHS = [*range(1, 261), 300, 333, 500, 1000, 2048, 4095, 4096]
"""Every width the full count compares (``LLMCORE_FULL_EXAMPLES``, ``bench_properties.py``)."""
SAMPLE_WIDTHS = [*range(1, 121), *range(121, 261, 7), 260, 300, 333, 500, 1000, 2048, 4095, 4096]
"""The widths the suite compares: every one to 120 (where the panels wrap), then a sample."""


def _environment(**values: str) -> dict[str, str | None]:
    """The console variables: ``values`` set, every other one unset."""
    return {**dict.fromkeys(_CONSOLE_VARIABLES), **values}


@pytest.fixture
def as_llmcore(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """Run as the ``llmcore`` console script runs (click names the program after it)."""
    monkeypatch.setattr(sys, "argv", ["/usr/local/bin/llmcore"])
    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))
    return monkeypatch


def _fast(
    monkeypatch: pytest.MonkeyPatch, args: list[str], env: dict[str, str | None]
) -> tuple[int | None, str]:
    stream = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with monkeypatch.context() as patch:
        for name, value in env.items():
            if value is None:
                patch.delenv(name, raising=False)
            else:
                patch.setenv(name, value)
        code = fast_help(args, stream)
    stream.seek(0)
    return code, stream.read()


def _typers(args: list[str], env: dict[str, str | None]) -> tuple[int, str]:
    result = CliRunner().invoke(app, args, env=env)
    return result.exit_code, result.stdout


@pytest.mark.full_count
@pytest.mark.parametrize("mode", MODES)
def test_the_page_is_typers_at_every_width(as_llmcore, mode) -> None:
    different = []
    for width in WIDTHS if os.environ.get(FULL_ENV) else SAMPLE_WIDTHS:
        env = _environment(COLUMNS=str(width), **MODES[mode])
        expected = _typers(["--help"], env)
        if _fast(as_llmcore, ["--help"], env) != expected:
            different.append(width)
    assert different == []
    assert expected[0] == 0 and expected[1].endswith("\n\n")  # the page, then click's newline


@pytest.mark.full_count
@settings(max_examples=examples(600, 30))
@given(width=st.integers(261, 4096), mode=st.sampled_from(sorted(MODES)))
def test_the_page_is_typers_at_any_wider_width(width, mode) -> None:
    env = _environment(COLUMNS=str(width), **MODES[mode])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "argv", ["/usr/local/bin/llmcore"])
        patch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))
        assert _fast(patch, ["--help"], env) == _typers(["--help"], env)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("width", [20, 80, 137])
def test_bare_llmcore_is_the_page_alone_exit_2(as_llmcore, mode, width) -> None:
    env = _environment(COLUMNS=str(width), **MODES[mode])
    expected = _typers([], env)
    assert expected[0] == 2 and not expected[1].endswith("\n\n")
    assert _fast(as_llmcore, [], env) == expected


def test_the_colours_are_rich_escape_codes(as_llmcore) -> None:
    _, page = _fast(as_llmcore, ["--help"], _environment(COLUMNS="80", FORCE_COLOR="1"))
    assert "\x1b[1;33mUsage: \x1b[0m\x1b[1mllmcore [OPTIONS] COMMAND [ARGS]...\x1b[0m" in page
    assert "\x1b[1;36mbody   \x1b[0m\x1b[1;36m \x1b[0m Write exactly" in page
    _, mono = _fast(as_llmcore, ["--help"], _environment(FORCE_COLOR="1", NO_COLOR="1"))
    assert "\x1b[1mUsage: \x1b[0m" in mono and "\x1b[3" not in mono  # bold stays, colours go


def test_the_static_texts_are_one_plain_line_each() -> None:
    # what _layout draws: no markup, code spans, line breaks or escape codes to interpret
    texts = [ROOT_HELP, VERSION_HELP, HELP_HELP, *COMMANDS, *(s for _, s in COMMANDS.values())]
    assert [text for text in texts if set(text) & set("[`\n\t\x1b\f\b")] == []
    assert app.info.help == ROOT_HELP


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["--help", "body"], {}),
        (["-h"], {}),
        (["--help"], {"TYPER_USE_RICH": "1"}),
        (["--help"], {"_LLMCORE_COMPLETE": "bash_source"}),
    ],
)
def test_anything_else_is_left_to_typer(as_llmcore, args, env) -> None:
    assert _fast(as_llmcore, args, _environment(**env)) == (None, "")


def test_a_program_name_click_would_print_otherwise_is_left_to_typer(monkeypatch) -> None:
    main = types.ModuleType("__main__")
    main.__package__ = "llmcore"
    monkeypatch.setitem(sys.modules, "__main__", main)
    monkeypatch.setattr(sys, "argv", ["/src/llmcore/__main__.py", "--help"])
    assert _root_help.program_name() == "python -m llmcore"
    assert _fast(monkeypatch, ["--help"], _environment()) == (None, "")


def test_a_stream_that_is_not_utf8_is_left_to_typer(as_llmcore) -> None:
    stream = io.TextIOWrapper(io.BytesIO(), encoding="latin-1")
    assert fast_help(["--help"], stream) is None


class _Failing(io.StringIO):
    encoding = "utf-8"

    def __init__(self, error: int) -> None:
        super().__init__()
        self.error = error

    def write(self, text: str) -> int:
        raise OSError(self.error, os.strerror(self.error))


@pytest.mark.parametrize(("error", "code", "line"), [(errno.EPIPE, 1, ""), (errno.ENOSPC, 2, "x")])
def test_an_output_that_cannot_be_written(as_llmcore, capsys, error, code, line) -> None:
    for name in _CONSOLE_VARIABLES:
        as_llmcore.delenv(name, raising=False)
    stream = _Failing(error)
    assert fast_help(["--help"], stream) == code
    expected = f"llmcore: cannot write to stdout ({os.strerror(error)})\n" if line else ""
    assert capsys.readouterr().err == expected


# ------------------------------------------------ the console as rich reads it


class _Stream(io.StringIO):
    """A UTF-8 output that is, or is not, a terminal."""

    encoding = "utf-8"

    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


_VALUES = {
    "COLUMNS": ["", "0", "1", "19", "80", "0120", "4096", "99999", "abc", "-5", "²"],
    "LINES": ["", "0", "25", "x"],
    "TERMINAL_WIDTH": ["", "0", "33", "5000", "wide"],
    "FORCE_COLOR": ["", "0", "1"],
    "PY_COLORS": ["", "1"],
    "GITHUB_ACTIONS": ["", "true"],
    "NO_COLOR": ["", "1"],
    "TERM": ["", "dumb", "DUMB", "unknown", "xterm-256color", "xterm"],
    "COLORTERM": ["", "truecolor"],
    "TTY_COMPATIBLE": ["", "0", "1", "2"],
    "TTY_INTERACTIVE": ["0", "1"],
    "_TYPER_FORCE_DISABLE_TERMINAL": ["", "1"],
}


@st.composite
def _consoles(draw: Any) -> tuple[dict[str, str], bool, int | None]:
    names = draw(st.sets(st.sampled_from(sorted(_VALUES))))
    env = {name: draw(st.sampled_from(_VALUES[name])) for name in sorted(names)}
    return env, draw(st.booleans()), draw(st.sampled_from([None, 0, 50, 132]))


@pytest.mark.full_count
@settings(max_examples=examples(4000, 400))
@given(console=_consoles())
def test_the_width_and_colours_are_richs(console) -> None:
    env, tty, columns = console

    def terminal_size(descriptor: int = 1) -> os.terminal_size:
        if columns is None:
            raise OSError(errno.ENOTTY, "not a terminal")
        return os.terminal_size((columns, 24))

    stream = _Stream(tty)
    with pytest.MonkeyPatch.context() as patch:
        for name in _VALUES:
            patch.delenv(name, raising=False)
        for name, value in env.items():
            patch.setenv(name, value)
        patch.setattr(os, "get_terminal_size", terminal_size)
        patch.setattr(sys, "stdout", stream)
        rich = _help._console()
        expected = (rich.width, rich.color_system is not None, rich.no_color)
        got = _root_help.console_mode(os.environ, stream)
    if not 1 <= expected[0] <= 4096:
        assert got is None
        return
    assert got is not None
    width, sgr = got
    assert (width, sgr is not _root_help._plain, sgr is _root_help._no_colour) == (
        expected[0],
        expected[1],
        expected[1] and expected[2],
    )


# ------------------------------------------------ on a real terminal

_ON_A_TERMINAL = """
import sys
args, draw, record = sys.argv[1].split(), sys.argv[2], sys.argv[3]
sys.argv = ["llmcore", *args]
import llmcore.cli._root_help as root_help
if draw == "typer":
    root_help.fast_help = lambda *args, **kwargs: None
from llmcore.cli import main
try:
    main()
finally:
    with open(record, "w") as file:
        file.write(" ".join(sorted({"rich", "typer"} & set(sys.modules))))
"""


def _on_a_terminal(tmp_path, args: str, draw: str, env: dict[str, str]) -> tuple[bytes, str]:
    record = tmp_path / f"{draw}.txt"
    full = {k: v for k, v in os.environ.items() if k not in _CONSOLE_VARIABLES}
    child = pexpect.spawn(
        sys.executable,
        ["-c", _ON_A_TERMINAL, args, draw, str(record)],
        env={**full, **env},
        timeout=60,
        dimensions=(40, 97),
    )
    output = child.read()
    child.close()
    return output, record.read_text()


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")
@pytest.mark.parametrize(
    "env",
    [{"TERM": "xterm-256color"}, {"TERM": "xterm", "NO_COLOR": "1"}, {"TERM": "dumb"}],
    ids=["colour", "no colour", "dumb"],
)
@pytest.mark.parametrize("args", ["--help", ""])
def test_on_a_terminal_the_page_is_typers(tmp_path, env, args) -> None:
    fast, fast_modules = _on_a_terminal(tmp_path, args, "fast", env)
    typer, typer_modules = _on_a_terminal(tmp_path, args, "typer", env)
    assert (fast_modules, typer_modules) == ("", "rich typer")
    assert fast == typer
    lines = fast.split(b"\r\n")
    width = 80 if env["TERM"] == "dumb" else 97  # the terminal's own, or rich's 80 for a dumb one
    assert max(len(line.decode()) for line in lines if b"\x1b" not in line) == width
    assert (b"\x1b[1;36m" in fast, b"\x1b[1m" in fast) == (
        "NO_COLOR" not in env and env["TERM"] != "dumb",
        env["TERM"] != "dumb",
    )
