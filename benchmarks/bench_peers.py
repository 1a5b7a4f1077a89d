"""Peers beside llmcore: time to the wire, prompt-cache hits and argument bytes, in one run.

Timing (``bench_bodies.conversation``, the seeded tool-using conversation): each series — a
peer on one wire format, or llmcore incremental / cold — sends the turn-N request (N = 10, 50,
200 by default) through a mock transport of its own HTTP client and is timed from the call's
start to the transport having read the bytes (``peer_drivers``); the median of ``--reps`` is
reported, and the ratio to llmcore incremental on the same wire format. The whole session —
the 400 requests of the 200-turn conversation (after each user message and after each tool
result message) — is timed the same way, summed, median of ``--session-reps``.

Prompt caching and arguments (``peer_sessions``): each series plays the emulator's scripted
agent session on loopback; its hit rate, the auditor's theoretical maximum for the bodies it
sent, and the share of tool-call arguments it sent back byte for byte.

Peers are installed by ``pip install -e '.[peers]'``; a peer that is not installed is skipped
and named. Prints rich tables, writes ``results/bench_peers.json``, ``results/bench_peers.png``
and the tables as Markdown (``results/bench_peers.md``). Run:
``python benchmarks/bench_peers.py [--reps R] [--session-turns T] [--chart PATH]``.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import warnings
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console
from rich.table import Table

from benchmarks.bench_bodies import conversation
from benchmarks.peer_drivers import (
    PEER_DRIVERS,
    PEER_MODULES,
    PEER_PROVIDERS,
    PROVIDERS,
    Driver,
    LlmcoreDriver,
    missing,
    session_points,
)
from benchmarks.peer_sessions import PROMPTS, SessionStats, peer_session
from llmcore import jsonbytes
from llmcore.messages import Message
from llmcore.providers import get_provider

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"
TURNS = (10, 50, 200)
SESSION_TURNS = 200
INCREMENTAL = "llmcore incremental"
COLD = "llmcore cold"

Series = tuple[str, str]
"""(series name, provider)."""


def available_peers() -> tuple[list[str], dict[str, str]]:
    """The installed peers, and for each missing one why it is skipped."""
    found, skipped = [], {}
    for peer in PEER_MODULES:
        lacking = missing(peer)
        if lacking:
            skipped[peer] = f"not installed (the 'peers' extra; missing {', '.join(lacking)})"
        else:
            found.append(peer)
    return found, skipped


def all_series(peers: Sequence[str]) -> list[Series]:
    out: list[Series] = []
    for provider in PROVIDERS:
        out += [(INCREMENTAL, provider), (COLD, provider)]
        out += [(peer, provider) for peer in peers if provider in PEER_PROVIDERS[peer]]
    return out


def make_driver(series: Series, messages: Sequence[Message]) -> Driver:
    name, provider = series
    if name in (INCREMENTAL, COLD):
        return LlmcoreDriver(provider, messages, incremental=name == INCREMENTAL)
    return PEER_DRIVERS[name](provider, messages)


class Exactness:
    """Checks that llmcore's wire bytes equal a cold ``build_body`` of the same request."""

    def __init__(self) -> None:
        self.checked = 0
        self.different: list[str] = []

    def check(self, driver: Driver, k: int) -> None:
        if not isinstance(driver, LlmcoreDriver):
            return
        from benchmarks.bench_bodies import request

        expected = get_provider(driver.provider).build_body(
            request(driver.provider, driver.messages[:k])
        )
        self.checked += 1
        if driver.wire.body != expected:
            self.different.append(f"{driver.name} {driver.provider} k={k}")


def turn_median(driver: Driver, k: int, reps: int, exact: Exactness) -> float:
    driver.wire.timed(driver.prepare(k))  # warm the client
    times = []
    for _ in range(reps):
        if isinstance(driver, LlmcoreDriver):
            driver.warm(k)
        times.append(driver.wire.timed(driver.prepare(k)))
    exact.check(driver, k)
    return statistics.median(times)


def session_total(driver: Driver, points: Sequence[int], exact: Exactness) -> float:
    """Milliseconds summed over the session's requests (one encode cache carried through)."""
    if isinstance(driver, LlmcoreDriver):
        driver.warm(1)
    total = 0.0
    for k in points:
        total += driver.wire.timed(driver.prepare(k))
        if k == points[-1]:
            exact.check(driver, k)
    return total


def run(
    *,
    turns: Sequence[int] = TURNS,
    reps: int = 15,
    session_turns: int = SESSION_TURNS,
    session_reps: int = 1,
    prompts: int = len(PROMPTS),
    peers: Sequence[str] | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Measure every series; return the results (the ``bench_peers.json`` value)."""
    found, skipped = available_peers()
    chosen = found if peers is None else [p for p in peers if p in found]
    series = all_series(chosen)
    exact = Exactness()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # peers warn about model names, deprecations, leaks
        timings = _timings(series, turns, reps, exact, progress)
        sessions = _sessions(series, session_turns, session_reps, exact, progress)
        caches = _caches(series, prompts, progress)
        gc.collect()  # peers leave event loops and sockets to the collector: reap them here
    return {
        "meta": {
            "reps": reps,
            "sessionReps": session_reps,
            "sessionTurns": session_turns,
            "emulatorPrompts": prompts,
            "versions": _versions(chosen),
        },
        "skipped": skipped,
        "llmcoreBodiesChecked": exact.checked,
        "llmcoreBodiesDifferent": exact.different,
        "timings": timings,
        "sessions": sessions,
        "cache": caches,
    }


def _timings(series, turns, reps, exact, progress) -> list[dict[str, Any]]:
    rows = []
    for n in turns:
        messages = conversation(n)
        medians: dict[Series, float] = {}
        for s in series:
            progress(f"turn {n}: {s[0]} ({s[1]})")
            driver = make_driver(s, messages)
            medians[s] = turn_median(driver, len(messages), reps, exact)
            driver.close()
        rows += [
            {
                "series": s[0],
                "provider": s[1],
                "turns": n,
                "medianMs": round(ms, 4),
                "ratioToIncremental": round(ms / medians[(INCREMENTAL, s[1])], 3),
            }
            for s, ms in medians.items()
        ]
    return rows


def _sessions(series, session_turns, session_reps, exact, progress) -> list[dict[str, Any]]:
    messages = conversation(session_turns)[:-1]  # the session ends with the last turn's text
    points = session_points(messages)
    totals: dict[Series, float] = {}
    for s in series:
        progress(f"session of {len(points)} requests: {s[0]} ({s[1]})")
        driver = make_driver(s, messages)
        driver.wire.timed(driver.prepare(points[0]))  # warm the client
        totals[s] = statistics.median(
            session_total(driver, points, exact) for _ in range(session_reps)
        )
        driver.close()
    return [
        {
            "series": s[0],
            "provider": s[1],
            "requests": len(points),
            "totalMs": round(ms, 3),
            "ratioToIncremental": round(ms / totals[(INCREMENTAL, s[1])], 3),
        }
        for s, ms in totals.items()
    ]


def _caches(series, prompts, progress) -> list[dict[str, Any]]:
    rows = []
    done: set[Series] = set()
    for name, provider in series:
        key = ("llmcore" if name in (INCREMENTAL, COLD) else name, provider)
        if key in done:
            continue
        done.add(key)
        progress(f"emulator session: {key[0]} ({provider})")
        stats: SessionStats = peer_session(*key, prompts)
        rows.append({"series": key[0], "provider": provider, **stats.to_json()})
    return rows


def _versions(peers: Sequence[str]) -> dict[str, str]:
    names = {"llmcore", "httpx", "httpx2"}
    dists = {
        "anthropic SDK": ["anthropic"],
        "openai SDK": ["openai"],
        "pydantic-ai": ["pydantic-ai-slim"],
        "LiteLLM": ["litellm"],
    }
    for peer in peers:
        names.update(dists[peer])
    out = {}
    for name in sorted(names):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


# ------------------------------------------------------------------ output


def _ratio(value: float) -> str:
    return f"{value:.1f}x" if value >= 1.5 else f"{value:.2f}x"


def timing_table(result: dict[str, Any]) -> Table:
    turns = sorted({r["turns"] for r in result["timings"]})
    table = Table(title="time to the wire, median ms (× = ratio to llmcore incremental)")
    table.add_column("series", no_wrap=True)
    table.add_column("provider", no_wrap=True)
    for n in turns:
        table.add_column(f"N={n}", justify="right")
        table.add_column("×", justify="right")
    requests = result["sessions"][0]["requests"] if result["sessions"] else 0
    table.add_column(f"session ({requests} req.) s", justify="right")
    table.add_column("×", justify="right")
    sessions = {(r["series"], r["provider"]): r for r in result["sessions"]}
    keys = list(dict.fromkeys((r["series"], r["provider"]) for r in result["timings"]))
    by = {(r["series"], r["provider"], r["turns"]): r for r in result["timings"]}
    for key in keys:
        cells = [key[0], key[1]]
        for n in turns:
            row = by[(*key, n)]
            cells += [f"{row['medianMs']:.2f}", _ratio(row["ratioToIncremental"])]
        s = sessions.get(key)
        cells += [f"{s['totalMs'] / 1000:.2f}", _ratio(s["ratioToIncremental"])] if s else ["", ""]
        table.add_row(*cells)
    return table


def cache_table(result: dict[str, Any]) -> Table:
    table = Table(title="scripted agent session on the emulator")
    for name in ("series", "provider", "requests", "hit rate", "theoretical max", "args exact"):
        table.add_column(name, justify="left" if name in ("series", "provider") else "right")
    for row in result["cache"]:
        table.add_row(
            row["series"],
            row["provider"],
            str(row["requests"]),
            f"{row['hitRate']:.1%}",
            f"{row['theoreticalHitRate']:.1%}",
            f"{row['argumentsExact']}/{row['arguments']} ({row['argumentShare']:.0%})",
        )
    return table


def markdown(result: dict[str, Any]) -> str:
    """The two tables as Markdown (for README)."""
    turns = sorted({r["turns"] for r in result["timings"]})
    by = {(r["series"], r["provider"], r["turns"]): r for r in result["timings"]}
    sessions = {(r["series"], r["provider"]): r for r in result["sessions"]}
    requests = result["sessions"][0]["requests"] if result["sessions"] else 0
    head = ["series", "provider", *(f"N={n} ms" for n in turns), f"session ({requests} req.) s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key in dict.fromkeys((r["series"], r["provider"]) for r in result["timings"]):
        cells = [key[0], key[1]]
        for n in turns:
            row = by[(*key, n)]
            cells.append(f"{row['medianMs']:.2f} ({_ratio(row['ratioToIncremental'])})")
        s = sessions[key]
        cells.append(f"{s['totalMs'] / 1000:.2f} ({_ratio(s['ratioToIncremental'])})")
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "| series | provider | requests | hit rate | theoretical max | args byte-exact |"]
    lines.append("|---|---|---|---|---|---|")
    for row in result["cache"]:
        lines.append(
            f"| {row['series']} | {row['provider']} | {row['requests']} | {row['hitRate']:.1%} "
            f"| {row['theoreticalHitRate']:.1%} | {row['argumentsExact']}/{row['arguments']} "
            f"({row['argumentShare']:.0%}) |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=int(os.environ.get("BENCH_REPS", "15")))
    parser.add_argument("--session-reps", type=int, default=1)
    parser.add_argument("--turns", type=int, nargs="+", default=list(TURNS))
    parser.add_argument("--session-turns", type=int, default=SESSION_TURNS)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--chart", type=Path, default=None, help="also write the chart here")
    args = parser.parse_args()
    console = Console(stderr=True)
    with console.status("measuring") as status:
        result = run(
            turns=args.turns,
            reps=args.reps,
            session_turns=args.session_turns,
            session_reps=args.session_reps,
            progress=lambda text: status.update(text),
        )
    out = Console(width=160)
    out.print(timing_table(result))
    out.print(cache_table(result))
    for peer, why in result["skipped"].items():
        out.print(f"skipped {peer}: {why}", markup=False)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench_peers.json").write_bytes(jsonbytes.dumps(result, indent=2) + b"\n")
    from benchmarks.peers_chart import draw

    draw(result, args.out / "bench_peers.png")
    if args.chart is not None:
        draw(result, args.chart)
    (args.out / "bench_peers.md").write_text(markdown(result), encoding="utf-8")
    out.print(f"wrote bench_peers.json, .png and .md to {args.out}", markup=False)


if __name__ == "__main__":
    main()
