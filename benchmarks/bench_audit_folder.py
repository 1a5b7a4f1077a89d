"""``llmcore audit`` over a whole folder of recorded cassettes in one run (SPEC V1, issue 11).

Times :func:`llmcore.audit.audit_paths` on one folder, the way a CI job runs ``llmcore audit
DIR``: reading and parsing every file is included. Prints a table (files, requests audited, files
skipped by reason, skipped interactions, verdicts, breaks by divergence, conversations, groups
spanning more than one file, MB read, seconds, MB/s; medians of the repeats) beside the time
libyaml alone takes to load the same cassettes and the audit with the cassette reader before
:mod:`llmcore.audit._vcr_yaml` (every file read whole by PyYAML: ``bench_audit_scale.
audit_with_pyyaml``; issue 24's goal is 3× its MB/s), timed in turns in the same run, and
writes ``results/bench_audit_folder.json``. A run that aborts on an input prints the error,
records it in the results and exits 1.

Run: ``python benchmarks/bench_audit_folder.py [DIR] [--copies N] [--repeats N] [--out
FILE]``; ``DIR`` defaults to the vendored ``tests/real_traffic``, and ``--copies N`` audits a
temporary folder of ``N`` copies of ``tests/real_traffic`` instead (issue 24 measures 10).
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import yaml
from bench_audit_scale import READER_GOAL, audit_with_pyyaml, copy_folder  # same folder
from rich.console import Console
from rich.table import Table

from llmcore import jsonbytes
from llmcore.audit import AuditInputError, AuditReport, Verdict, audit_paths

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FOLDER = ROOT / "tests" / "real_traffic"
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
    yaml_times: list[float] = []
    before: list[float] = []
    try:
        for _ in range(repeats):  # side by side: the audit, the bare YAML parse, the old reader
            start = time.perf_counter()
            report = audit_paths([folder])
            times.append(time.perf_counter() - start)
            yaml_times.append(_yaml_load(folder))
            start = time.perf_counter()
            audit_with_pyyaml([folder])
            before.append(time.perf_counter() - start)
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
        Console(width=130).print(_table(folder, repeats, result))
        verdict = "met" if result["reader_speedup"] >= READER_GOAL else "not met"
        print(f"{result['reader_speedup']:.2f}× the MB/s of the PyYAML reader ({verdict})")
        code = 0
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(jsonbytes.dumps(result, indent=2) + b"\n")
    print(f"results written to {out}")
    return code


if __name__ == "__main__":
    sys.exit(main())
