"""The archive's reliability harness at full size (SPEC A7–A9, A12).

Scenarios (``tests/archive/reliability.py``; the test suite runs a sample of each):

* SIGKILL right before every file-system call index of a save — fresh, grow, shrink;
* SIGKILL at random moments (``--kills``, default 10,000), cycling the three saves;
* ``ENOSPC``, ``EIO`` and ``EACCES`` raised by the ``os`` functions themselves (and
  ``fcntl.flock``) at every call index of each save;
* two processes opening one archive and saving different changes at once (``--rounds``, 500);
* opens while another process saves in a loop (``--reads``, 5,000);
* mutated ``conversation.json`` files through ``open`` (``--mutations``, 100,000; 1,000,000
  with ``--mutations 1000000``).

The chat surface (``tests/chat/reliability.py``, SPEC S2, S6, R2):

* junk files in the sessions folder (``--junk`` sets, default 2,000): pointer names that are
  not a pid, 100,000-deep JSON, bad ids, binary, beside one valid session;
* SIGKILL right before every step of a turn (each ``os`` call, lock and terminal write);
* Ctrl+C at every ``--sigint-stride``-th Python call of a turn (default 200 of about 43,000).

Columns: cases, torn archives (or session files, or a cut turn kept), lost updates (or a turn
shown but not saved), deleted-but-referenced images, leftovers after the next save (or start),
unexpected exceptions and tracebacks, hangs (over 2 s; a chat child still running after 60 s),
escapes (a file outside the workspace changed) and peak RSS over a clean run's. Every loss,
escape, hang and traceback column must be 0.

The chat surface (``tests/chat/hostile.py``), in a second table: hostile tool calls (paths,
links, FIFOs, sockets, devices, sizes, encodings, arguments, a 1,200-level tree) × every tool;
random hostile paths (``--paths``, default 2,000); a FIFO, socket, device, sparse 3 GiB file,
folder or symlink placed where a session file, pointer, ``conversation.json``, request file or
tracked file is read, and ``llmcore verify``. Columns: cases, escapes, lost, unexpected
(tracebacks), hangs, peak RSS over baseline (MiB). Every column but RSS must be 0, RSS < 64.

Usage::

    python benchmarks/bench_reliability.py [--kills 10000] [--rounds 500] [--reads 5000]
        [--mutations 100000] [--paths 2000] [--junk 2000] [--sigint-stride 200] [--seed 2026]
        [--out results/bench_reliability.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.archive import reliability  # noqa: E402 - the harness lives beside its tests
from tests.chat import hostile  # noqa: E402
from tests.chat import reliability as chat_reliability  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=10_000, help="random-moment SIGKILLs")
    parser.add_argument("--rounds", type=int, default=500, help="two-saver rounds")
    parser.add_argument("--reads", type=int, default=5_000, help="opens during saves")
    parser.add_argument("--mutations", type=int, default=100_000, help="mutated files opened")
    parser.add_argument("--paths", type=int, default=2_000, help="fuzzed hostile tool paths")
    parser.add_argument("--junk", type=int, default=2_000, help="junk sets in the sessions folder")
    parser.add_argument("--sigint-stride", type=int, default=200, help="Ctrl+C every n-th call")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "bench_reliability.json")
    args = parser.parse_args()
    console = Console(width=120)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-reliability-") as tmp:
        rows = reliability.run_all(
            Path(tmp),
            random_count=args.kills,
            rounds=args.rounds,
            reads=args.reads,
            mutations=args.mutations,
            seed=args.seed,
            progress=lambda row: console.log(f"{row.scenario}: {row.cases:,} cases"),
        )
        rows += _chat_rows(Path(tmp), args, console)
    table = Table(title="Archive reliability (every loss column must be 0)")
    for column in (
        "scenario",
        "cases",
        "torn",
        "lost updates",
        "deleted, referenced",
        "leftovers",
        "unexpected",
        "hangs",
        "escapes",
        "peak RSS over baseline",
        "s",
    ):
        table.add_column(column, justify="left" if column == "scenario" else "right")
    for row in rows:
        table.add_row(
            row.scenario,
            f"{row.cases:,}",
            *(
                str(v)
                for v in (
                    row.torn,
                    row.lost,
                    row.deleted_referenced,
                    row.leftovers,
                    row.unexpected,
                    row.hangs,
                )
            ),
            *_chat_columns(row),
            f"{row.seconds:.1f}",
        )
    console.print(table)
    for row in rows:
        for note in row.notes:
            console.print(f"[red]{row.scenario}: {note}")
    chat_rows = chat_surface(console, paths=args.paths, seed=args.seed)
    results = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "seconds": round(time.perf_counter() - started, 1),
        "arguments": {k: v for k, v in vars(args).items() if k != "out"},
        "rows": [dataclasses.asdict(row) for row in rows],
        "chat_surface_rows": [dataclasses.asdict(row) for row in chat_rows],
        "all_clean": all(row.clean for row in rows) and all(row.clean for row in chat_rows),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    console.print(f"wrote {args.out}")
    return 0 if results["all_clean"] else 1


def chat_surface(console: Console, *, paths: int, seed: int) -> list[hostile.HostileRow]:
    """Run and print the chat-surface rows (hostile tool calls and placed files)."""
    with tempfile.TemporaryDirectory(prefix="bench-chat-surface-") as tmp:
        rows = hostile.run_all(
            Path(tmp),
            paths=paths,
            seed=seed,
            progress=lambda row: console.log(f"{row.scenario}: {row.cases:,} cases"),
        )
    table = Table(title="Chat surface (every column but RSS must be 0; RSS under 64 MiB)")
    columns = ("scenario", "cases", "escapes", "lost", "unexpected", "hangs", "peak RSS MiB", "s")
    for column in columns:
        table.add_column(column, justify="left" if column == "scenario" else "right")
    for row in rows:
        counts = (row.escapes, row.lost, row.unexpected, row.hangs)
        table.add_row(
            row.scenario,
            f"{row.cases:,}",
            *(str(v) for v in counts),
            f"{row.peak_rss_mib:.1f}",
            f"{row.seconds:.1f}",
        )
    console.print(table)
    for row in rows:
        for note in row.notes:
            console.print(f"[red]{row.scenario}: {note}")
    return rows


def _chat_rows(work: Path, args: argparse.Namespace, console: Console) -> list:
    """The chat surface's rows (junk, SIGKILL and Ctrl+C at the steps of a turn)."""
    return chat_reliability.run_all(
        work / "chat",
        junk=args.junk,
        seed=args.seed,
        stride=args.sigint_stride,
        progress=lambda row: console.log(f"{row.scenario}: {row.cases:,} cases"),
    )


def _chat_columns(row: object) -> tuple[str, str]:
    """Escapes and peak RSS over baseline (MiB) of a chat row; dashes for the archive's rows."""
    if not isinstance(row, chat_reliability.ChatRow):
        return "–", "–"
    return str(row.escapes), f"{row.peak_rss_over_baseline / 2**20:.1f} MiB"


if __name__ == "__main__":
    raise SystemExit(main())
