"""Start-up time of ``import llmcore`` and the ``llmcore`` command (issue 12).

Each command runs ``--runs`` times (default 21) in a fresh process; the commands take turns
(round robin), so a change in the machine's load touches every row alike. For each: the median
wall time and the median CPU time (user + system of the child, from ``getrusage``, which a busy
machine inflates far less than wall time), and both as a multiple of ``python -c pass`` measured
in the same rounds. Targets: ``import llmcore`` under 150 ms, ``llmcore --help`` and
``llmcore body`` on a small request under 300 ms; ``llmcore body`` at most 3.5× and
``llmcore --help`` at most 4× ``python -c pass`` (its page drawn without typer, click and rich:
plain, as into a pipe, and coloured, as on a terminal, ``FORCE_COLOR=1``). Every command runs
with its bytecode cached (``PYTHONDONTWRITEBYTECODE`` is dropped from the children's environment
and a warm-up run writes the cache), as an installed package starts.

``--baseline DIR`` (a source tree of another commit, e.g. from ``git archive``) measures every
command a second time, in the same rounds, with ``DIR`` first on ``PYTHONPATH``: the table shows
before and after side by side, with the ratio of the CPU medians.

Usage::

    python benchmarks/bench_startup.py [--runs 21] [--baseline DIR]
        [--out results/bench_startup.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TypedDict

ROOT = Path(__file__).resolve().parent.parent

SMALL_REQUEST = {
    "model": "claude-sonnet-4-6",
    "system": "You are terse.",
    "messages": [{"role": "user", "content": [{"type": "text", "text": "Open README.md"}]}],
}
"""The small request ``llmcore body`` builds (a system prompt and one user message)."""

TARGETS_MS = {"import llmcore": 150, "llmcore --help": 300, "llmcore body": 300}


def _commands(request: Path) -> dict[str, tuple[list[str], dict[str, str]]]:
    py = sys.executable
    script = shutil.which("llmcore", path=str(Path(py).parent)) or shutil.which("llmcore")
    cli = [script] if script else [py, "-m", "llmcore"]
    env = dict(os.environ)
    # As an installed package starts: its modules' bytecode cached (the warm-up run writes it).
    # Without the cache each start compiles every llmcore module again, while the installed
    # dependencies (typer, rich) load the bytecode pip compiled.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return {
        "python -c pass": ([py, "-c", "pass"], env),
        "import llmcore": ([py, "-c", "import llmcore"], env),
        "from llmcore import Request, get_provider": (
            [py, "-c", "from llmcore import Request, get_provider"],
            env,
        ),
        "from llmcore import HTTPTransport": ([py, "-c", "from llmcore import HTTPTransport"], env),
        "llmcore --version": ([*cli, "--version"], env),
        "llmcore --help": ([*cli, "--help"], env),
        "llmcore --help (FORCE_COLOR=1)": ([*cli, "--help"], {**env, "FORCE_COLOR": "1"}),
        "llmcore --help (TYPER_USE_RICH=0)": ([*cli, "--help"], {**env, "TYPER_USE_RICH": "0"}),
        "llmcore body": ([*cli, "body", "-p", "anthropic", str(request)], env),
    }


def _run_once(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Run ``command`` in ``cwd`` (not the source tree, which ``python -c`` would import from)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr.decode(errors='replace')}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


class Row(TypedDict):
    """One command's medians (ms), as multiples of ``python -c pass``, and its target (ms)."""

    wall_ms: float
    cpu_ms: float
    wall_x_python: float
    cpu_x_python: float
    target_ms: int | None


BASELINE = " [baseline]"
"""Suffix of a command's name when it runs the baseline tree."""


def _with_baseline(
    commands: dict[str, tuple[list[str], dict[str, str]]], baseline: Path
) -> dict[str, tuple[list[str], dict[str, str]]]:
    """Each command, and (but ``python -c pass``) again with ``baseline`` first on the path."""
    both = dict(commands)
    for name, (command, env) in commands.items():
        if name != "python -c pass":
            path = os.pathsep.join(filter(None, [str(baseline), env.get("PYTHONPATH")]))
            both[name + BASELINE] = (command, {**env, "PYTHONPATH": path})
    return both


def measure(runs: int, baseline: Path | None = None) -> dict[str, Row]:
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        request = Path(tmp) / "request.json"
        request.write_text(json.dumps(SMALL_REQUEST), encoding="utf-8")
        commands = _commands(request)
        if baseline is not None:
            commands = _with_baseline(commands, baseline)
        walls: dict[str, list[float]] = {name: [] for name in commands}
        cpus: dict[str, list[float]] = {name: [] for name in commands}
        for command, env in commands.values():  # warm the file cache once
            _run_once(command, env, Path(tmp))
        for _ in range(runs):
            for name, (command, env) in commands.items():
                wall, cpu = _run_once(command, env, Path(tmp))
                walls[name].append(wall)
                cpus[name].append(cpu)
    base_wall = statistics.median(walls["python -c pass"])
    base_cpu = statistics.median(cpus["python -c pass"])
    rows: dict[str, Row] = {}
    for name in commands:
        wall, cpu = statistics.median(walls[name]), statistics.median(cpus[name])
        rows[name] = {
            "wall_ms": round(wall * 1000, 1),
            "cpu_ms": round(cpu * 1000, 1),
            "wall_x_python": round(wall / base_wall, 2),
            "cpu_x_python": round(cpu / base_cpu, 2),
            "target_ms": TARGETS_MS.get(name.removesuffix(BASELINE)),
        }
    return rows


def _print_table(rows: dict[str, Row]) -> None:
    names = [name for name in rows if not name.endswith(BASELINE)]
    if not any(name.endswith(BASELINE) for name in rows):
        header = f"{'command':44} {'wall ms':>8} {'cpu ms':>8} {'× pass':>7} {'cpu ×':>6}"
        print(f"{header} {'target':>7}")
        for name in names:
            row = rows[name]
            target = f"{row['target_ms']}" if row["target_ms"] else ""
            print(
                f"{name:44} {row['wall_ms']:8.1f} {row['cpu_ms']:8.1f}"
                f" {row['wall_x_python']:7.2f} {row['cpu_x_python']:6.2f} {target:>7}"
            )
        return
    print(
        f"{'command':44} {'base wall':>9} {'base cpu':>9} {'wall ms':>8} {'cpu ms':>8}"
        f" {'cpu ÷':>6} {'target':>7}"
    )
    for name in names:
        row, base = rows[name], rows.get(name + BASELINE, rows[name])
        target = f"{row['target_ms']}" if row["target_ms"] else ""
        print(
            f"{name:44} {base['wall_ms']:9.1f} {base['cpu_ms']:9.1f} {row['wall_ms']:8.1f}"
            f" {row['cpu_ms']:8.1f} {base['cpu_ms'] / row['cpu_ms']:6.2f} {target:>7}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21, help="runs of each command")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "bench_startup.json")
    parser.add_argument(
        "--baseline", type=Path, help="a source tree to measure beside this one (before/after)"
    )
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    rows = measure(args.runs, args.baseline)
    load_after = os.getloadavg()[0]
    loads = f"load average {load_before:.1f} → {load_after:.1f}"
    print(f"start-up, median of {args.runs} runs ({loads})")
    _print_table(rows)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "runs": args.runs,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_average": [round(load_before, 2), round(load_after, 2)],
        "baseline": str(args.baseline) if args.baseline else None,
        "rows": rows,
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
