"""``llmcore body`` and ``llmcore import``: request files to body bytes and back (SPEC R1, R2)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from llmcore import jsonbytes
from llmcore.cli._common import fail, one_line_errors
from llmcore.errors import RequestFileError
from llmcore.providers import PROVIDER_NAMES, get_provider
from llmcore.requestfile import dump_request, load_request_file, read_json_file

__all__ = ["register"]

_IMPORTABLE = ("anthropic", "openai-chat", "openai-responses")

ProviderOption = Annotated[
    str, typer.Option("--provider", "-p", help=f"One of: {', '.join(PROVIDER_NAMES)}.")
]


@one_line_errors
def body(
    request: Annotated[Path, typer.Argument(help="A request file (see README).")],
    provider: ProviderOption,
) -> None:
    """Write exactly the body bytes PROVIDER would be sent (no trailing newline)."""
    built = get_provider(provider).build_body(load_request_file(request))
    sys.stdout.buffer.write(built)
    sys.stdout.buffer.flush()


def _recorded_body(path: Path) -> Any:
    value = read_json_file(path)
    if isinstance(value, dict) and "request" in value and "model" not in value:
        raw = value.get("request_raw")
        if isinstance(raw, str):
            try:
                return jsonbytes.loads(raw)
            except ValueError as exc:
                raise RequestFileError("request_raw is not valid JSON", location=str(path)) from exc
        return value["request"]
    return value


@one_line_errors
def import_(
    recorded: Annotated[Path, typer.Argument(metavar="BODY", help="A body or corpus case file.")],
    provider: ProviderOption,
) -> None:
    """Turn a recorded PROVIDER body (or corpus case) into a request file on stdout."""
    if provider not in _IMPORTABLE:
        raise fail(f"import supports {', '.join(_IMPORTABLE)}, not {provider!r}")
    result = get_provider(provider).import_body(_recorded_body(recorded), location=f"{recorded}: $")
    for note in result.notes:
        print(f"llmcore: note: {note}", file=sys.stderr)
    sys.stdout.buffer.write(dump_request(result.request))
    sys.stdout.buffer.flush()


def register(app: typer.Typer) -> None:
    """Add ``body`` and ``import`` to ``app``."""
    app.command("body")(body)
    app.command("import")(import_)
