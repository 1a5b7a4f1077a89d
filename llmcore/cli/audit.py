"""``llmcore audit PATH…``: the stability auditor on recorded bodies (SPEC V1, R2).

Prints one row per request (conversation, verdict, first breaking byte and its JSON path, the
cacheable bytes and tokens lost, the theoretical maximum cacheable tokens) and the totals, or the
report as JSON with ``--json``. Exit 0 when P4 holds everywhere (allowed kinds included), 1 when
a break is found, 2 on bad input (one line on stderr).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, TextIO

import typer
from rich.console import Console
from rich.table import Table

from llmcore.audit import PROVIDERS, AuditReport, Verdict, audit_paths
from llmcore.errors import LLMCoreError

__all__ = ["EXIT_BREAK", "EXIT_INPUT", "EXIT_STABLE", "audit", "audit_command", "register"]

EXIT_STABLE = 0
"""Every request keeps P4 (allowed changes included)."""
EXIT_BREAK = 1
"""At least one request breaks P4."""
EXIT_INPUT = 2
"""An input is missing or malformed, or the provider name is unknown."""

_STYLE = {
    Verdict.NEW: "dim",
    Verdict.STABLE: "green",
    Verdict.BREAK: "bold red",
    Verdict.THINKING_DROPPED: "yellow",
    Verdict.REASONING_DROPPED: "yellow",
    Verdict.COMPACTION: "cyan",
}


def _table(report: AuditReport) -> Table:
    table = Table(title="llmcore audit (SPEC P4 / V1)", show_lines=False)
    for name, justify in (
        ("#", "right"),
        ("source", "left"),
        ("conv", "right"),
        ("verdict", "left"),
        ("first break (byte, path)", "left"),
        ("lost bytes", "right"),
        ("lost tokens", "right"),
        ("max cacheable", "right"),
        ("tokens", "right"),
    ):
        table.add_column(
            name,
            justify=justify,  # type: ignore[arg-type]
            overflow="fold",
            no_wrap=name in ("source", "verdict"),
        )
    for r in report.requests:
        where = "" if r.first_break_offset is None else f"{r.first_break_offset} {r.path}"
        table.add_row(
            str(r.index),
            r.source,
            str(r.conversation),
            f"[{_STYLE[r.verdict]}]{r.verdict}[/]",
            where,
            f"{r.lost_bytes:,}",
            f"{r.lost_tokens:,}",
            f"{r.max_cacheable_tokens:,}",
            f"{r.total_tokens:,}",
        )
    return table


def _summary(report: AuditReport) -> list[str]:
    counts = ", ".join(f"{k} {v}" for k, v in report.counts().items() if v)
    lines = [
        f"{len(report.requests)} requests in {report.conversations} conversations: {counts or '-'}",
        f"lost to breaks: {report.lost_bytes:,} bytes, {report.lost_tokens:,} tokens",
        (
            f"theoretical maximum hit rate: {report.theoretical_hit_rate:.1%} "
            f"({report.max_cacheable_tokens:,} of {report.total_tokens:,} tokens)"
        ),
    ]
    for r in report.requests:
        if r.verdict is Verdict.BREAK and r.detail:
            lines.append(f"request {r.index} ({r.source}): {r.detail}")
    if report.skipped:
        lines.append(f"skipped {len(report.skipped)} inputs (see --json)")
    return lines


def _width(report: AuditReport, out: TextIO) -> int | None:
    """Terminal width on a terminal; else wide enough that no row wraps (files, pipes)."""
    if out.isatty():
        return None
    source = max((len(r.source) for r in report.requests), default=10)
    where = max((len(r.path or "") + 12 for r in report.requests), default=10)
    return max(120, source + where + 110)


def audit_command(
    paths: list[Path],
    provider: str | None,
    as_json: bool,
    *,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Audit ``paths`` and print the table (or JSON); return the exit code.

    Args:
        paths: Cassettes, JSONL files, corpus cases, or folders of them, in order.
        provider: Provider for every body, or ``None`` to read each body's shape.
        as_json: Print :meth:`AuditReport.to_json` instead of the table.
        out: Where the report goes (default stdout).
        err: Where a bad-input line goes (default stderr).

    Returns:
        :data:`EXIT_STABLE`, :data:`EXIT_BREAK` or :data:`EXIT_INPUT`.
    """
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        report = audit_paths(paths, provider)
    except LLMCoreError as exc:
        print(f"llmcore: {exc}", file=err)
        return EXIT_INPUT
    if as_json:
        out.write(report.to_json().decode("utf-8") + "\n")
    else:
        console = Console(file=out, width=_width(report, out), highlight=False)
        console.print(_table(report))
        for line in _summary(report):
            console.print(line, markup=False, soft_wrap=True)
    return EXIT_STABLE if report.stable else EXIT_BREAK


def audit(
    paths: Annotated[
        list[Path],
        typer.Argument(
            metavar="PATH", help="Cassettes (.yaml), JSONL, corpus cases (.json), or folders."
        ),
    ],
    provider: Annotated[
        str | None,
        typer.Option("--provider", "-p", help=f"One of: {', '.join(PROVIDERS)}; else by shape."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Check the prefix invariant (P4) over recorded request bodies, in order."""
    raise typer.Exit(audit_command(paths, provider, as_json))


def register(app: typer.Typer) -> None:
    """Add ``audit`` to ``app``."""
    app.command("audit")(audit)
