"""``llmcore audit`` at scale: 1 and 2 worker processes and a local Dask cluster (issue 24).

Two inputs, each measured in one run beside its floors:

* a generated keyed gateway log (JSONL envelopes of interleaved conversations,
  ``tests/audit/keyed_logs.py``) of ``--size`` bytes (1 GB for the real measurement);
* a folder of cassettes: ``tests/real_traffic`` copied ``--copies`` times (10 by default).

Rows: the floors (``read``: the bytes read from disk; ``parse``: read + each line's
``orjson.loads``, or each cassette's libyaml ``CSafeLoader`` load and its bodies'
``json.loads``), then ``--jobs 1`` (:func:`llmcore.audit.audit_paths`), for cassettes
``--jobs 1`` again with the reader before :mod:`llmcore.audit._vcr_yaml` (every file read
whole by PyYAML's safe loader, parsed bodies written by :func:`llmcore.jsonbytes.dumps`; same
report checked), ``--jobs 2``
(:func:`llmcore.audit.jobs.audit_jobs`) and the local cluster (:func:`llmcore.audit.engine.
audit_dask` on a :class:`distributed.LocalCluster` of 2 worker processes, started before the
clock; JSONL only: the engine reads no cassettes). Each row gives seconds (the median of
``--repeats``), MB/s, requests/s and the speed-up over ``--jobs 1``; the reports of
``--jobs 2`` and the cluster are checked equal to ``--jobs 1``. The load average is taken
before and after (the machine may be shared). Prints a table and writes
``results/bench_audit_scale.json``.

Run: ``python benchmarks/bench_audit_scale.py [--size BYTES] [--copies N] [--repeats N]
[--no-cluster] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
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
from tests.audit.keyed_logs import keyed_log  # noqa: E402

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
    fast, writer = _vcr_yaml.load, _cassette.json_bytes
    _vcr_yaml.load = lambda data, **options: None
    _cassette.json_bytes = jsonbytes.dumps
    try:
        return audit_paths(paths)
    finally:
        _vcr_yaml.load, _cassette.json_bytes = fast, writer


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


def timed(run: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def interleaved(paths: list[Path], repeats: int) -> tuple[float, AuditReport, float, AuditReport]:
    """Median seconds and report of :func:`audit_paths` and of :func:`audit_with_pyyaml`,
    timed in turns (one of each per repeat)."""
    now: list[float] = []
    then: list[float] = []
    for _ in range(repeats):
        start = time.perf_counter()
        report = audit_paths(paths)
        now.append(time.perf_counter() - start)
        start = time.perf_counter()
        old = audit_with_pyyaml(paths)
        then.append(time.perf_counter() - start)
    return statistics.median(now), report, statistics.median(then), old


def measure(
    name: str, paths: list[Path], repeats: int, cluster: Any | None, jsonl: bool
) -> dict[str, Any]:
    size = sum(p.stat().st_size for p in files_of(paths))
    rows: list[dict[str, Any]] = []
    baseline: AuditReport | None = None

    def row(label: str, seconds: float, requests: int, equal: bool | None = None) -> None:
        rows.append(
            {
                "row": label,
                "seconds": round(seconds, 4),
                "_raw": max(seconds, 1e-9),
                "mb_per_s": round(size / 1e6 / max(seconds, 1e-9), 2),
                "requests_per_s": round(requests / max(seconds, 1e-9), 1),
                "equal_to_jobs_1": equal,
            }
        )

    seconds, _ = timed(lambda: read_floor(paths), repeats)
    parse = parse_jsonl if jsonl else parse_cassettes
    row("floor: read bytes", seconds, 0)
    seconds, count = timed(lambda: parse(paths), repeats)
    row("floor: parse only", seconds, count)
    if jsonl:
        seconds, baseline = timed(lambda: audit_paths(paths), repeats)
    else:  # the same audit with today's reader and with the one before, interleaved
        seconds, baseline, before, got = interleaved(paths, repeats)
    requests = len(baseline.requests)
    expected = baseline.to_json()
    if not jsonl:
        row(PYYAML_ROW, before, requests, got.to_json() == expected)
    row("--jobs 1", seconds, requests, True)
    seconds, got = timed(lambda: audit_jobs(paths, jobs=2), repeats)
    row("--jobs 2", seconds, requests, got.to_json() == expected)
    if cluster is not None and jsonl:
        from llmcore.audit.engine import audit_dask

        urls = [str(p) for p in paths]
        seconds, got = timed(lambda: audit_dask(urls, scheduler=cluster), repeats)
        row("dask LocalCluster (2 processes)", seconds, requests, got.to_json() == expected)
    one = next(r for r in rows if r["row"] == "--jobs 1")["_raw"]
    for r in rows:
        r["speedup_over_jobs_1"] = round(one / r.pop("_raw"), 2)
    return {"input": name, "bytes": size, "requests": requests, "rows": rows}


def table(results: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    out = Table(title="llmcore audit at scale (medians)")
    for column in ("input", "row", "s", "MB/s", "requests/s", "× jobs 1", "same report"):
        out.add_column(column, justify="left" if column in ("input", "row") else "right")
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
            )
    Console(width=150).print(out)


def start_cluster() -> Any:
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0")
    return cluster, Client(cluster)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1_000_000_000, help="keyed log bytes")
    parser.add_argument("--copies", type=int, default=10, help="copies of tests/real_traffic")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--no-cluster", action="store_true", help="leave the Dask row out")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "bench_audit_scale.json")
    args = parser.parse_args()
    started = load()
    cluster = None if args.no_cluster else start_cluster()
    results = []
    try:
        with tempfile.TemporaryDirectory(prefix="bench-audit-scale-") as tmp:
            log = Path(tmp) / "gateway.jsonl"
            write_log(log, args.size)
            results.append(
                measure("keyed JSONL", [log], args.repeats, cluster and cluster[1], True)
            )
            log.unlink()
            folder = Path(tmp) / "cassettes"
            copy_folder(folder, args.copies)
            name = f"tests/real_traffic ×{args.copies}"
            results.append(measure(name, [folder], args.repeats, None, False))
    finally:
        if cluster is not None:
            cluster[1].close()
            cluster[0].close()
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
    cassettes = results[-1]["rows"]
    old = next(r for r in cassettes if r["row"] == PYYAML_ROW)["mb_per_s"]
    new = next(r for r in cassettes if r["row"] == "--jobs 1")["mb_per_s"]
    verdict = "met" if new >= READER_GOAL * old else "not met"
    summary["cassette_reader_ratio"] = round(new / old, 2)
    print(f"cassettes: --jobs 1 reads {new / old:.2f}× the MB/s of the PyYAML reader ({verdict})")
    for result in results:
        two = next(r for r in result["rows"] if r["row"] == "--jobs 2")
        verdict = "met" if two["speedup_over_jobs_1"] >= GOAL else "not met"
        print(
            f"{result['input']}: --jobs 2 is {two['speedup_over_jobs_1']:.2f}× --jobs 1 ({verdict})"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(jsonbytes.dumps(summary, indent=2) + b"\n")
    print(f"results written to {args.out}")


if __name__ == "__main__":
    main()
