"""Helpers shared by the command modules: one-line errors and exit codes (SPEC R2).

* :func:`fail` / :func:`one_line_errors` — a command's own errors: ``llmcore: <message>`` on
  stderr, exit 2.
* :class:`OneLineErrorGroup` — the ``llmcore`` group class: click/typer *usage* errors (a missing
  option or argument, a bad value such as ``--port abc``, an unknown option or command) are
  printed as one line too, ``llmcore: <command>: <message> (see 'llmcore <command> --help')``,
  exit 2, instead of typer's multi-line rich box. Help output stays rich.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
from collections.abc import Callable, Sequence
from functools import wraps
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any, Final, NoReturn, ParamSpec, TypeVar

import typer
from typer.core import TyperArgument, TyperGroup

from llmcore.cli._body_run import CommandError
from llmcore.cli._extras import missing_extra
from llmcore.errors import LLMCoreError

if TYPE_CHECKING:
    from llmcore.cloud.base import CloudEndpoint
    from llmcore.transport import HTTPTransport

__all__ = [
    "EXIT_USAGE",
    "BaseUrlOption",
    "CLOUDS",
    "EndpointOption",
    "ModelOption",
    "OneLineErrorGroup",
    "RecordOption",
    "base_url_transport",
    "cloud_transport",
    "fail",
    "fail_status",
    "log_to_stderr",
    "one_line_errors",
    "require_extra",
    "usage_line",
]

EXIT_USAGE = 2
"""Exit code for bad input: a missing file, invalid JSON, an unsupported feature."""


def _click_exceptions() -> ModuleType:
    """The click exceptions typer raises: its vendored copy (typer >= 0.2x) or click's own."""
    try:
        return importlib.import_module("typer._click.exceptions")
    except ImportError:  # older typer runs on the click package
        return importlib.import_module("click.exceptions")


_CLICK: Final = _click_exceptions()

P = ParamSpec("P")
R = TypeVar("R")


def fail(message: str) -> typer.Exit:
    """Print ``llmcore: message`` on stderr and return the exit to raise (code 2)."""
    print(f"llmcore: {message}", file=sys.stderr)
    return typer.Exit(EXIT_USAGE)


def fail_status(message: str) -> int:
    """Print ``llmcore: message`` on stderr (one line, as every command does); return 2."""
    print(f"llmcore: {message}", file=sys.stderr)
    return EXIT_USAGE


def log_to_stderr(name: str, level: int) -> None:
    """Send logger ``name`` to stderr from ``level`` up, one bare line per record (once)."""
    logger = logging.getLogger(name)
    if not any(getattr(h, "llmcore_stderr", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        handler.llmcore_stderr = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False


RecordOption = Annotated[
    Path | None,
    typer.Option(metavar="FILE", help="Append each request as a JSONL line llmcore audit reads."),
]
"""``--record FILE`` of ``llmcore proxy`` and ``llmcore emulate`` (:mod:`llmcore.audit.live`)."""


def require_extra(command: str, *extras: str) -> None:
    """Exit with one line (code 2) when ``command`` needs an extra that is not installed.

    Raises:
        typer.Exit: ``llmcore: <command> needs the '<extra>' extra (...)`` was printed.
    """
    for extra in extras:
        message = missing_extra(extra)
        if message is not None:
            raise fail(f"{command} {message}")


def one_line_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Turn an ``LLMCoreError`` or ``CommandError`` the command raises into one line, exit 2."""

    @wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except (LLMCoreError, CommandError) as exc:
            raise fail(str(exc)) from None

    return wrapper


def usage_line(error: Exception) -> str:
    """Return a click error as one line: ``<command>: <message> (see '<command path> --help')``.

    Args:
        error: A click ``ClickException`` (``UsageError``, ``BadParameter``, …).

    The command is the sub-command the error belongs to (``body``, ``emulate``), or nothing for
    the ``llmcore`` group itself; newlines inside click's message are folded into spaces.
    """
    message = " ".join(str(error.format_message()).split())  # type: ignore[attr-defined]
    ctx = getattr(error, "ctx", None)
    if ctx is None:
        return message
    command = str(ctx.command_path)
    name = command.partition(" ")[2]
    if ctx.command.get_help_option(ctx) is not None:
        message = f"{message.rstrip('.')} (see '{command} --help')"
    return f"{name}: {message}" if name else message


class OneLineErrorGroup(TyperGroup):
    """A typer group whose click usage errors are one line on stderr and exit 2 (SPEC R2).

    Pass it as ``typer.Typer(cls=OneLineErrorGroup)``. It runs click in non-standalone mode and
    prints what click would have printed as a box: a click ``ClickException`` becomes
    ``llmcore: <usage_line>`` with the exception's exit code (2 for usage errors); an abort
    (Ctrl-C, EOF at a prompt) is ``llmcore: aborted``, exit 1. ``no_args_is_help`` still shows
    the help (exit 2). Help output itself stays rich.
    """

    def get_help_option(self, ctx: Any) -> Any:
        """The ``--help`` option, shown without a value placeholder (typer's says ``<bool>``)."""
        return _without_placeholder(super().get_help_option(ctx))

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """The sub-command ``cmd_name``, its ``--help`` shown without a value placeholder."""
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            _without_placeholder(command.get_help_option(ctx))
            for param in command.params:
                if type(param) is TyperArgument and param.metavar:
                    param.__class__ = _NamedArgument
        return command

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Run the group; in standalone mode exit with one-line usage errors (see class doc)."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, **extra)
        except _CLICK.ClickException as exc:
            _exit_one_line(exc)
        except typer.Abort:
            print("llmcore: aborted", file=sys.stderr)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


class _NamedArgument(TyperArgument):
    """An argument whose metavar (``FILE``, ``ARCHIVE``) is its only placeholder in rich help.

    typer 0.29 prints the Python type (``<path>``) beside an argument's name whatever its
    metavar; :meth:`OneLineErrorGroup.get_command` gives arguments with a metavar this class.
    """

    def display_type_rich(self, ctx: Any) -> str | None:
        """No type column: the metavar already names the value."""
        return None


def _without_placeholder(option: Any) -> Any:
    """Set a help option's metavar to ``""`` so rich help prints no ``<bool>`` after it."""
    if option is not None:
        option.metavar = ""
    return option


def _exit_one_line(error: Exception) -> NoReturn:
    if type(error).__name__ != "NoArgsIsHelpError":  # its help was printed when it was made
        print(f"llmcore: {usage_line(error)}", file=sys.stderr)
    sys.exit(getattr(error, "exit_code", EXIT_USAGE))


ModelOption = Annotated[
    str | None, typer.Option("--model", "-m", metavar="MODEL", help="The model.")
]
"""``--model`` as the commands that call a model declare it."""
BaseUrlOption = Annotated[
    str | None,
    typer.Option("--base-url", metavar="URL", help="A compatible endpoint, e.g. the emulator's."),
]
"""``--base-url`` as the commands that call a model declare it."""


def base_url_transport(name: str, base_url: str) -> HTTPTransport:
    """Return a transport that sends provider ``name``'s requests to ``base_url``.

    The key is the provider's environment variable when set, else ``"none"``: a compatible
    endpoint (such as ``llmcore emulate``) may need none.
    """
    from llmcore.providers import get_provider
    from llmcore.transport import HTTPTransport

    key = os.environ.get(get_provider(name).endpoint.api_key_env) or "none"
    return HTTPTransport(base_urls={name: base_url}, api_keys={name: key})


CLOUDS: Final = ("vertex", "bedrock", "azure")
"""The ``--endpoint`` choices: Anthropic on Vertex AI or Bedrock, OpenAI on Azure."""

EndpointOption = Annotated[
    str | None,
    typer.Option(
        "--endpoint",
        metavar="CLOUD",
        help="The provider's API on a cloud: vertex, bedrock or azure.",
    ),
]
"""``--endpoint`` as the commands that call a model declare it."""


def cloud_transport(name: str, cloud: str, base_url: str | None) -> HTTPTransport:
    """Return a transport that sends provider ``name``'s requests through cloud ``cloud``.

    The endpoint reads its settings and credentials from the environment
    (:mod:`llmcore.cloud`); ``base_url`` replaces its host (an emulator's).

    Raises:
        typer.Exit: An unknown cloud, one that does not serve ``name``, or missing settings
            (code 2, one line printed).
    """
    from llmcore.cloud import AnthropicBedrock, AnthropicVertex, AzureOpenAI
    from llmcore.transport import HTTPTransport

    makers: dict[str, Callable[[], CloudEndpoint]] = {
        "vertex": lambda: AnthropicVertex(base_url=base_url and base_url.rstrip("/") + "/v1"),
        "bedrock": lambda: AnthropicBedrock(base_url=base_url),
        "azure": lambda: AzureOpenAI(endpoint=base_url),
    }
    if cloud not in makers:
        raise fail(f"--endpoint: unknown endpoint {cloud!r}; one of {', '.join(CLOUDS)}")
    try:
        endpoint = makers[cloud]()
    except LLMCoreError as exc:
        raise fail(f"--endpoint {cloud}: {exc}") from None
    if name not in endpoint.providers:
        serves = ", ".join(sorted(endpoint.providers))
        raise fail(f"--endpoint {cloud} serves {serves}, not {name}")
    return HTTPTransport(endpoints={name: endpoint})
