"""Provider switching over every ordered pair of providers (SPEC P6, M4), as a matrix.

For each ordered pair (A → B) of ``anthropic``, ``openai-chat``, ``openai-responses`` and
``openrouter``, hypothesis generates conversations on A (all four content cases, parallel tool
calls, tool errors, omitted images; A's last request carries provider-only data), saves and
reopens them through the archive, and sends the next request to B; the checks are
``tests/properties/switching.py`` (the property test runs the same ones with fewer examples).
Each cell shows pass/fail and the number of examples; the JSON also counts how many examples
covered each interesting case (ids rewritten for B, tool errors, omitted images, …).

Usage::

    python benchmarks/bench_switching.py [--examples 200] [--seed 2026]
        [--out results/bench_switching.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from llmcore.providers import PROVIDER_NAMES  # noqa: E402
from tests.properties.switching import PAIRS, check_switch  # noqa: E402 - shared with the test


def run_pair(
    source: str, target: str, examples: int, seed_value: int, folder: Path
) -> dict[str, Any]:
    """Run ``examples`` generated switches ``source`` → ``target``; return the cell's result."""
    cases: Counter[str] = Counter()
    count = 0

    @seed(seed_value)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(data=st.data())
    def play(data: st.DataObject) -> None:
        nonlocal count
        cases.update(check_switch(data, source, target, folder))
        count += 1  # completed examples only (not draws hypothesis abandoned)

    started = time.perf_counter()
    failure = None
    try:
        play()
    except Exception as exc:  # a failed property is a result of the matrix, not a crash
        failure = f"{type(exc).__name__}: {exc}"[:2000]
    return {
        "source": source,
        "target": target,
        "passed": failure is None,
        "examples": count,
        "cases": dict(sorted(cases.items())),
        "failure": failure,
        "seconds": round(time.perf_counter() - started, 2),
    }


def main() -> int:
    """Run the matrix, print it, write the JSON; exit 1 if any pair failed."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--examples", type=int, default=200, help="examples per ordered pair")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "bench_switching.json")
    args = parser.parse_args()
    console = Console(width=120)
    started = time.perf_counter()
    cells = []
    with tempfile.TemporaryDirectory(prefix="bench-switching-") as tmp:
        for number, (source, target) in enumerate(PAIRS):
            folder = Path(tmp) / f"{number}" / "agent"
            folder.parent.mkdir()
            cells.append(run_pair(source, target, args.examples, args.seed, folder))
            cell = cells[-1]
            console.log(f"{source} → {target}: {'pass' if cell['passed'] else 'FAIL'}")
    table = Table(title="Provider switching A → B after save + reopen (pass / examples)")
    table.add_column("A \\ B")
    for name in PROVIDER_NAMES:
        table.add_column(name, justify="center")
    by_pair = {(c["source"], c["target"]): c for c in cells}
    for source in PROVIDER_NAMES:
        row = []
        for target in PROVIDER_NAMES:
            cell = by_pair.get((source, target))
            if cell is None:
                row.append("—")
            else:
                row.append(f"{'pass' if cell['passed'] else 'FAIL'} {cell['examples']}")
        table.add_row(source, *row)
    console.print(table)
    for cell in cells:
        if cell["failure"]:
            console.print(f"[red]{cell['source']} → {cell['target']}: {cell['failure']}")
    results = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "seconds": round(time.perf_counter() - started, 1),
        "arguments": {"examples": args.examples, "seed": args.seed},
        "pairs": cells,
        "all_passed": all(c["passed"] for c in cells),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    console.print(f"wrote {args.out}")
    return 0 if results["all_passed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
