"""``llmcore proxy`` — a recording, auditing reverse proxy in front of an API (SPEC V6, R2).

:func:`proxy_command` is the whole command as a plain function; :func:`register` adds it to the
``llmcore`` application. On a terminal it shows a live table of the conversations seen
(requests, recorded hit rate, the auditor's maximum, breaks with their path) and prints a line
per break above it; otherwise it prints the break lines on stderr and the table once at the end.
Errors are one line on stderr and exit 2.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from llmcore.cli._common import RecordOption, fail_status, log_to_stderr
from llmcore.cli._extras import missing_extra

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from llmcore.audit.live import ConversationRow, Observation
    from llmcore.proxy import Proxy

__all__ = ["EXIT_INPUT", "breaks_table", "parse_listen", "proxy_command", "register"]

EXIT_INPUT = 2
"""Exit status for a bad upstream URL or address, or an address that cannot be bound."""
DEFAULT_LISTEN = "127.0.0.1:0"
"""Loopback, a free port (printed)."""


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[IPV6]:PORT`` or ``PORT`` (loopback) → ``(host, port)``.

    Raises:
        ValueError: Not of that form, or the port is outside 0–65535.
    """
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", text
    host = host.removeprefix("[").removesuffix("]") or "127.0.0.1"
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--listen {text!r}: expected HOST:PORT with a port from 0 to 65535")
    return host, int(port)


def breaks_table(rows: list[ConversationRow], title: str = "llmcore proxy") -> Table:
    """The conversations as a rich table: one row each, breaks as ``#N path``."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for name, justify in (
        ("conv", "right"),
        ("key", "left"),
        ("provider · model", "left"),
        ("requests", "right"),
        ("recorded hit", "right"),
        ("max hit", "right"),
        ("breaks", "left"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for row in rows:
        shown = ", ".join(f"#{number} {path}" for number, path in row.breaks)
        more = row.break_count - len(row.breaks)
        table.add_row(
            str(row.conversation),
            (row.key or "")[:24],
            f"{row.provider} · {row.model}",
            str(row.requests),
            "—" if row.recorded_hit_rate is None else f"{row.recorded_hit_rate:.1%}",
            f"{row.max_hit_rate:.1%}",
            f"{row.break_count}" + (f": {'… ' if more > 0 else ''}{shown}" if shown else ""),
        )
    return table


def proxy_command(upstream: str, listen: str = DEFAULT_LISTEN, record: Path | None = None) -> int:
    """Serve the proxy until interrupted; return the exit status.

    Returns:
        0 after Ctrl+C; 2 (one ``llmcore: …`` line on stderr) for a bad ``--upstream`` or
        ``--listen``, an address that cannot be bound, a record file that cannot be opened, or
        the ``emulator`` extra not installed.
    """
    missing = missing_extra("emulator")
    if missing is not None:
        return fail_status(f"proxy {missing}")
    try:
        host, port = parse_listen(listen)
    except ValueError as exc:
        return fail_status(str(exc))
    from rich.console import Console

    from llmcore.proxy import Proxy, ProxyError

    terminal = sys.stdout.isatty()
    console = Console(stderr=not terminal)
    log_to_stderr("llmcore.proxy", logging.WARNING)  # upstream failures
    try:
        server = Proxy(
            upstream, host=host, port=port, record=record, observer=_printer(console, terminal)
        )
    except ProxyError as exc:
        return fail_status(str(exc))
    except OSError as exc:
        return fail_status(f"--record {record}: {exc.strerror or exc}")
    try:
        _serve(server, console, terminal)
    except ProxyError as exc:
        return fail_status(str(exc))
    except KeyboardInterrupt:
        pass
    if not terminal:
        Console(width=200).print(breaks_table(server.audit.rows()))  # a file: rows unwrapped
    return 0


def _serve(server: Proxy, console: Console, terminal: bool) -> None:
    def ready(bound: Proxy) -> None:
        shown = f" · record {bound.record.path}" if bound.record is not None else ""
        console.print(
            f"llmcore proxy listening: {bound.base_url} → {bound.upstream}{shown} (Ctrl+C stops)",
            highlight=False,
            soft_wrap=True,
        )

    if not terminal:
        server.serve_forever(on_ready=ready)
        return
    from rich.live import Live

    with Live(
        get_renderable=lambda: breaks_table(server.audit.rows()),
        console=console,
        refresh_per_second=2,
    ):
        server.serve_forever(on_ready=ready)


def _printer(console: Console, terminal: bool) -> Any:
    def observed(observation: Observation) -> None:
        if observation.is_break:
            console.print(f"[bold red]break[/] {observation.describe()}", highlight=False)

    def plain(observation: Observation) -> None:
        if observation.is_break:
            print(f"llmcore proxy: {observation.describe()}", file=sys.stderr, flush=True)

    return observed if terminal else plain


def proxy(
    upstream: Annotated[
        str,
        typer.Option(
            metavar="URL",
            help="The API's base URL (https://api.anthropic.com, or an emulator's URL).",
        ),
    ],
    listen: Annotated[
        str,
        typer.Option(metavar="HOST:PORT", help="Address to listen on; port 0 picks a free one."),
    ] = DEFAULT_LISTEN,
    record: RecordOption = None,
) -> None:
    """Forward a client's API traffic, auditing each request's prompt-cache prefix as it passes."""
    raise typer.Exit(proxy_command(upstream, listen, record))


def register(app: typer.Typer) -> None:
    """Add ``proxy`` to ``app``."""
    app.command("proxy")(proxy)
