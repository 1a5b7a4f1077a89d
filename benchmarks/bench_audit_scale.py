"""``llmcore audit`` at scale: 1 and 2 worker processes and a local Dask cluster (issue 24).

Two inputs, each measured in one run beside its floors:

* a generated keyed gateway log (JSONL envelopes of interleaved conversations,
  ``tests/audit/keyed_logs.py``) of ``--size`` bytes (1 GB for the real measurement);
* a folder of cassettes: ``tests/real_traffic`` copied ``--copies`` times (10 by default);
* an OpenAI Responses log of ``--responses-size`` bytes (30 MB by default; 0 leaves it out):
  60 conversation keys, each line naming its key's last response and one in twenty its paired
  key's (``tests/audit/keyed_logs.py``), so response chains join the keys in 30 pairs.

Rows: the floors (``read``: the bytes read from disk; ``parse``: read + each line's
``orjson.loads``, or each cassette's libyaml ``CSafeLoader`` load and its bodies'
``json.loads``), then ``--jobs 1`` (:func:`llmcore.audit.audit_paths`), for cassettes
``--jobs 1`` again with the reader before :mod:`llmcore.audit._vcr_yaml` (every file read whole by
PyYAML's safe loader, parsed bodies written by :func:`llmcore.jsonbytes.dumps`; same report
checked), ``--jobs 2`` (:func:`llmcore.audit.jobs.audit_jobs`), the ceiling (two processes each
running ``--jobs 1`` on the whole input at once: its "× ``--jobs 1``" is twice the work over
the time, what this machine's 2 cores give this work with nothing shared or merged) and the
local cluster (:func:`llmcore.audit.engine.audit_dask` on a :class:`distributed.LocalCluster`
of 2 worker processes, started before the clock, after the other rows; JSONL only: the engine
reads no cassettes). The rows of one input run interleaved, ``--repeats`` rounds of one run
each. Each row gives seconds (the median), MB/s, requests/s and the speed-up over ``--jobs 1``,
and — because the machine may be shared — what load does not change: CPU seconds (user +
system) of this process and of the worker processes (``--jobs 2`` forks them, so they are this
process's children), CPU seconds per MB, the parent's share of the CPU, and for ``--jobs 2``
the speed-up the CPU seconds allow when each worker has a core of its own (``--jobs 1``'s CPU
seconds over half of ``--jobs 2``'s), with the 1-minute load average of each run. The reports
of ``--jobs 2`` and the cluster are checked equal to ``--jobs 1``. Prints a table and writes
``results/bench_audit_scale.json``.

Run: ``python benchmarks/bench_audit_scale.py [--size BYTES] [--copies N] [--responses-size BYTES]
[--repeats N] [--no-cluster] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from llmcore import jsonbytes  # noqa: E402
from llmcore.audit import AuditReport, _cassette, _vcr_yaml, audit_paths  # noqa: E402
from llmcore.audit.jobs import audit_jobs  # noqa: E402
from tests.audit.keyed_logs import keyed_log, paired_responses_log  # noqa: E402

REAL = ROOT / "tests" / "real_traffic"
GOAL = 1.8
"""``--jobs 2`` over ``--jobs 1`` on 2 cores (issue 24)."""
READER_GOAL = 3.0
"""``--jobs 1`` on cassettes with the vcrpy reader over the PyYAML-only reader (issue 24)."""
PYYAML_ROW = "--jobs 1, PyYAML reader (before)"


def audit_with_pyyaml(paths: list[Path]) -> AuditReport:
    """``--jobs 1`` with the cassette reader before :mod:`llmcore.audit._vcr_yaml`.

    Every cassette is read whole by PyYAML's safe loader (response headers included), and
    each parsed body written by :func:`llmcore.jsonbytes.dumps` (the writer before
    :func:`llmcore.audit._cassette.json_bytes`).
    """
    fast, flagged, writer = _vcr_yaml.load, _vcr_yaml.load_flagged, _cassette.json_bytes
    _vcr_yaml.load = _vcr_yaml.load_flagged = lambda data, **options: None
    _cassette.json_bytes = jsonbytes.dumps
    try:
        return audit_paths(paths)
    finally:
        _vcr_yaml.load, _vcr_yaml.load_flagged, _cassette.json_bytes = fast, flagged, writer


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def write_log(path: Path, size: int) -> None:
    """Write a keyed log of about ``size`` bytes in pieces (bounded memory)."""
    piece = min(size, 32 * 1024 * 1024)
    written, seed = 0, 0
    with path.open("wb") as file:
        while written < size:
            data = keyed_log(seed, conversations=40, turns=24, size=min(piece, size - written))
            file.write(data)
            written += len(data)
            seed += 1


def write_responses(path: Path, size: int, keys: int = 60) -> None:
    """Write an OpenAI Responses log of about ``size`` bytes: ``keys`` conversation keys whose
    chains join them in pairs (the partitions must keep each pair together)."""
    written, seed = 0, 0
    with path.open("wb") as file:
        while written < size:
            data = paired_responses_log(seed, 2_000, keys, f"piece{seed}")
            file.write(data)
            written += len(data)
            seed += 1


def copy_folder(target: Path, copies: int) -> None:
    for n in range(copies):
        shutil.copytree(REAL, target / f"copy{n:02d}", ignore=shutil.ignore_patterns("*.py"))


def files_of(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    for path in paths:
        out.extend(sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path])
    return out


def read_floor(paths: list[Path]) -> int:
    total = 0
    for file in files_of(paths):
        with file.open("rb") as handle:
            while chunk := handle.read(8 * 1024 * 1024):
                total += len(chunk)
    return total


def parse_jsonl(paths: list[Path]) -> int:
    count = 0
    for file in files_of(paths):
        with file.open("rb") as handle:
            for line in handle:
                if line.strip():
                    orjson.loads(line)
                    count += 1
    return count


def parse_cassettes(paths: list[Path]) -> int:
    count = 0
    for file in files_of(paths):
        if file.suffix not in (".yaml", ".yml"):
            continue
        try:
            doc = yaml.load(file.read_bytes(), Loader=yaml.CSafeLoader)
        except yaml.YAMLError:
            continue
        for item in (doc or {}).get("interactions", []) if isinstance(doc, dict) else []:
            body = (
                ((item or {}).get("request") or {}).get("body") if isinstance(item, dict) else None
            )
            text = body.get("string") if isinstance(body, dict) else body
            if isinstance(text, str | bytes) and text:
                try:
                    json.loads(text)
                    count += 1
                except ValueError:
                    pass
    return count


CEILING_ROW = "ceiling: 2 × --jobs 1 at once"
"""Two processes each auditing the whole input at the same time: what 2 cores give this very
work with nothing shared and nothing to merge (the most ``--jobs 2`` can reach here)."""


def two_at_once(paths: list[Path]) -> None:
    """Run :func:`audit_paths` on ``paths`` in two processes at once; wait for both."""
    context = multiprocessing.get_context("fork")
    processes = [context.Process(target=audit_paths, args=(paths,)) for _ in range(2)]
    for process in processes:
        process.start()
    for process in processes:
        process.join()
        if process.exitcode != 0:
            raise RuntimeError(f"an audit of the ceiling row exited {process.exitcode}")


def cpu_seconds() -> tuple[float, float]:
    """CPU seconds (user + system) of this process and of its waited-for children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


def run_once(run: Callable[[], Any]) -> tuple[dict[str, float | None], Any]:
    """One run: wall seconds, CPU seconds of this process and of the workers, load average.

    The workers' CPU is seen when they are this process's children (``--jobs`` forks them
    from a process that runs one thread); else it is ``None``.
    """
    forks = threading.active_count() == 1
    cpu0, start = cpu_seconds(), time.perf_counter()
    result = run()
    wall, cpu1 = time.perf_counter() - start, cpu_seconds()
    return {
        "wall": wall,
        "parent": cpu1[0] - cpu0[0],
        "workers": cpu1[1] - cpu0[1] if forks else None,
        "load": os.getloadavg()[0],
    }, result


def rounds(
    runs: dict[str, Callable[[], Any]], repeats: int
) -> dict[str, tuple[list[dict[str, float | None]], Any]]:
    """Every run ``repeats`` times, interleaved (one of each per round, the order turning)."""
    got: dict[str, tuple[list[dict[str, float | None]], Any]] = {k: ([], None) for k in runs}
    names = list(runs)
    for r in range(repeats):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            sample, result = run_once(runs[name])
            got[name][0].append(sample)
            got[name] = (got[name][0], result)
    return got


def median(samples: list[dict[str, float | None]], key: str) -> float | None:
    values = [v for s in samples if (v := s[key]) is not None]
    return statistics.median(values) if len(values) == len(samples) else None


def measure(
    name: str,
    paths: list[Path],
    repeats: int,
    cluster: Callable[[], Any] | None,
    jsonl: bool,
    ceiling: bool = True,
) -> dict[str, Any]:
    """The rows of one input (see the module); ``cluster`` starts the Dask client, if any.

    ``ceiling`` adds :data:`CEILING_ROW` (its "× --jobs 1" is the speed-up of two processes
    doing twice the work over one doing it once).
    """
    size = sum(p.stat().st_size for p in files_of(paths))
    mb = size / 1e6
    rows: list[dict[str, Any]] = []

    def row(
        label: str, samples: list[dict[str, float | None]], requests: int, equal: bool | None
    ) -> None:
        seconds = max(median(samples, "wall") or 0.0, 1e-9)
        parent, workers = median(samples, "parent"), median(samples, "workers")
        total = None if parent is None or workers is None else parent + workers
        rows.append(
            {
                "row": label,
                "seconds": round(seconds, 4),
                "_raw": seconds,
                "mb_per_s": round(mb / seconds, 2),
                "requests_per_s": round(requests / seconds, 1),
                "equal_to_jobs_1": equal,
                "load_average_1min": round(median(samples, "load") or 0.0, 2),
                "cpu_s": None if total is None else round(total, 3),
                "cpu_s_parent": None if parent is None else round(parent, 3),
                "cpu_s_workers": None if workers is None else round(workers, 3),
                "cpu_s_per_mb": None if total is None else round(total / mb, 4),
                "parent_share_of_cpu": (
                    None if not total or parent is None else round(parent / total, 3)
                ),
            }
        )

    parse = parse_jsonl if jsonl else parse_cassettes
    runs: dict[str, Callable[[], Any]] = {
        "floor: read bytes": lambda: read_floor(paths),
        "floor: parse only": lambda: parse(paths),
    }
    if not jsonl:  # the same audit with today's reader and with the one before, side by side
        runs[PYYAML_ROW] = lambda: audit_with_pyyaml(paths)
    runs["--jobs 1"] = lambda: audit_paths(paths)
    runs["--jobs 2"] = lambda: audit_jobs(paths, jobs=2)
    if ceiling:
        runs[CEILING_ROW] = lambda: two_at_once(paths)
    got = rounds(runs, repeats)
    baseline: AuditReport = got["--jobs 1"][1]
    expected, requests = baseline.to_json(), len(baseline.requests)
    for label, (samples, result) in got.items():
        if label == "floor: read bytes":
            row(label, samples, 0, None)
        elif label == "floor: parse only":
            row(label, samples, result, None)
        elif label == CEILING_ROW:
            row(label, samples, 2 * requests, None)
        else:
            row(label, samples, requests, result.to_json() == expected)
    if cluster is not None and jsonl:  # after the rounds: its threads would stop the forks
        from llmcore.audit.engine import audit_dask

        client = cluster()
        urls = [str(p) for p in paths]
        samples = []
        for _ in range(repeats):
            sample, report = run_once(lambda: audit_dask(urls, scheduler=client))
            samples.append(sample | {"workers": None})
        row("dask LocalCluster (2 processes)", samples, requests, report.to_json() == expected)
    _ratios(rows)
    return {"input": name, "bytes": size, "requests": requests, "rows": rows}


def _ratios(rows: list[dict[str, Any]]) -> None:
    """Give each row its speed-up over ``--jobs 1`` (and ``--jobs 2`` its CPU-bound one)."""
    one = next(r for r in rows if r["row"] == "--jobs 1")
    one_seconds, one_cpu = one["_raw"], one["cpu_s"]
    for r in rows:
        r["speedup_over_jobs_1"] = round(one_seconds / r.pop("_raw"), 2)
        if r["row"] == "--jobs 2" and r["cpu_s"] and one_cpu:
            # the speed-up if each worker had a core of its own: load-robust
            r["cpu_bound_speedup"] = round(one_cpu / (r["cpu_s"] / 2), 2)
        if r["row"] == CEILING_ROW:  # twice the work: what 2 processes give over 1
            r["speedup_over_jobs_1"] = round(2 * r["speedup_over_jobs_1"], 2)


def table(results: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    out = Table(title="llmcore audit at scale (medians)")
    columns = ("input", "row", "s", "MB/s", "requests/s", "× jobs 1", "same report")
    for column in (*columns, "CPU s", "CPU s/MB", "parent", "× jobs 1 (CPU)", "load"):
        out.add_column(column, justify="left" if column in ("input", "row") else "right")

    def number(value: float | None, form: str) -> str:
        return "" if value is None else format(value, form)

    for result in results:
        for r in result["rows"]:
            out.add_row(
                f"{result['input']} ({result['bytes'] / 1e6:,.0f} MB)",
                r["row"],
                f"{r['seconds']:.2f}",
                f"{r['mb_per_s']:.1f}",
                f"{r['requests_per_s']:,.0f}" if r["requests_per_s"] else "",
                f"{r['speedup_over_jobs_1']:.2f}",
                "" if r["equal_to_jobs_1"] is None else str(r["equal_to_jobs_1"]).lower(),
                number(r["cpu_s"], ".2f"),
                number(r["cpu_s_per_mb"], ".4f"),
                number(r["parent_share_of_cpu"], ".0%"),
                number(r.get("cpu_bound_speedup"), ".2f"),
                f"{r['load_average_1min']:.1f}",
            )
    Console(width=170).print(out)


class _Cluster:
    """A local Dask cluster of 2 worker processes, started when first asked for."""

    def __init__(self) -> None:
        self.started: tuple[Any, Any] | None = None

    def __call__(self) -> Any:
        if self.started is None:
            from distributed import Client, LocalCluster

            cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0")
            self.started = (cluster, Client(cluster))
        return self.started[1]

    def close(self) -> None:
        if self.started is not None:
            self.started[1].close()
            self.started[0].close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1_000_000_000, help="keyed log bytes")
    parser.add_argument("--copies", type=int, default=10, help="copies of tests/real_traffic")
    parser.add_argument(
        "--responses-size", type=int, default=30_000_000, help="Responses log bytes (0: none)"
    )
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--no-cluster", action="store_true", help="leave the Dask row out")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "bench_audit_scale.json")
    args = parser.parse_args()
    started = load()
    cluster = None if args.no_cluster else _Cluster()
    results = []
    try:  # the cassettes first: the cluster's threads, once started, stop --jobs forking
        with tempfile.TemporaryDirectory(prefix="bench-audit-scale-") as tmp:
            folder = Path(tmp) / "cassettes"
            copy_folder(folder, args.copies)
            name = f"tests/real_traffic ×{args.copies}"
            results.append(measure(name, [folder], args.repeats, None, False))
            shutil.rmtree(folder)
            if args.responses_size:
                chained = Path(tmp) / "responses.jsonl"
                write_responses(chained, args.responses_size)
                name = "Responses JSONL, chained keys"
                results.append(measure(name, [chained], args.repeats, None, True))
                chained.unlink()
            log = Path(tmp) / "gateway.jsonl"
            write_log(log, args.size)
            results.append(measure("keyed JSONL", [log], args.repeats, cluster, True))
    finally:
        if cluster is not None:
            cluster.close()
    summary = {
        "benchmark": "bench_audit_scale",
        "cores": len(os.sched_getaffinity(0)),
        "load_average_before": started,
        "load_average_after": load(),
        "goal_jobs_2_over_jobs_1": GOAL,
        "results": results,
    }
    table(results)
    print(f"load average (1, 5, 15 min): before {started}, after {summary['load_average_after']}")
    cassettes = results[0]["rows"]
    old = next(r for r in cassettes if r["row"] == PYYAML_ROW)["mb_per_s"]
    new = next(r for r in cassettes if r["row"] == "--jobs 1")["mb_per_s"]
    verdict = "met" if new >= READER_GOAL * old else "not met"
    summary["cassette_reader_ratio"] = round(new / old, 2)
    print(f"cassettes: --jobs 1 reads {new / old:.2f}× the MB/s of the PyYAML reader ({verdict})")
    for result in results:
        two = next(r for r in result["rows"] if r["row"] == "--jobs 2")
        verdict = "met" if two["speedup_over_jobs_1"] >= GOAL else "not met"
        bound = two.get("cpu_bound_speedup")
        cpu = "" if bound is None else f"; {bound:.2f}× from CPU seconds, on cores of its own"
        top = next((r for r in result["rows"] if r["row"] == CEILING_ROW), None)
        if top is not None:
            cpu += f"; two audits at once run {top['speedup_over_jobs_1']:.2f}× one"
        print(
            f"{result['input']}: --jobs 2 is {two['speedup_over_jobs_1']:.2f}× --jobs 1"
            f" ({verdict}{cpu}; load {two['load_average_1min']:.1f})"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(jsonbytes.dumps(summary, indent=2) + b"\n")
    print(f"results written to {args.out}")


if __name__ == "__main__":
    main()
