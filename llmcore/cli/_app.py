"""The ``llmcore`` typer application: one module per command group, loaded on use (SPEC R2).

Every command prints errors as one line on stderr (``llmcore: <where>: <what>``) and exits 2;
usage errors too (:class:`~llmcore.cli._common.OneLineErrorGroup`). Loading this module loads
typer, not the command modules: :class:`LazyCommandGroup` lists every command from
:data:`COMMANDS` (its name and one-line summary) and imports a command's module only when that
command runs or shows its own help. The root ``--help`` imports none of them (issue 12), and
every help page is drawn by :mod:`llmcore.cli._help` (typer's panels without the ~120 ms of
``typer.rich_utils``). :data:`COMMANDS` lives in :mod:`llmcore.cli._root_help`, which draws the
root page without typer when it can.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

import llmcore
from llmcore.cli._common import OneLineErrorGroup
from llmcore.cli._root_help import COMMANDS, ROOT_HELP, VERSION_HELP

__all__ = ["COMMANDS", "LazyCommandGroup", "app"]


def _rich_help(command: Any) -> bool:
    """Whether typer would draw ``command``'s help with rich (else click's plain help)."""
    return bool(typer.core.HAS_RICH and getattr(command, "rich_markup_mode", None) is not None)


class _Command(TyperCommand):
    """A loaded command whose ``--help`` is drawn by :func:`llmcore.cli._help.print_help`."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """Print the help in typer's panels without loading ``typer.rich_utils``."""
        if not _rich_help(self):
            return super().format_help(ctx, formatter)
        from llmcore.cli._help import print_help

        print_help(self, ctx)
        return None


class _Summary(TyperCommand):
    """A command's name and summary for the root help, standing in until the command is used."""


def load_commands(module: str) -> dict[str, Any]:
    """Import ``module`` and return the click commands its ``register(app)`` adds, by name.

    Each ``str``, :class:`~pathlib.Path` and ``bool`` parameter gets :func:`light_coercion`;
    each command of typer's own class draws its help with :mod:`llmcore.cli._help`.
    """
    registrar = typer.Typer()
    importlib.import_module(module).register(registrar)
    commands = dict(typer.main.get_group(registrar).commands)
    for command in commands.values():
        if type(command) is TyperCommand:
            command.__class__ = _Command
        for param in command.params:
            light_coercion(param)
    return commands


def light_coercion(param: Any) -> bool:
    """Coerce a plain ``str``, ``Path`` or ``bool`` parameter without a pydantic adapter.

    typer 0.29 validates every value through a pydantic ``TypeAdapter`` built on first use, so
    any command that runs loads pydantic (about a third of ``llmcore body``'s start-up). A
    ``str`` value given as text is already the result; a ``Path`` value goes through typer's own
    path checks (``exists``, ``dir_okay``, ``allow_dash``, …) from :class:`~pathlib.Path`, which
    is what the adapter would have produced; a flag's ``bool`` is already the result. Any other
    value (an empty string too, which pydantic keeps apart from ``Path("")``, that is ``.``, and
    a path ``Path`` would spell otherwise, such as ``dir/``, whose errors typer quotes as given),
    or a typer without these internals, keeps typer's own coercion.

    Returns:
        Whether ``param`` now coerces without pydantic.
    """
    try:
        from typer._coercion import RuntimeParam
        from typer._param_types import coerce_cli_path
    except ImportError:  # another typer: its own coercion stays
        return False
    descriptor = getattr(param, "type_descriptor", None)
    if (
        descriptor is None
        or getattr(param, "_runtime_param", False) is not None
        or descriptor.parameter_info.parser is not None
        or descriptor.file_annotation is not None
        or descriptor.annotation not in (str, Path, bool)
        or descriptor.parameter_info.path_type not in (None, Path)
    ):
        return False

    @dataclass(frozen=True)
    class _Text(RuntimeParam):
        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            if self.annotation is bool and isinstance(value, bool):
                return value
            if self.annotation is bool or not isinstance(value, str) or value == "":
                return _typer_coercion(param).coerce(value, param=param, ctx=ctx)
            if self.annotation is str:
                return value
            path = Path(value)
            if str(path) != value:  # "dir/", "./x": typer's errors quote the text as given
                return _typer_coercion(param).coerce(value, param=param, ctx=ctx)
            return coerce_cli_path(path, self.parameter_info, path_type=Path, param=param, ctx=ctx)

    param._runtime_param = _Text(descriptor.parameter_info, descriptor.annotation)
    return True


def _typer_coercion(param: Any) -> Any:
    """The coercion typer itself gives ``param`` (its pydantic adapter)."""
    from typer._coercion import build_runtime_param

    return build_runtime_param(param.type_descriptor)


class LazyCommandGroup(OneLineErrorGroup):
    """The ``llmcore`` group: commands known by name and summary, each module loaded on use.

    While the group's own help is written the commands are their summaries (nothing imported);
    :meth:`get_command` otherwise replaces a summary by the real command, importing its module
    (and whatever that module imports) then.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """Build the group with a summary for each command of :data:`COMMANDS`."""
        super().__init__(*args, **kwargs)
        self._listing = False
        for name, (_, summary) in COMMANDS.items():
            self.commands.setdefault(name, _Summary(name=name, help=summary, callback=None))
        for param in self.params:
            light_coercion(param)

    def get_help_option(self, ctx: Any) -> Any:
        """The group's ``--help`` option, coerced without pydantic (:func:`light_coercion`)."""
        option = super().get_help_option(ctx)
        if option is not None:
            light_coercion(option)
        return option

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """The command ``cmd_name``: its summary while listing, else the loaded command."""
        command = self.commands.get(cmd_name)
        if isinstance(command, _Summary) and not self._listing:
            for name, loaded in load_commands(COMMANDS[cmd_name][0]).items():
                self.commands[name] = loaded
        if self._listing:
            return command
        command = super().get_command(ctx, cmd_name)
        if command is not None and command.get_help_option(ctx) is not None:
            light_coercion(command.get_help_option(ctx))
        return command

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """Write the group's help from the summaries, importing no command module.

        The help is drawn by :func:`llmcore.cli._help.print_help` (typer's panels without
        ``typer.rich_utils``), or by click when typer's rich help is off.
        """
        self._listing = True
        try:
            if _rich_help(self):
                from llmcore.cli._help import print_help

                print_help(self, ctx)
            else:
                super().format_help(ctx, formatter)
        finally:
            self._listing = False


app = typer.Typer(
    name="llmcore",
    help=ROOT_HELP,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    cls=LazyCommandGroup,
)


def _print_version(value: bool) -> None:
    if value:
        print(f"llmcore {llmcore.__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            metavar="",
            callback=_print_version,
            is_eager=True,
            help=VERSION_HELP,
        ),
    ] = False,
) -> None:
    """Provider-agnostic LLM request bodies with byte-stable prompt-cache verification."""
