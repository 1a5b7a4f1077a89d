"""The chart of ``bench_peers``: time to the wire per series, and the emulator session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

COLORS = {
    "llmcore incremental": "#2a9d8f",
    "llmcore cold": "#8ab17d",
    "llmcore": "#2a9d8f",
    "anthropic SDK": "#e76f51",
    "openai SDK": "#f4a261",
    "pydantic-ai": "#e9c46a",
    "LiteLLM": "#264653",
}


def draw(result: dict[str, Any], path: Path) -> None:
    """Write a PNG: left, median ms at the largest N per series (log scale); right, hit rate
    against the theoretical maximum and the share of arguments sent back byte for byte."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    largest = max(r["turns"] for r in result["timings"])
    rows = [r for r in result["timings"] if r["turns"] == largest]
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5.5), dpi=100)
    labels = [f"{r['series']}\n({r['provider']})" for r in rows]
    values = [r["medianMs"] for r in rows]
    y = list(range(len(rows)))
    left.barh(y, values, color=[COLORS.get(r["series"], "#999999") for r in rows])
    left.set_yticks(y, labels, fontsize=8)
    left.invert_yaxis()
    left.set_xscale("log")
    left.set_xlim(right=max(values) * 8)
    left.set_xlabel("ms to the wire (median, log scale)")
    left.set_title(f"turn-{largest} request: time to the wire")
    for i, r in enumerate(rows):
        left.annotate(
            f" {r['medianMs']:.2f} ms ({r['ratioToIncremental']:.1f}x)",
            (r["medianMs"], i),
            va="center",
            fontsize=7,
        )
    cache = result["cache"]
    y2 = list(range(len(cache)))
    height = 0.27
    right.barh([v - height for v in y2], [c["hitRate"] for c in cache], height, label="hit rate")
    right.barh(y2, [c["theoreticalHitRate"] for c in cache], height, label="theoretical maximum")
    right.barh(
        [v + height for v in y2],
        [c["argumentShare"] for c in cache],
        height,
        label="tool arguments sent back byte for byte",
    )
    right.set_yticks(y2, [f"{c['series']}\n({c['provider']})" for c in cache], fontsize=8)
    right.invert_yaxis()
    right.set_xlim(0, 1.0)
    right.set_xlabel("share")
    right.set_title("scripted agent session on the emulator")
    right.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3, fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    plt.close(fig)
