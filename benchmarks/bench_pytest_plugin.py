"""What the pytest plugin costs a test run: blocked, installed but off, and on (SPEC V3).

Generates a suite of trivial tests plus tests that each replay a two-request cassette through
vcrpy and httpx, then runs ``python -m pytest`` on it in a fresh process, side by side and
interleaved, in three modes:

* ``blocked`` — ``-p no:llmcore``: the entry point is not loaded (the baseline);
* ``off`` — the plugin installed but not turned on (what every project with llmcore installed
  pays: loading the entry point, which imports the ``llmcore`` package);
* ``on`` — ``--llmcore-audit``: every cassette audited.

Children run with bytecode caching on (in a temporary ``PYTHONPYCACHEPREFIX``, after one
uncounted warm-up run per mode), as in a normal install. Prints a table of medians (wall time
and CPU time, user + system, of the whole process; CPU time is the steadier on a shared
machine) with the CPU ratio to ``blocked``, and writes ``results/bench_pytest_plugin.json``.
Also times ``import llmcore`` and then ``import llmcore.pytest_plugin`` inside a fresh process
that has imported pytest.

Run: ``python benchmarks/bench_pytest_plugin.py [--plain N] [--cassettes N] [--repeat N]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from llmcore import jsonbytes

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.plugin._cassettes import STABLE, URL, write_cassette  # noqa: E402

MODES = {"blocked": ["-p", "no:llmcore"], "off": [], "on": ["--llmcore-audit"]}

REPLAY_TEST = """
import httpx
import vcr

BODIES = {bodies!r}


@vcr.use_cassette("cassettes/c{n}.yaml", record_mode="none")
def test_replay_{n}():
    with httpx.Client() as client:
        for body in BODIES:
            client.post({url!r}, content=body)
"""


def _suite(folder: Path, plain: int, cassettes: int) -> None:
    lines = [f"def test_plain_{i}():\n    assert {i} + 1 == {i + 1}\n" for i in range(plain)]
    (folder / "test_plain.py").write_text("\n\n".join(lines), encoding="utf-8")
    for n in range(cassettes):
        write_cassette(folder / "cassettes" / f"c{n}.yaml", STABLE)
        (folder / f"test_replay_{n}.py").write_text(
            REPLAY_TEST.format(bodies=STABLE, url=URL, n=n), encoding="utf-8"
        )


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _env(cache: Path) -> dict[str, str]:
    """The children's environment: bytecode cached (in ``cache``), as in a normal install."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    return env


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one pytest process."""
    cpu, start = _cpu(), time.perf_counter()
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    elapsed, used = time.perf_counter() - start, _cpu() - cpu
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return elapsed, used


IMPORTS = """
import time
import pytest
start = time.perf_counter()
import llmcore
middle = time.perf_counter()
import llmcore.pytest_plugin
print(middle - start, time.perf_counter() - middle)
"""


def _import_times(cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Seconds to import ``llmcore``, then ``llmcore.pytest_plugin``, in a fresh process.

    pytest is imported first: under pytest it is loaded before any plugin.
    """
    done = subprocess.run(
        [sys.executable, "-c", IMPORTS],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    package, plugin = done.stdout.split()
    return float(package), float(plugin)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plain", type=int, default=200, help="trivial tests")
    parser.add_argument("--cassettes", type=int, default=20, help="tests replaying a cassette")
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()

    times: dict[str, list[tuple[float, float]]] = {mode: [] for mode in MODES}
    imports: dict[str, list[float]] = {"import llmcore": [], "+ llmcore.pytest_plugin": []}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "suite"
        folder.mkdir()
        _suite(folder, options.plain, options.cassettes)
        env = _env(Path(tmp) / "pycache")
        base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"]
        for extra in MODES.values():  # warm-up, not counted: writes the bytecode cache
            _run([*base, *extra], folder, env)
        for _ in range(options.repeat):
            for mode, extra in MODES.items():  # interleaved: load drifts hit every mode alike
                times[mode].append(_run([*base, *extra], folder, env))
            package, plugin = _import_times(folder, env)
            imports["import llmcore"].append(package)
            imports["+ llmcore.pytest_plugin"].append(plugin)

    def medians(mode: str) -> tuple[float, float]:
        return (
            statistics.median(w for w, _ in times[mode]),
            statistics.median(c for _, c in times[mode]),
        )

    blocked_wall, blocked_cpu = medians("blocked")
    table = Table(
        title=f"pytest on {options.plain} plain + {options.cassettes} cassette tests "
        f"(median of {options.repeat})"
    )
    for column in ("mode", "wall s", "CPU s", "CPU × blocked", "extra CPU s"):
        table.add_column(column, justify="left" if column == "mode" else "right")
    rows = []
    for mode in MODES:
        wall, cpu = medians(mode)
        rows.append({"mode": mode, "wall_s": wall, "cpu_s": cpu, "cpu_ratio": cpu / blocked_cpu})
        table.add_row(
            mode,
            f"{wall:.2f}",
            f"{cpu:.2f}",
            f"{cpu / blocked_cpu:.2f}",
            f"{cpu - blocked_cpu:+.2f}",
        )
    for name, samples in imports.items():
        table.add_row(name, f"{statistics.median(samples):.3f}", "", "", "")
    Console().print(table)

    out = ROOT / "results" / "bench_pytest_plugin.json"
    out.parent.mkdir(exist_ok=True)
    out.write_bytes(
        jsonbytes.dumps(
            {
                "plain_tests": options.plain,
                "cassette_tests": options.cassettes,
                "repeat": options.repeat,
                "modes": rows,
                "imports_median_s": {k: statistics.median(v) for k, v in imports.items()},
            }
        )
        + b"\n"
    )
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
