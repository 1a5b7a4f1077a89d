"""``llmcore bench``: the main job — measured prompt-cache hits of a scripted agent session.

Runs :func:`llmcore.bench.run_bench` on the embedded emulator (never a real API unless
``--live`` is given, whatever keys are set), with a progress bar; prints one row per request
(input, cache read, cache write tokens and hit rate) and the total hit rate against the
auditor's theoretical maximum for the bodies sent; writes ``bench.json`` and a chart
(``bench.png``) to the results folder.

The results folder is checked **before anything runs** (a live run pays for every request):
it is created if missing, must be a writable folder, and ``bench.json`` / ``bench.png`` in it
must be writable files (not folders); an empty ``--out`` is refused. Any problem is one line on
stderr, exit 2. The results are written to temporary files renamed into place, so a failed
write leaves the previous results intact. A live run reads with
:data:`llmcore.bench.LIVE_TIMEOUT` (120 s) and its progress names the request it waits for.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final

import typer

from llmcore._words import plural
from llmcore.cli._common import fail, one_line_errors, require_extra
from llmcore.errors import LLMCoreError
from llmcore.providers import PROVIDER_NAMES

if TYPE_CHECKING:
    from matplotlib.backend_bases import RendererBase
    from matplotlib.figure import Figure
    from matplotlib.text import Text
    from matplotlib.transforms import Bbox
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    from llmcore.bench import BenchLeg, BenchResult, BenchRow

__all__ = ["chart_figure", "register"]

_EMBEDDED_REQUESTS = 24
"""Requests the embedded session makes (the emulator's built-in agent script)."""
_RESULT_FILES = ("bench.json", "bench.png")
"""The files written into the results folder."""


def _temp_name(target: Path) -> Path:
    return target.with_name(f".{target.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")


def _probe(folder: Path) -> None:
    """Create and remove one temporary file in ``folder`` (raises ``OSError`` if it cannot)."""
    probe = _temp_name(folder / "bench")
    os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    os.unlink(probe)


def _target_problem(target: Path) -> str | None:
    """Why ``target`` cannot be replaced by a results file, or ``None``."""
    if not os.path.lexists(target):
        return None
    if target.is_dir():
        return "is a folder"
    if not target.is_file():
        return "is not a regular file"
    return None  # replaced by a rename: only the folder must be writable (probed)


def check_out(out: str) -> Path:
    """Prepare the results folder before the session runs; return it.

    Creates the folder (and its parents) if missing, then checks it is a folder a file can be
    created in, and that ``bench.json`` and ``bench.png`` in it are not folders or read-only.

    Raises:
        typer.Exit: Code 2 after one line on stderr naming ``--out`` and what is wrong: an
            empty path, a file in the way, a path under a file, a read-only or missing
            location (``/proc``, ``/sys``), a result name taken by a folder.
    """
    if not out.strip():
        raise fail("--out is empty; name a folder for bench.json and bench.png")
    folder = Path(out)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise fail(f"--out {out}: is a file, not a folder") from None
    except NotADirectoryError:
        raise fail(f"--out {out}: a part of the path is a file, not a folder") from None
    except OSError as exc:
        raise fail(f"--out {out}: cannot create the folder ({exc.strerror or exc})") from None
    if not folder.is_dir():
        raise fail(f"--out {out}: is not a folder")
    try:
        _probe(folder)
    except OSError as exc:
        raise fail(f"--out {out}: cannot write files there ({exc.strerror or exc})") from None
    for name in _RESULT_FILES:
        problem = _target_problem(folder / name)
        if problem is not None:
            raise fail(f"--out {out}: {folder / name} {problem}")
    return folder


def _table(result: BenchResult) -> Table:
    from rich.table import Table

    table = Table(title="llmcore bench: prompt-cache hits per request")
    for name in ("req", "turn", "provider", "input", "cache read", "cache write", "hit", "event"):
        left = name in ("provider", "event")
        table.add_column(name, justify="left" if left else "right", no_wrap=left)
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
        "(Σcache_read ÷ Σ(input + cache_read + cache_write), "
        f"{plural(len(result.rows), 'request')})",
        f"theoretical maximum (auditor, bodies sent): {result.theoretical_hit_rate:.2%}",
        f"prefix-invariant breaks found by the auditor: {result.audit_breaks}",
        "reopened archive rebuilds the same next body: "
        f"{'yes' if result.reopen_identical else 'NO'}"
        f" (conversation.json {plural(result.archive_bytes, 'byte')})",
        f"requests with no cache read: {', '.join(map(str, inherent)) or 'none'}",
    ]


_LEG_COLORS: Final = ("#457b9d", "#e76f51", "#6a4c93", "#2a9d8f")
"""Background colours of the provider legs, in order (repeated when there are more)."""
_LABEL_STEP: Final = 0.07
"""Vertical distance between two rows of event labels (fraction of the axes height)."""


def _legs(rows: Sequence[BenchRow]) -> list[tuple[str, str, int, int]]:
    """The session's provider legs: (provider, model, first request, last request), in order."""
    legs: list[tuple[str, str, int, int]] = []
    for row in rows:
        if legs and legs[-1][:2] == (row.provider, row.model):
            legs[-1] = (*legs[-1][:3], row.request)
        else:
            legs.append((row.provider, row.model, row.request, row.request))
    return legs


def _place_labels(labels: Sequence[Text], renderer: RendererBase) -> None:
    """Move each label down by rows of :data:`_LABEL_STEP` until it overlaps no label before it.

    Labels are placed left to right; each starts at the top row, so a label moves down only
    when an earlier one takes its place.
    """
    placed: list[Bbox] = []
    for label in labels:
        x, top = label.get_position()
        row = 0
        while True:
            label.set_position((x, top - row * _LABEL_STEP))
            box = label.get_window_extent(renderer)
            if not any(box.overlaps(other) for other in placed):
                break
            row += 1
        placed.append(box)


def chart_figure(result: BenchResult) -> Figure:
    """The bench chart: stacked prompt tokens per request, provider legs and events.

    Each provider leg is a shaded band named (provider and model) in the legend; each event
    (``first image``, ``reopened``, ``switched``) is a dashed line before its request with its
    name in the headroom above the bars, labels moved to lower rows so no two overlap.

    Returns:
        The drawn matplotlib figure (the caller saves and closes it).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    rows = result.rows
    x = [r.request for r in rows]
    fig, ax = plt.subplots(figsize=(11, 4.8), dpi=100)
    handles: list[Any] = []
    for index, (provider, model, first, last) in enumerate(_legs(rows)):
        color = _LEG_COLORS[index % len(_LEG_COLORS)]
        ax.axvspan(first - 0.5, last + 0.5, color=color, alpha=0.12, linewidth=0)
        name = f"{provider} · {model} (requests {first}–{last})"
        handles.append(Patch(facecolor=color, alpha=0.3, label=name))
    read = [r.usage.cache_read for r in rows]
    write = [r.usage.cache_write for r in rows]
    plain = [r.usage.input for r in rows]
    ax.bar(x, read, label="cache read", color="#2a9d8f")
    ax.bar(x, write, bottom=read, label="cache write", color="#e9c46a")
    ax.bar(x, plain, bottom=[a + b for a, b in zip(read, write, strict=True)], label="input")
    tallest = max((r.prompt_tokens for r in rows), default=0) or 1
    ax.set_ylim(0, tallest * 1.45)  # the bars use the lower 69 %; event labels the rest
    labels = []
    for r in rows:
        if r.event:
            ax.axvline(r.request - 0.5, color="#555555", linestyle="--", linewidth=0.8)
            where = ax.get_xaxis_transform()  # x in requests, y in axes fraction
            labels.append(
                ax.text(
                    r.request - 0.5,
                    0.97,
                    r.event,
                    transform=where,
                    ha="center",
                    va="top",
                    size=8,
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.0},
                )
            )
    ax.set_xlabel("request")
    ax.set_ylabel("prompt tokens")
    ax.set_title(
        f"hit rate {result.hit_rate:.1%} (theoretical maximum {result.theoretical_hit_rate:.1%})"
    )
    bars, names = ax.get_legend_handles_labels()
    ax.legend(
        handles=[*bars, *handles],
        labels=[*names, *(h.get_label() for h in handles)],
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=8,
    )
    fig.tight_layout()
    fig.canvas.draw()
    _place_labels(labels, fig.canvas.get_renderer())  # type: ignore[attr-defined]
    return fig


def _chart(result: BenchResult, path: Path) -> None:
    import matplotlib.pyplot as plt

    fig = chart_figure(result)
    temp = _temp_name(path)
    try:
        fig.savefig(temp, format="png")
        os.replace(temp, path)
    finally:
        plt.close(fig)
        if temp.exists():
            temp.unlink()


def _write_json(data: bytes, path: Path) -> None:
    temp = _temp_name(path)
    try:
        temp.write_bytes(data)
        os.replace(temp, path)
    finally:
        if temp.exists():
            temp.unlink()


def _write_results(result: BenchResult, folder: Path) -> None:
    """Write ``bench.json`` and ``bench.png``, each replaced atomically; one line on failure."""
    try:
        _write_json(result.to_json(), folder / "bench.json")
        _chart(result, folder / "bench.png")
    except OSError as exc:
        where = exc.filename or folder
        raise fail(f"--out {folder}: could not write {where} ({exc.strerror or exc})") from None


def _progress(console: Console) -> Progress:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    return Progress(*columns, TimeElapsedColumn(), console=console, transient=True)


@one_line_errors
def bench(
    live: Annotated[
        bool,
        typer.Option(
            "--live", metavar="", help="Send to the real API of --provider (needs its key)."
        ),
    ] = False,
    provider: Annotated[
        str | None,
        typer.Option(
            "--provider",
            "-p",
            metavar="PROVIDER",
            help=f"With --live: one of {', '.join(PROVIDER_NAMES)}.",
        ),
    ] = None,
    model: Annotated[
        str | None, typer.Option(metavar="MODEL", help="With --live: the model to use.")
    ] = None,
    out: Annotated[
        str,
        typer.Option(
            metavar="DIR", help="Folder for bench.json and bench.png (checked before running)."
        ),
    ] = "results",
) -> None:
    """Run the scripted agent session and report its prompt-cache hit rate."""
    if live and provider is None:
        raise fail("--live needs --provider")
    if (provider is not None or model is not None) and not live:
        raise fail(
            "--provider and --model go with --live (the embedded session plans its own providers)"
        )
    require_extra("bench", "bench")
    folder = check_out(out)
    from rich.console import Console

    from llmcore import bench as session
    from llmcore.bench import DEFAULT_PLAN, LIVE_TIMEOUT, with_provider

    plan = with_provider(DEFAULT_PLAN, provider, model) if live and provider else DEFAULT_PLAN
    if live:
        _check_credentials(plan)
    console = Console()
    with _progress(console) as progress:
        task = progress.add_task("requests", total=None if live else _EMBEDDED_REQUESTS)
        read = LIVE_TIMEOUT.read

        def waiting(number: int, name: str) -> None:
            limit = f", read timeout {read:.0f} s" if live else ""
            progress.update(task, description=f"waiting for request {number} ({name}{limit})")

        def advance(row: BenchRow) -> None:
            progress.update(task, advance=1, description=f"turn {row.turn} ({row.provider})")

        result = session.run_bench(plan=plan, live=live, on_request=advance, on_send=waiting)
    console.print(_table(result))
    for line in _summary(result):
        console.print(line, markup=False, soft_wrap=True)
    _write_results(result, folder)
    wrote = f"wrote {folder / 'bench.json'} and {folder / 'bench.png'}"
    console.print(wrote, markup=False, soft_wrap=True)


def _check_credentials(plan: Sequence[BenchLeg]) -> None:
    """Resolve what each leg's first request needs before anything is sent (``prepare``).

    Raises:
        typer.Exit: A missing key, token, credential chain or cloud setting (code 2).
    """
    from llmcore import HTTPTransport, get_provider

    with HTTPTransport() as transport:
        for leg in plan:
            try:
                transport.prepare(get_provider(leg.provider), model=leg.model)
            except LLMCoreError as exc:
                raise fail(f"--live: {exc.message}") from None


def register(app: typer.Typer) -> None:
    """Add ``bench`` to ``app``."""
    app.command("bench")(bench)
