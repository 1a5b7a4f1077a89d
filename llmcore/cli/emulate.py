"""``llmcore emulate`` — run the provider emulator on loopback (SPEC V2, R2).

:func:`emulate_command` is the whole command as a plain function; :func:`register` adds it
to the ``llmcore`` application. Errors are one line on stderr and exit 2.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from llmcore.cli._common import RecordOption, fail_status, log_to_stderr
from llmcore.cli._extras import missing_extra

if TYPE_CHECKING:
    from llmcore.emulator import Emulator

__all__ = ["EXIT_INPUT", "MAX_PORT", "emulate_command", "register"]

EXIT_INPUT = 2
"""Exit status for a bad script, an out-of-range port or a port that cannot be bound."""
MAX_PORT = 65535
"""Highest TCP port number."""


def emulate_command(
    port: int = 0, script: Path | None = None, access_log: bool = False, record: Path | None = None
) -> int:
    """Serve the emulator on 127.0.0.1 until interrupted.

    Prints a line with the Anthropic base URL, then one line per API served
    (:meth:`Emulator.apis`: Anthropic Messages, OpenAI Chat Completions and Responses,
    OpenRouter, Gemini, Bedrock Converse and InvokeModel, Vertex AI, Azure OpenAI), each with
    its base URL and how a client is pointed at it; then serves them.

    Args:
        port: TCP port; 0 lets the OS choose (the chosen port is printed).
        script: A reply script file (format in :mod:`llmcore.emulator.script`); ``None`` runs
            the built-in agent script.
        access_log: Log each request on stderr.
        record: Append each model request and its answer's usage to this JSONL file (the
            record ``llmcore audit`` reads; no header is written).

    Returns:
        The exit status: 0 after Ctrl+C, 2 (one ``llmcore: …`` line on stderr) for a bad
        script, a port outside 0–65535, a port that cannot be bound, a record file that cannot
        be opened, or the ``emulator`` extra not installed.
    """
    missing = missing_extra("emulator")
    if missing is not None:
        return fail_status(f"emulate {missing}")
    from llmcore.emulator import Emulator, EmulatorError, ScriptError, load_script

    if not 0 <= port <= MAX_PORT:
        return fail_status(f"--port {port} is out of range (0 to {MAX_PORT}; 0 picks a free port)")
    try:
        loaded = load_script(script) if script is not None else None
    except ScriptError as exc:
        return fail_status(str(exc))
    log_to_stderr("llmcore.emulator", logging.INFO if access_log else logging.WARNING)
    try:
        emulator = Emulator(script=loaded, port=port, access_log=access_log, record=record)
    except OSError as exc:
        return fail_status(f"--record {record}: {exc.strerror or exc}")
    try:
        emulator.serve_forever(on_ready=_announce)
    except EmulatorError as exc:
        return fail_status(str(exc))
    except KeyboardInterrupt:
        pass
    return 0


def _announce(emulator: Emulator) -> None:
    """Print the start-up lines: the Anthropic base URL first, then every API served."""
    apis = emulator.apis()
    width = max(len(api) for api, _, _ in apis)
    reach = max(len(url) for _, url, _ in apis)
    lines = [f"llmcore emulator listening: anthropic base URL {emulator.base_url} (Ctrl+C stops)"]
    lines += [f"  {api:<{width}}  {url:<{reach}}  {how}" for api, url, how in apis]
    print("\n".join(lines), flush=True)


def emulate(
    port: Annotated[
        int, typer.Option(metavar="N", help="TCP port on 127.0.0.1; 0 picks a free one.")
    ] = 0,
    script: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help="Reply script (JSON); default: the built-in agent."),
    ] = None,
    access_log: Annotated[
        bool,
        typer.Option(
            metavar="", help="Print one line per request on stderr (client, status, ms, id)."
        ),
    ] = False,
    record: RecordOption = None,
) -> None:
    """Run the local provider emulator (Anthropic, OpenAI, Gemini, Bedrock wire APIs)."""
    raise typer.Exit(emulate_command(port, script, access_log, record))


def register(app: typer.Typer) -> None:
    """Add ``emulate`` to ``app``."""
    app.command("emulate")(emulate)
