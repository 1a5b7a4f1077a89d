"""The heavy property tests at their full example counts (the suite runs a sample of each).

Runs every test marked ``full_count`` (``tests/examples.py``) under the ``ci`` hypothesis
profile with ``LLMCORE_FULL_EXAMPLES=1``, so each takes the full count its
``examples(full=…, sample=…)`` names, and reports each test's outcome and seconds. Any failure
makes the exit status 1.

Usage::

    python benchmarks/bench_properties.py [-n 2] [-k EXPRESSION]
        [--out results/bench_properties.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(workers: int, select: str | None) -> list[dict[str, object]]:
    with tempfile.TemporaryDirectory(prefix="bench-properties-") as tmp:
        report = Path(tmp) / "junit.xml"
        env = {**os.environ, "CI": "1", "LLMCORE_FULL_EXAMPLES": "1"}
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-m",
            "full_count",
            "-q",
            "-n",
            str(workers),
            f"--junitxml={report}",
            *(["-k", select] if select else []),
        ]
        subprocess.run(command, cwd=ROOT, env=env, check=False)
        rows = []
        for case in ElementTree.parse(report).getroot().iter("testcase"):
            failed = case.find("failure") is not None or case.find("error") is not None
            skipped = case.find("skipped") is not None
            rows.append(
                {
                    "test": f"{case.get('classname')}::{case.get('name')}",
                    "seconds": round(float(case.get("time", "0")), 2),
                    "outcome": "failed" if failed else "skipped" if skipped else "passed",
                }
            )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=2, help="pytest-xdist workers")
    parser.add_argument("-k", dest="select", help="only the tests pytest -k selects")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "bench_properties.json")
    args = parser.parse_args()
    rows = run(args.n, args.select)
    print(f"{'test':100} {'seconds':>8}  outcome")
    for row in rows:
        print(f"{row['test']:100} {row['seconds']:8.2f}  {row['outcome']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"rows": rows}, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 1 if not rows or any(r["outcome"] == "failed" for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
