"""Calibration against recorded usage (SPEC V5): the auditor's part, and the emulator's if present.

Prints one table per part and writes ``results/bench_calibration.json``. The auditor's part
(:mod:`calibration_audit`) runs ``llmcore audit`` over every vendored real cassette that records
usage; the emulator's part (``calibration_emulator.py``, when it exists beside this file,
providing ``emulator_rows()``) replays the same bodies against the emulator.

Goals (auditor): 0 requests whose maximum is below the recorded read for a reason of llmcore's
model, and the median estimate within 15% of the recorded input on Anthropic, Chat and
Responses.

Run: ``python benchmarks/bench_calibration.py``.
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from llmcore import jsonbytes

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import calibration_audit  # noqa: E402  (a sibling module of this script)

GOAL_PROVIDERS = ("anthropic", "openai-chat", "openai-responses")
GOAL_RATIO = 0.15


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _print_audit(rows: list[dict[str, Any]]) -> bool:
    table = Table(title="auditor: theoretical maximum and estimates against recorded usage")
    columns = (
        "provider",
        "requests",
        "below: llmcore's model",
        "below: not visible",
        "estimate/input median",
        "p10",
        "p90",
        "read drops at non-break",
        "breaks read whole",
    )
    for col in columns:
        table.add_column(col, justify="left" if col == "provider" else "right")
    ok = True
    for r in rows:
        table.add_row(
            r["provider"],
            str(r["requests"]),
            str(r["below_model"]),
            str(r["below_not_visible"]),
            _ratio(r["ratio_median"]),
            _ratio(r["ratio_p10"]),
            _ratio(r["ratio_p90"]),
            f"{r['drops_at_non_break']}/{r['pairs']}",
            f"{r['breaks_read_all']}/{r['pairs']}",
        )
        ok = ok and r["below_model"] == 0
        median = r["ratio_median"]
        if r["provider"] in GOAL_PROVIDERS and median is not None:
            ok = ok and abs(median - 1) <= GOAL_RATIO
    Console(width=150).print(table)
    for r in rows:
        for below in r["below_model_requests"]:
            print(f"  below ({r['provider']}): {below}")
    return ok


def main() -> None:
    """Run every calibration part present, print the tables, write the JSON results."""
    started = time.perf_counter()
    audit = calibration_audit.audit_rows()
    ok = _print_audit(audit)
    results: dict[str, Any] = {"audit": audit}
    try:
        emulator = importlib.import_module("calibration_emulator")
    except ModuleNotFoundError:
        emulator = None
    if emulator is not None:
        results["emulator"] = emulator.emulator_rows()
        printer = getattr(emulator, "print_rows", None)
        if printer is not None:
            printer(results["emulator"])
    print(f"auditor goals: {'met' if ok else 'NOT MET'} ({time.perf_counter() - started:.1f} s)")
    out = HERE.parent / "results" / "bench_calibration.json"
    out.parent.mkdir(exist_ok=True)
    out.write_bytes(jsonbytes.dumps(results) + b"\n")
    print(f"wrote {out.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main()
