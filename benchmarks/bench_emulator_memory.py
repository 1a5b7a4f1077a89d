"""Emulator memory: RSS at start, after a keep-alive load, and after 10,000 unique conversations.

The emulator runs in its own process (``llmcore.cli.emulate.emulate_command``, OS-chosen port,
loopback only); its RSS is read from ``/proc/<pid>/status`` (``VmRSS``, Linux). Phases:

1. **start** — RSS once the server listens.
2. **load** — ``--clients`` threads, each with one keep-alive ``httpx.Client``, replay the
   built-in agent session's Anthropic bodies for ``--load-seconds`` seconds (a bounded loop).
3. **unique** — the same clients send ``--conversations`` distinct conversations, a third each
   Anthropic Messages (a ``cache_control`` system block), OpenAI Chat Completions and OpenAI
   Responses (stored), each ``--tokens`` tokens of unique text so every one is cached and
   nothing is shared. RSS is sampled while they run; then the last few of each kind are sent
   again to check they still hit the cache.

Prints a rich table and writes ``results/bench_emulator_memory.json``.

Run: ``python benchmarks/bench_emulator_memory.py [--conversations 10000] [--clients 16]
[--load-seconds 30] [--tokens 4000] [--cache-mib N] [--source DIR]``. ``--cache-mib`` sets the
emulator's cache budget (default: the emulator's own default); ``--source`` runs the server
from another checkout (e.g. an older commit, for comparison; ``--cache-mib`` needs this one).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

from llmcore.emulator.session import run_agent_session

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_emulator  # noqa: E402 - the sibling benchmark's server starter

ROOT = Path(__file__).resolve().parent.parent
SERVER = (
    "import sys; from llmcore.cli.emulate import emulate_command; "
    "sys.exit(emulate_command(0, None))"
)
SERVER_BUDGET = (
    "from llmcore.cli.emulate import _announce; from llmcore.emulator import Emulator; "
    "from llmcore.emulator.limits import Limits; "
    "Emulator(limits=Limits(cache_bytes={budget})).serve_forever(on_ready=_announce)"
)
ANTHROPIC = {
    "anthropic-version": "2023-06-01",
    "x-api-key": "bench",
    "content-type": "application/json",
}
OPENAI = {"authorization": "Bearer bench", "content-type": "application/json"}
KINDS = ("anthropic", "chat", "responses")
MIB = 1024 * 1024


def start_server(source: Path, cache_mib: int | None) -> tuple[subprocess.Popen[str], str]:
    code = SERVER if cache_mib is None else SERVER_BUDGET.format(budget=cache_mib * MIB)
    return bench_emulator.start_server(code, source)


def rss_mib(pid: int) -> float:
    """Resident set size of ``pid`` in MiB (``VmRSS`` in ``/proc/<pid>/status``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS line")


def new_client() -> httpx.Client:
    # TCP_NODELAY: without it the last partial segment of each body waits for a delayed ACK
    transport = httpx.HTTPTransport(socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
    return httpx.Client(timeout=60, transport=transport)


def conversation(kind: str, number: int, tokens: int) -> tuple[str, dict[str, str], bytes]:
    """Path, headers and body of unique conversation ``number`` (unique text first)."""
    text = f"conversation {number:08d} " + "lorem ipsum dolor sit amet " * (tokens * 4 // 27 + 1)
    text = text[: tokens * 4]
    if kind == "anthropic":
        body: dict[str, Any] = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 64,
            "system": [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": f"question {number}"}],
        }
        return "/v1/messages", ANTHROPIC, json.dumps(body).encode()
    if kind == "chat":
        body = {
            "model": "gpt-4o",
            "messages": [
                {"role": "system", "content": text},
                {"role": "user", "content": f"question {number}"},
            ],
        }
        return "/v1/chat/completions", OPENAI, json.dumps(body).encode()
    body = {"model": "gpt-4o", "instructions": text, "input": f"question {number}"}
    return "/v1/responses", OPENAI, json.dumps(body).encode()


def cached_tokens(kind: str, data: dict[str, Any]) -> int:
    usage = data["usage"]
    if kind == "anthropic":
        return int(usage["cache_read_input_tokens"])
    if kind == "chat":
        return int(usage["prompt_tokens_details"]["cached_tokens"])
    return int(usage["input_tokens_details"]["cached_tokens"])


def load_loop(url: str, bodies: tuple[bytes, ...], stop: float, out: list[int]) -> None:
    done = errors = 0
    with new_client() as client:
        while time.perf_counter() < stop:
            response = client.post(
                url + "/v1/messages", content=bodies[done % len(bodies)], headers=ANTHROPIC
            )
            errors += response.status_code != 200
            done += 1
    out.extend((done, errors))


def unique_loop(url: str, numbers: range, tokens: int, progress: list[int], out: list[int]) -> None:
    errors = 0
    with new_client() as client:
        for number in numbers:
            path, headers, body = conversation(KINDS[number % 3], number, tokens)
            response = client.post(url + path, content=body, headers=headers)
            errors += response.status_code != 200
            progress[0] += 1
    out.append(errors)


def run_threads(targets: list[tuple[Any, tuple[Any, ...]]]) -> float:
    start = time.perf_counter()
    threads = [threading.Thread(target=target, args=args) for target, args in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - start


def phase_load(url: str, pid: int, clients: int, seconds: float) -> dict[str, Any]:
    with httpx.Client() as client:
        bodies = run_agent_session(client, url).bodies
    outs: list[list[int]] = [[] for _ in range(clients)]
    stop = time.perf_counter() + seconds
    elapsed = run_threads([(load_loop, (url, bodies, stop, outs[i])) for i in range(clients)])
    requests = sum(out[0] for out in outs)
    return {
        "requests": requests,
        "errors": sum(out[1] for out in outs),
        "seconds": elapsed,
        "rss_mib": rss_mib(pid),
    }


def phase_unique(url: str, pid: int, clients: int, count: int, tokens: int) -> dict[str, Any]:
    progresses = [[0] for _ in range(clients)]
    outs: list[list[int]] = [[] for _ in range(clients)]
    samples: list[tuple[float, int, float]] = []
    finished = threading.Event()

    def sample() -> None:
        start = time.perf_counter()
        while not finished.wait(0.5):
            done = sum(p[0] for p in progresses)
            samples.append((time.perf_counter() - start, done, rss_mib(pid)))

    sampler = threading.Thread(target=sample)
    sampler.start()
    elapsed = run_threads(
        [
            (unique_loop, (url, range(i, count, clients), tokens, progresses[i], outs[i]))
            for i in range(clients)
        ]
    )
    finished.set()
    sampler.join()
    return {
        "requests": count,
        "errors": sum(out[0] for out in outs),
        "seconds": elapsed,
        "rss_mib": rss_mib(pid),
        "rss_peak_mib": max([s[2] for s in samples] + [rss_mib(pid)]),
        "samples": samples,
    }


def recheck(url: str, count: int, tokens: int, last: int = 10) -> dict[str, int]:
    """Send the last ``last`` conversations of each kind again; count cache hits per kind."""
    hits = dict.fromkeys(KINDS, 0)
    with new_client() as client:
        for number in range(count - 3 * last, count):
            kind = KINDS[number % 3]
            path, headers, body = conversation(kind, number, tokens)
            response = client.post(url + path, content=body, headers=headers)
            if response.status_code == 200 and cached_tokens(kind, response.json()) > 0:
                hits[kind] += 1
    return hits


def print_table(report: dict[str, Any]) -> None:
    table = Table(
        title=(
            f"emulator RSS: {report['clients']} keep-alive clients, "
            f"{report['conversations']} unique conversations of {report['tokens']} tokens"
        )
    )
    for column in ("phase", "requests", "errors", "seconds", "req/s", "RSS MiB", "Δ start MiB"):
        table.add_column(column, justify="right")
    base = report["start"]["rss_mib"]
    table.add_row("start", "", "", "", "", f"{base:.1f}", "")
    for name in ("load", "unique"):
        phase = report[name]
        table.add_row(
            name,
            str(phase["requests"]),
            str(phase["errors"]),
            f"{phase['seconds']:.1f}",
            f"{phase['requests'] / phase['seconds']:.0f}",
            f"{phase['rss_mib']:.1f}",
            f"{phase['rss_mib'] - base:+.1f}",
        )
    unique = report["unique"]
    table.add_row("unique (peak)", "", "", "", "", f"{unique['rss_peak_mib']:.1f}", "")
    Console().print(table)
    hits = ", ".join(f"{kind} {hit}/10" for kind, hit in report["recheck_hits"].items())
    print(f"last 10 of each kind sent again, cache hits: {hits}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--load-seconds", type=float, default=30.0)
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--tokens", type=int, default=4000)
    parser.add_argument("--cache-mib", type=int, default=None)
    parser.add_argument("--source", type=Path, default=ROOT)
    parser.add_argument("--label", default="")
    parser.add_argument("--out", default="bench_emulator_memory.json")
    args = parser.parse_args()
    proc, url = start_server(args.source, args.cache_mib)
    try:
        report: dict[str, Any] = {
            "benchmark": "emulator_memory",
            "label": args.label,
            "clients": args.clients,
            "conversations": args.conversations,
            "tokens": args.tokens,
            "cache_mib": args.cache_mib,
            "start": {"rss_mib": rss_mib(proc.pid)},
        }
        report["load"] = phase_load(url, proc.pid, args.clients, args.load_seconds)
        report["unique"] = phase_unique(
            url, proc.pid, args.clients, args.conversations, args.tokens
        )
        report["recheck_hits"] = recheck(url, args.conversations, args.tokens)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    report["python"] = platform.python_version()
    report["cpus"] = os.cpu_count()
    print_table(report)
    out = ROOT / "results" / args.out
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    errors = report["load"]["errors"] + report["unique"]["errors"]
    return 0 if errors == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
