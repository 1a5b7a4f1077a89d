"""``llmcore --help`` (and bare ``llmcore``) answered without typer, click or rich (issue 24).

The root help page is static: the usage line, the application's help, the ``--version`` and
``--help`` options and one line per command (:data:`COMMANDS`). Only the terminal changes it:
its width and whether it shows colours. :func:`fast_help` draws the page with
:mod:`llmcore.cli._layout` (rich's layout, cell for cell) when it can tell the width and the
colours exactly as rich would (:func:`console_mode`), and otherwise leaves the command to typer,
which draws the same page with :mod:`llmcore.cli._help`. ``tests/cli/test_root_help.py``
compares both pages byte for byte at every width and colour setting the fast path takes.
"""

from __future__ import annotations

import builtins
import errno
import os
import re
import sys
from collections.abc import Callable, Mapping
from typing import IO, Any, Final

from llmcore.cli._layout import (
    HELP_MIN_WIDTH,
    NULL,
    OPTION_HIGHLIGHTS,
    Column,
    Padding,
    Panel,
    Renderable,
    Style,
    Table,
    Text,
    parse_style,
    render,
)
from llmcore.cli._stdout import silence_stdout, stdout_error

__all__ = [
    "COMMANDS",
    "ROOT_HELP",
    "VERSION_HELP",
    "console_mode",
    "fast_help",
    "page",
    "program_name",
]

ROOT_HELP: Final = (
    "Provider-agnostic LLM request bodies with byte-stable prompt-cache verification."
)
"""The application's help, the first paragraph of the root page."""
VERSION_HELP: Final = "Print 'llmcore <version>' and exit."
"""The help of ``--version``."""
HELP_HELP: Final = "Show this message and exit."
"""click's help of ``--help``."""

COMMANDS: Final[dict[str, tuple[str, str]]] = {
    "body": (
        "llmcore.cli.bodies",
        "Write exactly the body bytes PROVIDER would be sent (no trailing newline).",
    ),
    "import": (
        "llmcore.cli.bodies",
        "Turn a recorded PROVIDER body (or corpus case) into a request file on stdout.",
    ),
    "audit": (
        "llmcore.cli.audit",
        "Check the prefix invariant (P4) over recorded request bodies, in order.",
    ),
    "emulate": (
        "llmcore.cli.emulate",
        "Run the local provider emulator (Anthropic, OpenAI, Gemini, Bedrock wire APIs).",
    ),
    "proxy": (
        "llmcore.cli.proxy",
        "Forward a client's API traffic, auditing each request's prompt-cache prefix as it passes.",
    ),
    "verify": (
        "llmcore.cli.verify",
        "Check that the next body is byte-identical after saving and reopening ARCHIVE (P5).",
    ),
    "compact": (
        "llmcore.cli.compact",
        "Summarize every turn but the last two of ARCHIVE with one model call (C1–C3).",
    ),
    "bench": (
        "llmcore.cli.bench",
        "Run the scripted agent session and report its prompt-cache hit rate.",
    ),
    "chat": (
        "llmcore.cli.chat",
        "A terminal agent over a folder, with saved sessions; a demo model by default.",
    ),
}
"""Each command, in help order: the module whose ``register(app)`` adds it, and the first
paragraph of its help (a test checks it against the command's docstring)."""

MIN_WIDTH: Final = 1
MAX_WIDTH: Final = 4096
"""The widths drawn here (rich's page is compared at each of them); any other goes to typer."""
_USAGE_MAX: Final = 50
"""click wraps a usage line longer than its narrowest formatter (50 columns)."""
_PROGRAM: Final = re.compile(r"[A-Za-z0-9_.]+")
_HIGHLIGHTS: Final = tuple((pattern, parse_style(style)) for pattern, style in OPTION_HIGHLIGHTS)
_BOLD: Final = parse_style("bold")
_DIM: Final = parse_style("dim")


def page(prog: str, width: int, sgr: Callable[[Style], str]) -> str:
    """The root help page as typer draws it (:func:`llmcore.cli._help.print_help`).

    Args:
        prog: The program name of the usage line (``llmcore``).
        width: The terminal's width in cells.
        sgr: A style's SGR parameters as the terminal shows them (:func:`console_mode`).
    """
    usage = Text(f"Usage: {prog} [OPTIONS] COMMAND [ARGS]...").highlight(_HIGHLIGHTS)
    usage.highlight_regex(r"Usage: ", parse_style("yellow"))
    options = Table(
        [*[Column(overflow="fold")] * 5, Column(ratio=1, width=min(HELP_MIN_WIDTH, width // 3))],
        [
            [
                Text(name).highlight(_HIGHLIGHTS),
                Text(),
                Text(),
                Text(),
                Text(style=parse_style("bold yellow"), overflow="fold"),
                Text(help_).highlight(_HIGHLIGHTS),
            ]
            for name, help_ in (("--version", VERSION_HELP), ("--help", HELP_HELP))
        ],
    )
    commands = Table(
        [
            Column(style=parse_style("bold cyan"), no_wrap=True, width=max(map(len, COMMANDS))),
            Column(ratio=10),
        ],
        [
            [Text(name), Text(summary).highlight(_HIGHLIGHTS)]
            for name, (_, summary) in COMMANDS.items()
        ],
    )
    printed: list[tuple[Renderable, Style]] = [
        (Padding(usage, 1, 1, 1, 1), _BOLD),
        (Padding(Text(ROOT_HELP).highlight(_HIGHLIGHTS), 0, 1, 1, 1), NULL),
        (Panel(options, "Options", _DIM), NULL),
        (Panel(commands, "Commands", _DIM), NULL),
    ]
    return render(printed, width, sgr)


def _plain(style: Style) -> str:
    return ""


def _colour(style: Style) -> str:
    bold, dim, colour = style
    return ";".join(
        code for code in ("1" if bold else "", "2" if dim else "", colour or "") if code
    )


def _no_colour(style: Style) -> str:
    return _colour((style[0], style[1], None))


def _size(value: str | None) -> int | None:
    """A size from the environment as :func:`llmcore.cli._help._size` reads it."""
    if value is None or not value.isascii() or not value.isdigit():
        return None
    digits = value.lstrip("0") or "0"
    return MAX_WIDTH if len(digits) > len(str(MAX_WIDTH)) else min(int(digits), MAX_WIDTH)


def _terminal_columns() -> int | None:
    """The columns of the first of stdin, stdout and stderr that is a terminal (as rich asks)."""
    for stream, default in ((sys.__stdin__, 0), (sys.__stdout__, 1), (sys.__stderr__, 2)):
        try:
            descriptor = stream.fileno()  # type: ignore[union-attr]
        except Exception:  # rich's own fallback: the standard descriptor
            descriptor = default
        try:
            return os.get_terminal_size(descriptor).columns
        except (AttributeError, ValueError, OSError):
            continue
    return None


def _is_terminal(environ: Mapping[str, str], stream: Any) -> bool:
    """Whether rich treats ``stream`` as a terminal under typer's switches (``_help._console``)."""
    if environ.get("_TYPER_FORCE_DISABLE_TERMINAL"):
        return False
    if environ.get("GITHUB_ACTIONS") or environ.get("FORCE_COLOR") or environ.get("PY_COLORS"):
        return True
    compatible = environ.get("TTY_COMPATIBLE", "")
    if compatible in ("0", "1"):
        return compatible == "1"
    if environ.get("FORCE_COLOR") is not None:  # set, and empty
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return False if isatty is None else bool(isatty())
    except ValueError:
        return False


def console_mode(
    environ: Mapping[str, str], stream: Any
) -> tuple[int, Callable[[Style], str]] | None:
    """The width and colours of typer's help console on ``stream``, or ``None`` when unsure.

    rich's rules (``rich.console.Console``) under typer's switches: the width is
    ``TERMINAL_WIDTH``, else ``COLUMNS``, else the terminal's, else 80 (80 on a dumb terminal
    unless ``LINES`` is set too); colours show on a terminal (``FORCE_COLOR``, ``PY_COLORS``,
    ``GITHUB_ACTIONS`` or ``TTY_COMPATIBLE=1`` make one) that is not ``TERM=dumb``, bold and
    dim but no colour under ``NO_COLOR``. ``None`` for what is not drawn here: Windows, a
    notebook or IDLE, a stream that is not UTF-8, a width outside ``MIN_WIDTH..MAX_WIDTH``.

    Returns:
        ``(width, sgr)``: the width in cells and a style's SGR parameters (``""`` for none).
    """
    if sys.platform == "win32" or "get_ipython" in vars(builtins):
        return None
    if str(getattr(sys.stdin, "__module__", None) or "").startswith("idlelib"):
        return None
    if stream is None or hasattr(stream, "rich_proxied_file"):
        return None
    encoding = (getattr(stream, "encoding", None) or "utf-8").lower()
    if encoding not in ("utf-8", "utf8"):
        return None
    terminal = _is_terminal(environ, stream)
    dumb = terminal and environ.get("TERM", "").lower() in ("dumb", "unknown")
    fixed = _size(environ.get("TERMINAL_WIDTH"))
    if fixed is None:
        fixed = _size(environ.get("COLUMNS"))
    if fixed is not None and _size(environ.get("LINES")) is not None:
        width = fixed
    elif dumb:
        width = 80
    else:
        width = fixed if fixed is not None else (_terminal_columns() or 80)
    if not MIN_WIDTH <= width <= MAX_WIDTH:
        return None
    if not terminal or dumb:
        return width, _plain
    return width, (_no_colour if environ.get("NO_COLOR", "") != "" else _colour)


def program_name() -> str:
    """The program name of the usage line, as click tells it (``llmcore``, ``python -m x``)."""
    main = sys.modules.get("__main__")
    path = sys.argv[0] if sys.argv else ""
    package = getattr(main, "__package__", None)
    if package in (None, ""):
        return os.path.basename(path)
    name = os.path.splitext(os.path.basename(path))[0]
    module = package if name == "__main__" else f"{package}.{name}"
    return f"python -m {module.lstrip('.')}"


def fast_help(args: list[str], stream: IO[str] | None = None) -> int | None:
    """Print the root help for ``llmcore --help`` or bare ``llmcore``; ``None``: ask typer.

    Args:
        args: The command's arguments: ``["--help"]`` (exit 0, the page and a blank line, as
            click ends it) or ``[]`` (exit 2, the page alone, as click's ``no_args_is_help``).
        stream: Where to print (standard output).

    Returns:
        The exit code, or ``None`` when typer must answer: other arguments, ``TYPER_USE_RICH``
        or a shell-completion variable set, a program name click would print otherwise, or a
        console :func:`console_mode` cannot tell. An output that cannot be written is one line
        on stderr, exit 2; a closed pipe exits 1 quietly (click's way).
    """
    if args not in ([], ["--help"]) or "TYPER_USE_RICH" in os.environ:
        return None
    prog = program_name()
    if (
        not _PROGRAM.fullmatch(prog)
        or len(f"Usage: {prog} [OPTIONS] COMMAND [ARGS]...") > _USAGE_MAX
    ):
        return None
    if f"_{prog}_COMPLETE".upper() in os.environ:
        return None
    out = sys.stdout if stream is None else stream
    mode = console_mode(os.environ, out)
    if mode is None:
        return None
    text = page(prog, *mode) + ("\n" if args else "")
    try:
        out.write(text)
        out.flush()
    except OSError as exc:
        silence_stdout()
        if exc.errno == errno.EPIPE:
            return 1
        print(f"llmcore: {stdout_error(exc)}", file=sys.stderr)
        return 2
    return 0 if args else 2
