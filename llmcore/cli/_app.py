"""The ``llmcore`` typer application: one module per command group, registered here (SPEC R2).

Every command prints errors as one line on stderr (``llmcore: <where>: <what>``) and exits 2;
usage errors too (:class:`~llmcore.cli._common.OneLineErrorGroup`). Loading this module loads
typer and the command modules, not what the commands use (rich, the emulator, httpx,
matplotlib): each command imports those when it runs.
"""

from __future__ import annotations

from typing import Annotated

import typer

import llmcore
from llmcore.cli import audit, bench, bodies, chat, compact, emulate, verify
from llmcore.cli._common import OneLineErrorGroup

__all__ = ["app"]

app = typer.Typer(
    name="llmcore",
    help="Provider-agnostic LLM request bodies with byte-stable prompt-cache verification.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    cls=OneLineErrorGroup,
)
bodies.register(app)
audit.register(app)
emulate.register(app)
verify.register(app)
compact.register(app)
bench.register(app)
chat.register(app)


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
            help="Print 'llmcore <version>' and exit.",
        ),
    ] = False,
) -> None:
    """Provider-agnostic LLM request bodies with byte-stable prompt-cache verification."""
