"""``llmcore bench``: the main job — measured prompt-cache hits of a scripted agent session.

Runs :func:`llmcore.bench.run_bench` on the embedded emulator (never a real API unless
``--live`` is given, whatever keys are set), with a progress bar; prints one row per request
(input, cache read, cache write tokens and hit rate) and the total hit rate against the
auditor's theoretical maximum for the bodies sent; writes ``bench.json`` and a chart
(``bench.png``) to the results folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from llmcore.bench import DEFAULT_PLAN, BenchResult, BenchRow, run_bench, with_provider
from llmcore.cli._common import fail, one_line_errors
from llmcore.providers import PROVIDER_NAMES

__all__ = ["register"]

_EMBEDDED_REQUESTS = 24
"""Requests the embedded session makes (the emulator's built-in agent script)."""


def _table(result: BenchResult) -> Table:
    table = Table(title="llmcore bench: prompt-cache hits per request")
    for name in ("req", "turn", "provider", "input", "cache read", "cache write", "hit rate", ""):
        table.add_column(name, justify="left" if name in ("provider", "") else "right")
    for row in result.rows:
        table.add_row(
            str(row.request),
            str(row.turn),
            row.provider,
            f"{row.usage.input:,}",
            f"{row.usage.cache_read:,}",
            f"{row.usage.cache_write:,}",
            f"{row.hit_rate:.1%}",
            row.event,
        )
    return table


def _summary(result: BenchResult) -> list[str]:
    inherent = [r.request for r in result.rows if r.usage.cache_read == 0]
    return [
        f"total hit rate: {result.hit_rate:.2%} "
        f"(Σcache_read ÷ Σ(input + cache_read + cache_write), {len(result.rows)} requests)",
        f"theoretical maximum (auditor, bodies sent): {result.theoretical_hit_rate:.2%}",
        f"prefix-invariant breaks found by the auditor: {result.audit_breaks}",
        "reopened archive rebuilds the same next body: "
        f"{'yes' if result.reopen_identical else 'NO'}"
        f" (conversation.json {result.archive_bytes:,} bytes)",
        f"requests with no cache read: {', '.join(map(str, inherent)) or 'none'}",
    ]


def _chart(result: BenchResult, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result.rows
    x = [r.request for r in rows]
    fig, ax = plt.subplots(figsize=(10, 4.5), dpi=100)
    read = [r.usage.cache_read for r in rows]
    write = [r.usage.cache_write for r in rows]
    plain = [r.usage.input for r in rows]
    ax.bar(x, read, label="cache read", color="#2a9d8f")
    ax.bar(x, write, bottom=read, label="cache write", color="#e9c46a")
    ax.bar(x, plain, bottom=[a + b for a, b in zip(read, write, strict=True)], label="input")
    for r in rows:
        if r.event:
            ax.annotate(r.event, (r.request, r.prompt_tokens), ha="center", va="bottom", size=8)
    ax.set_xlabel("request")
    ax.set_ylabel("prompt tokens")
    ax.set_title(
        f"hit rate {result.hit_rate:.1%} (theoretical maximum {result.theoretical_hit_rate:.1%})"
    )
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


@one_line_errors
def bench(
    live: Annotated[
        bool, typer.Option("--live", help="Send to the real API of --provider (needs its key).")
    ] = False,
    provider: Annotated[
        str | None,
        typer.Option("--provider", "-p", help=f"With --live: one of {', '.join(PROVIDER_NAMES)}."),
    ] = None,
    model: Annotated[str | None, typer.Option(help="With --live: the model to use.")] = None,
    out: Annotated[Path, typer.Option(help="Folder for bench.json and bench.png.")] = Path(
        "results"
    ),
) -> None:
    """Run the scripted agent session and report its prompt-cache hit rate."""
    if live and provider is None:
        raise fail("--live needs --provider")
    if provider is not None and not live:
        raise fail("--provider goes with --live (the embedded session plans its own providers)")
    plan = with_provider(DEFAULT_PLAN, provider, model) if live and provider else DEFAULT_PLAN
    console = Console()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("requests", total=None if live else _EMBEDDED_REQUESTS)

        def advance(row: BenchRow) -> None:
            progress.update(task, advance=1, description=f"turn {row.turn} ({row.provider})")

        result = run_bench(plan=plan, live=live, on_request=advance)
    console.print(_table(result))
    for line in _summary(result):
        console.print(line, markup=False, soft_wrap=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench.json").write_bytes(result.to_json())
    _chart(result, out / "bench.png")
    wrote = f"wrote {out / 'bench.json'} and {out / 'bench.png'}"
    console.print(wrote, markup=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add ``bench`` to ``app``."""
    app.command("bench")(bench)
