r"""The ``--help`` page of ``llmcore`` and of each command, in typer's panel layout (issue 12).

typer draws its help with ``typer.rich_utils``, which imports ``rich.markdown`` (and with it
``markdown_it`` and ``pygments``) whatever the markup: about 120 ms of every ``--help``. This
module draws the same page from ``rich.console``, ``rich.table``, ``rich.panel`` and
``rich.text`` alone: the usage line, the help text, then boxed panels ``Arguments``,
``Options`` (a parameter's ``rich_help_panel`` names another panel) and, for a group,
``Commands`` (each command with the first paragraph of its help). An option's row holds the
required marker ``*``, its names (the negative names of a ``--x/--no-x`` flag apart), its
metavar or type, its help, ``[default: …]`` and ``[required]``.

Help texts are read as typer's ``rich`` markup mode (its default, and llmcore's) reads them:
rich markup (``[bold]…[/]``) is drawn, not printed; a span in single or double backquotes is
drawn bold without them (``:name:`` stays text, not an emoji); a paragraph starting with ``\b``
keeps its line breaks; anything after a ``\f`` line is not shown (click's conventions). Colours
follow the terminal: none when the output is not a terminal or ``NO_COLOR`` is set,
``FORCE_COLOR`` / ``PY_COLORS`` / ``GITHUB_ACTIONS`` force them; the width is the terminal's,
``COLUMNS`` or ``TERMINAL_WIDTH`` when set. A name column folds rather than cut a name on a
narrow terminal.
"""

from __future__ import annotations

import codecs
import errno
import inspect
import os
import re
import sys
from collections.abc import Iterable
from typing import Any, Final

from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from llmcore.cli._layout import HELP_MIN_WIDTH, OPTION_HIGHLIGHTS
from llmcore.cli._stdout import silence_stdout, stdout_error

__all__ = ["print_help"]

ARGUMENTS: Final = "Arguments"
OPTIONS: Final = "Options"
COMMANDS: Final = "Commands"

_HIGHLIGHTS: Final = OPTION_HIGHLIGHTS
"""typer's option highlighter: ``-s`` switches, ``--long`` options and ``<type>`` placeholders."""
_NEGATIVE: Final = (
    (re.compile(r"(?:^|\W)(-\w+)(?![a-zA-Z0-9])"), "bold red"),
    (re.compile(r"(?:^|\W)(--[\w\-]+)(?![a-zA-Z0-9])"), "bold magenta"),
)
"""The highlighter of the negative names (``--no-x``)."""
_CODE: Final = re.compile(r"``(.+?)``|`([^`]+)`")
_HELP_MIN_WIDTH: Final = HELP_MIN_WIDTH
_MAX_SIZE: Final = 4096
"""The widest (and tallest) page drawn, whatever the environment says."""


def print_help(command: Any, ctx: Any) -> None:
    """Print ``command``'s help page on standard output.

    Args:
        command: A click command or group (typer's, or any with click's attributes). A group
            lists the commands its ``list_commands`` / ``get_command`` give for ``ctx``.
        ctx: The click context of ``command``.

    Raises:
        typer.Exit: Standard output could not be written (a full disk, an I/O error):
            ``llmcore: cannot write to stdout (<reason>)`` was printed on stderr (code 2).
            A closed pipe (``llmcore --help | head -1``) is left to click, which exits quietly.
    """
    try:
        _print_page(command, ctx)
    except OSError as exc:
        if exc.errno == errno.EPIPE:
            raise
        from llmcore.cli._common import fail

        silence_stdout()
        raise fail(stdout_error(exc)) from None


def _print_page(command: Any, ctx: Any) -> None:
    console = _console()
    usage = _highlight(Text(command.get_usage(ctx)))
    usage.highlight_regex(r"Usage: ", "yellow")
    console.print(Padding(usage, 1), style="bold")
    if command.help:
        console.print(Padding(_help_text(command), (0, 1, 1, 1)))
    arguments: dict[str, list[Any]] = {ARGUMENTS: []}
    options: dict[str, list[Any]] = {OPTIONS: []}
    for param in command.get_params(ctx):
        if getattr(param, "hidden", False):
            continue
        panels = arguments if param.param_type_name == "argument" else options
        default = ARGUMENTS if panels is arguments else OPTIONS
        panels.setdefault(getattr(param, "rich_help_panel", None) or default, []).append(param)
    for name, params in [*arguments.items(), *options.items()]:
        if params:
            console.print(_panel(name, _params_table(params, ctx, console.width)))
    if hasattr(command, "list_commands"):
        _print_commands(command, ctx, console)
    if command.epilog:
        console.print(Padding(_markup("\n\n".join(command.epilog.split("\n\n"))), 1))


def _console() -> Console:
    """A console on standard output with typer's environment switches.

    ``COLUMNS``, ``LINES`` and ``TERMINAL_WIDTH`` are read as ASCII digits, at most
    :data:`_MAX_SIZE`; any other value is ignored (rich would end in a ``ValueError`` on
    ``COLUMNS=²``, and draw a page as wide as ``COLUMNS=1000000000`` until memory runs out).
    """
    environ = dict(os.environ)
    for name in ("COLUMNS", "LINES"):
        size = _size(environ.pop(name, None))
        if size is not None:
            environ[name] = str(size)
    force = bool(os.getenv("GITHUB_ACTIONS") or os.getenv("FORCE_COLOR") or os.getenv("PY_COLORS"))
    _replace_unencodable(sys.stdout)
    return Console(
        force_terminal=False if os.getenv("_TYPER_FORCE_DISABLE_TERMINAL") else force or None,
        width=_size(os.getenv("TERMINAL_WIDTH")),
        highlight=False,
        _environ=environ,
    )


def _size(value: str | None) -> int | None:
    """Return a terminal size given in the environment, at most :data:`_MAX_SIZE`.

    ``None`` when ``value`` is absent or not ASCII digits.
    """
    if value is None or not value.isascii() or not value.isdigit():
        return None
    digits = value.lstrip("0") or "0"
    return _MAX_SIZE if len(digits) > len(str(_MAX_SIZE)) else min(int(digits), _MAX_SIZE)


def _replace_unencodable(stream: Any) -> None:
    """Let ``stream`` write ``?`` for a character its encoding lacks (``PYTHONIOENCODING=ascii``).

    Help texts hold non-ASCII punctuation; a help page on such a terminal shows ``?`` there
    instead of ending in a ``UnicodeEncodeError``. A UTF encoding is left as it is.
    """
    encoding = getattr(stream, "encoding", None)
    try:
        utf = codecs.lookup(encoding or "utf-8").name.startswith("utf")
    except LookupError:
        utf = False
    if not utf and getattr(stream, "errors", "strict") == "strict":
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="replace")


def _highlight(text: Text, patterns: Iterable[tuple[re.Pattern[str], str]] = _HIGHLIGHTS) -> Text:
    """Style ``text``'s option names and ``<type>`` placeholders in place; return it."""
    for pattern, style in patterns:
        for match in pattern.finditer(text.plain):
            text.stylize(style, *match.span(1))
    return text


def _markup(source: str, style: str = "") -> Text:
    """``source`` (rich markup, backquoted code, or text with ANSI codes) as styled text."""
    if "\x1b[" in source:
        return _highlight(Text.from_ansi(source, style=style))
    source = _CODE.sub(lambda m: f"[bold]{escape(m.group(1) or m.group(2))}[/bold]", source)
    return _highlight(Text.from_markup(source, style=style, emoji=False))


def _paragraphs(source: str) -> list[str]:
    r"""``source``'s paragraphs up to a ``\f`` line, each on one line unless it starts ``\b``."""
    text = inspect.cleandoc(source).partition("\f")[0]
    return [
        part.strip("\b\n") if part.startswith("\b") else " ".join(part.split())
        for part in text.split("\n\n")
    ]


def _help_text(command: Any) -> Group:
    """The command's help: its first paragraph, then the others dimmed."""
    first, *rest = _paragraphs(command.help)
    lines: list[RenderableType] = []
    if command.deprecated:
        lines.append(Text("(deprecated) ", style="red"))
    lines.append(_markup(first))
    if rest:
        lines += [Text(""), _markup("\n\n".join(rest), style="dim")]
    return Group(*lines)


def _panel(title: str, table: Table) -> Panel:
    return Panel(table, border_style="dim", title=title, title_align="left")


def _table() -> Table:
    return Table(show_header=False, expand=True, box=None, pad_edge=False, padding=(0, 1))


def _params_table(params: list[Any], ctx: Any, width: int) -> Table:
    """One row per parameter: ``*``, names, negative names, metavar or type, help."""
    rows: list[list[RenderableType]] = []
    for param in params:
        label = None
        if param.param_type_name == "argument":
            label = getattr(param, "display_name_raw", None) or param.human_readable_name
            if param.metavar is None and param.nargs != 1:
                label += "..."
        long, short = _split_names(param.opts, label)
        negative_long, negative_short = _split_names(param.secondary_opts, label)
        kind = Text(style="bold yellow", overflow="fold")
        display_type = getattr(param, "display_type_rich", None)
        kind.append((display_type(ctx) if display_type else None) or "")
        number_range = getattr(param, "_get_number_range_help_str", lambda: None)()
        if number_range:
            kind.append(f" [{number_range}]")
        kind.highlight_regex(r"^[\[<]|\||[\]>](\.\.\.)?$", "dim")
        rows.append(
            [
                Text("*", style="red") if param.required else Text(""),
                _highlight(Text(",".join(long))),
                _highlight(Text(",".join(short))),
                _highlight(Text(",".join(negative_long)), _NEGATIVE),
                _highlight(Text(",".join(negative_short)), _NEGATIVE),
                kind,
                _param_help(param, ctx),
            ]
        )
    table = _table()
    keep_required = any(param.required for param in params)
    for _ in rows[0][1 - keep_required : -1]:
        table.add_column(overflow="fold")  # on a narrow terminal a name folds, never "…"
    # the help takes the width the names and types leave, and at least a word or two
    table.add_column(ratio=1, width=min(_HELP_MIN_WIDTH, width // 3))
    for row in rows:
        table.add_row(*(row if keep_required else row[1:]))
    return table


def _split_names(names: list[str], label: str | None) -> tuple[list[str], list[str]]:
    """``names`` split into long (``--x``) and short ones; an argument shows ``label`` instead."""
    long = [name for name in names if "--" in name]
    short = [label or name for name in names if "--" not in name]
    return long, short


def _param_help(param: Any, ctx: Any) -> Text:
    """A parameter's help, then ``[env var: …]``, ``[default: …]`` and ``[required]``."""
    help_ = Text()
    if getattr(param, "help", None):
        help_.append_text(_markup("\n".join(_paragraphs(param.help))))
    envvar = getattr(param, "envvar", None)
    if envvar and getattr(param, "show_envvar", False):
        names = envvar if isinstance(envvar, str) else ", ".join(map(str, envvar))
        _add(help_, f"[env var: {names}]", "dim yellow")
    default = _default(param, ctx)
    if default:
        _add(help_, f"[default: {default}]", "dim")
    if param.required:
        _add(help_, "[required]", "dim red")
    return help_


def _add(text: Text, note: str, style: str) -> None:
    if text.plain:
        text.append(" ")
    text.append(note, style=style)


def _default(param: Any, ctx: Any) -> str | None:
    """The default as typer's help shows it, or ``None`` when it shows none."""
    extract = getattr(param, "_extract_default_help_str", None)
    if extract is None:  # not a typer parameter: click shows its default only when asked
        shown = param.show_default if param.show_default is not None else ctx.show_default
        return str(param.default) if shown and param.default is not None else None
    value = extract(ctx=ctx)
    show_default_is_str = isinstance(param.show_default, str)
    if not show_default_is_str and (value is None or not (param.show_default or ctx.show_default)):
        return None
    shown = param._get_default_string(
        ctx=ctx, show_default_is_str=show_default_is_str, default_value=value
    )
    return str(shown) if shown else None


def _print_commands(group: Any, ctx: Any, console: Console) -> None:
    """The ``Commands`` panel (and one per other ``rich_help_panel``) of ``group``."""
    panels: dict[str, list[Any]] = {COMMANDS: []}
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is not None and not command.hidden:
            panel = getattr(command, "rich_help_panel", None) or COMMANDS
            panels.setdefault(panel, []).append(command)
    width = max((len(c.name or "") for cs in panels.values() for c in cs), default=0)
    for title, commands in panels.items():
        if not commands:
            continue
        table = _table()
        table.add_column(style="bold cyan", no_wrap=True, width=width)
        table.add_column(ratio=10)
        for command in commands:
            summary = _markup(_paragraphs(command.short_help or command.help or "")[0])
            if command.deprecated:
                summary = Text.assemble(Text("(deprecated) ", style="red"), summary)
            name = Text(command.name or "", style="dim" if command.deprecated else "")
            table.add_row(name, summary)
        console.print(_panel(title, table))
