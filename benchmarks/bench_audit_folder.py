"""``llmcore audit`` over a whole folder of recorded cassettes in one run (SPEC V1, issue 11).

Times :func:`llmcore.audit.audit_paths` on one folder, the way a CI job runs ``llmcore audit
DIR``: reading and parsing every file is included. Prints a table (files, requests audited, files
skipped by reason, skipped interactions, verdicts, breaks by divergence, conversations, groups
spanning more than one file, MB read, seconds, MB/s; medians of the repeats) beside the time
libyaml alone takes to load the same cassettes, the audit with the cassette reader before
:mod:`llmcore.audit._vcr_yaml` (every file read whole by PyYAML, the rest of today's auditor:
``bench_audit_scale.audit_with_pyyaml``) and the audit by the package as it was before issue
24 (:data:`BEFORE_COMMIT`, taken with ``git archive`` and run in a fresh interpreter, its second
audit timed: imports and first-call costs left out; issue 24's goal is 3× its MB/s), timed in
turns in the same run, and writes ``results/bench_audit_folder.json``. Without git or that
commit (an exported tree) the last row is left out and the run says so. A run that aborts on
an input prints the error, records it in the results and exits 1.

Run: ``python benchmarks/bench_audit_folder.py [DIR] [--copies N] [--repeats N] [--out
FILE]``; ``DIR`` defaults to the vendored ``tests/real_traffic``, and ``--copies N`` audits a
temporary folder of ``N`` copies of ``tests/real_traffic`` instead (issue 24 measures 10).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import yaml
from bench_audit_scale import READER_GOAL, audit_with_pyyaml, copy_folder, load  # same folder
from rich.console import Console
from rich.table import Table

from llmcore import jsonbytes
from llmcore.audit import AuditInputError, AuditReport, Verdict, audit_paths

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FOLDER = ROOT / "tests" / "real_traffic"
BEFORE_COMMIT = "a542d4c36f809462967a24a8ee91d71997b66fa6"
"""The last commit before issue 24's audit work: the ``llmcore audit`` whose MB/s the goal of
3× is measured against."""
_BEFORE_SCRIPT = """
import json, sys, time
from pathlib import Path
import llmcore
from llmcore.audit import audit_paths
audit_paths([Path(sys.argv[1])])  # imports, first calls
start = time.perf_counter()
audit_paths([Path(sys.argv[1])])
print(json.dumps({"seconds": time.perf_counter() - start, "package": llmcore.__file__}))
"""
_INTERACTION = re.compile(r"^interactions\[\d+\]: ")
_DETAILS = re.compile(r" \([^()]*\)$")


def _owner(entry: str, files: list[str]) -> tuple[str, str]:
    """Split a ``path: reason`` report line into the file it names and the rest."""
    best = max((f for f in files if entry.startswith(f + ":")), key=len, default="")
    if not best:
        return "", entry
    return best, entry[len(best) + 1 :].lstrip(" 0123456789:").strip()


def _skips(report: AuditReport, files: list[str]) -> tuple[Counter[str], Counter[str]]:
    """Count whole files skipped, and interactions skipped, by reason (details dropped)."""
    by_file: Counter[str] = Counter()
    by_interaction: Counter[str] = Counter()
    for entry in report.skipped:
        _, rest = _owner(entry, files)
        if _INTERACTION.match(rest):
            by_interaction[_DETAILS.sub("", _INTERACTION.sub("", rest))] += 1
        else:
            by_file[_DETAILS.sub("", rest)] += 1
    return by_file, by_interaction


def _cross_file_groups(report: AuditReport) -> int:
    """Conversations whose requests come from more than one file."""
    owners: dict[int, set[str | None]] = defaultdict(set)
    for record in report.requests:
        owners[record.conversation].add(record.file)
    return sum(1 for names in owners.values() if len(names) > 1)


def _yaml_load(folder: Path) -> float:
    """Seconds to read and ``yaml.load`` every cassette of ``folder`` (libyaml's CSafeLoader)."""
    start = time.perf_counter()
    for path in sorted(folder.rglob("*.y*ml")):
        try:
            yaml.load(path.read_bytes(), Loader=yaml.CSafeLoader)
        except yaml.YAMLError:
            continue  # not YAML libyaml reads; the audit lists such files as skipped
    return time.perf_counter() - start


def package_at(commit: str, into: Path) -> Path | None:
    """Extract the ``llmcore`` package of ``commit`` under ``into``; ``None`` without git or it."""
    try:
        done = subprocess.run(
            ["git", "-C", str(ROOT), "archive", "--format=tar", commit, "llmcore"],
            capture_output=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as archive:
        archive.extractall(into, filter="data")
    return into


def audit_before(tree: Path, folder: Path) -> float | None:
    """Seconds of one warm audit of ``folder`` by the ``llmcore`` under ``tree``; ``None``
    (and the reason printed in one line) when that audit fails or another ``llmcore`` was
    imported."""
    done = subprocess.run(
        [sys.executable, "-c", _BEFORE_SCRIPT, str(folder)],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
    )
    lines = done.stdout.splitlines()
    if done.returncode != 0 or not lines:
        reason = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        print(f"the audit at {BEFORE_COMMIT[:7]} failed, its row is left out: {reason}")
        return None
    got = json.loads(lines[-1])
    if not str(got["package"]).startswith(str(tree)):
        print(f"imported {got['package']}, not the package under {tree}: its row is left out")
        return None
    return float(got["seconds"])


def summarize(report: AuditReport, folder: Path) -> dict[str, Any]:
    """The counts of one report over ``folder``, as JSON-ready values."""
    files = sorted(str(p) for p in folder.rglob("*") if p.is_file())
    by_file, by_interaction = _skips(report, files)
    breaks = [r for r in report.requests if r.verdict is Verdict.BREAK]
    return {
        "files": len(files),
        "files_with_requests": len({r.file for r in report.requests}),
        "requests": len(report.requests),
        "files_skipped": dict(sorted(by_file.items())),
        "interactions_skipped": dict(sorted(by_interaction.items())),
        "verdicts": report.counts(),
        "breaks": len(breaks),
        "breaks_by_divergence": dict(sorted(Counter(str(r.divergence) for r in breaks).items())),
        "breaks_exempted": sum(1 for r in breaks if r.exemption is not None),
        "break_requests": [r.source for r in breaks],
        "conversations": report.conversations,
        "cross_file_groups": _cross_file_groups(report),
    }


def _table(folder: Path, repeats: int, row: dict[str, Any]) -> Table:
    table = Table(title=f"llmcore audit over {folder} (parsing included, median of {repeats})")
    table.add_column("measure")
    table.add_column("value", overflow="fold")
    skipped = ", ".join(f"{k} {v}" for k, v in row["files_skipped"].items()) or "none"
    passed = ", ".join(f"{k} {v}" for k, v in row["interactions_skipped"].items()) or "none"
    verdicts = ", ".join(f"{k} {v}" for k, v in row["verdicts"].items() if v)
    sections = ", ".join(f"{k} {v}" for k, v in row["breaks_by_divergence"].items()) or "none"
    for name, value in (
        ("files", f"{row['files']} ({row['files_with_requests']} with audited requests)"),
        ("requests audited", str(row["requests"])),
        ("files skipped, by reason", skipped),
        ("interactions skipped, by reason", passed),
        ("verdicts", verdicts),
        ("breaks (by divergence)", f"{row['breaks']} ({sections})"),
        ("conversations", str(row["conversations"])),
        ("conversations spanning files", str(row["cross_file_groups"])),
        ("MB read", f"{row['megabytes']:.2f}"),
        ("median seconds", f"{row['median_seconds']:.3f}"),
        ("MB/s", f"{row['median_mb_per_s']:.1f}"),
        ("yaml.load alone: median s", f"{row['yaml_load_median_seconds']:.3f}"),
        ("audit time / yaml.load time", f"{row['audit_to_yaml_load']:.2f}"),
        ("PyYAML reader (before): median s", f"{row['pyyaml_reader_median_seconds']:.3f}"),
        ("MB/s over the PyYAML reader's", f"{row['reader_speedup']:.2f}"),
    ):
        table.add_row(name, value)
    if "before_median_seconds" in row:
        table.add_row(
            f"llmcore at {BEFORE_COMMIT[:7]}: median s", f"{row['before_median_seconds']:.3f}"
        )
        table.add_row(f"MB/s over {BEFORE_COMMIT[:7]}'s", f"{row['before_speedup']:.2f}")
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, default=DEFAULT_FOLDER)
    parser.add_argument("--copies", type=int, default=0, help="copies of tests/real_traffic")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "bench_audit_folder.json")
    args = parser.parse_args()
    if args.copies:
        with tempfile.TemporaryDirectory(prefix="bench-audit-folder-") as tmp:
            copy_folder(Path(tmp), args.copies)
            return measure(Path(tmp), args.repeats, args.out)
    return measure(args.folder, args.repeats, args.out)


def measure(folder: Path, repeats: int, out: Path) -> int:
    """Time the audit of ``folder`` and its floors ``repeats`` times; print and write them."""
    megabytes = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6
    times: list[float] = []
    result: dict[str, Any] = {"folder": str(folder), "repeats": repeats}
    result["load_average_before"] = load()
    yaml_times: list[float] = []
    before: list[float] = []
    earlier: list[float] = []
    scratch = tempfile.TemporaryDirectory(prefix="bench-audit-before-")
    tree = package_at(BEFORE_COMMIT, Path(scratch.name))
    if tree is None:
        print(f"no git or no commit {BEFORE_COMMIT[:7]}: the audit before issue 24 is not timed")
    try:
        for _ in range(repeats):  # side by side: the audit, the bare YAML parse, the old readers
            start = time.perf_counter()
            report = audit_paths([folder])
            times.append(time.perf_counter() - start)
            yaml_times.append(_yaml_load(folder))
            start = time.perf_counter()
            audit_with_pyyaml([folder])
            before.append(time.perf_counter() - start)
            seconds = audit_before(tree, folder) if tree is not None else None
            if seconds is None:
                tree, earlier = None, []  # one failed round leaves the whole row out
            else:
                earlier.append(seconds)
    except AuditInputError as exc:
        print(f"audit aborted: {exc}", file=sys.stderr)
        result["aborted"] = str(exc)
        code = 1
    else:
        median = statistics.median(times)
        result.update(summarize(report, folder))
        result.update(
            megabytes=megabytes,
            seconds=times,
            median_seconds=median,
            median_mb_per_s=megabytes / median,
            yaml_load_seconds=yaml_times,
            yaml_load_median_seconds=statistics.median(yaml_times),
            audit_to_yaml_load=median / statistics.median(yaml_times),
            pyyaml_reader_seconds=before,
            pyyaml_reader_median_seconds=statistics.median(before),
            reader_speedup=statistics.median(before) / median,
        )
        if earlier:
            result.update(
                before_commit=BEFORE_COMMIT,
                before_seconds=earlier,
                before_median_seconds=statistics.median(earlier),
                before_speedup=statistics.median(earlier) / median,
            )
        Console(width=130).print(_table(folder, repeats, result))
        verdict = "met" if result["reader_speedup"] >= READER_GOAL else "not met"
        print(f"{result['reader_speedup']:.2f}× the MB/s of the PyYAML reader ({verdict})")
        if earlier:
            verdict = "met" if result["before_speedup"] >= READER_GOAL else "not met"
            at = BEFORE_COMMIT[:7]
            print(f"{result['before_speedup']:.2f}× the MB/s of llmcore at {at} ({verdict})")
        result["load_average_after"] = load()
        print(
            f"load average (1, 5, 15 min): before {result['load_average_before']},"
            f" after {result['load_average_after']}"
        )
        code = 0
    finally:
        scratch.cleanup()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(jsonbytes.dumps(result, indent=2) + b"\n")
    print(f"results written to {out}")
    return code


if __name__ == "__main__":
    sys.exit(main())
