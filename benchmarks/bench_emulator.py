"""Emulator throughput: 8 concurrent keep-alive clients replay an agent session's Anthropic bodies.

The emulator runs in its own process (``llmcore.cli.emulate.emulate_command``, OS-chosen port).
One agent session (the built-in script, non-streamed, 24 requests with tool results, a >10 KB
result and an image) is recorded, then each of 8 threads replays those bodies over one
keep-alive ``httpx.Client`` for ``--rounds`` rounds of ``--seconds`` seconds. Prints a rich table
per round and the medians; writes ``results/bench_emulator.json``.

Run: ``python benchmarks/bench_emulator.py [--clients 8] [--rounds 5] [--seconds 4]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
from rich.console import Console
from rich.table import Table

from llmcore.emulator.session import run_agent_session

ROOT = Path(__file__).resolve().parent.parent
SERVER = (
    "import sys; from llmcore.cli.emulate import emulate_command; "
    "sys.exit(emulate_command(0, None))"
)


def start_server(code: str = SERVER, cwd: Path = ROOT) -> tuple[subprocess.Popen[str], str]:
    """Start ``code`` (an emulator server) in a child process; return it and its base URL."""
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=cwd
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    url = line.split("anthropic base URL ")[1].split(" ")[0]
    return proc, url


def client_loop(url: str, bodies: tuple[bytes, ...], stop: float, out: list[object]) -> None:
    latencies: list[float] = []
    errors = 0
    headers = {
        "anthropic-version": "2023-06-01",
        "x-api-key": "bench",
        "content-type": "application/json",
    }
    # TCP_NODELAY: without it the last partial segment of each ~100 KB body waits for the
    # server's delayed ACK (Nagle), capping every client at ~25 requests/s whatever the server does
    transport = httpx.HTTPTransport(socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
    with httpx.Client(timeout=30, transport=transport) as client:
        index = 0
        while time.perf_counter() < stop:
            start = time.perf_counter()
            response = client.post(
                url + "/v1/messages", content=bodies[index % len(bodies)], headers=headers
            )
            latencies.append(time.perf_counter() - start)
            if response.status_code != 200:
                errors += 1
            index += 1
    out.append((latencies, errors))


def server_cpu(pid: int) -> float:
    """CPU seconds the server process used so far (Linux /proc; 0.0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_round(
    url: str, bodies: tuple[bytes, ...], clients: int, seconds: float, pid: int
) -> dict[str, float]:
    results: list[object] = []
    cpu_before = server_cpu(pid)
    start = time.perf_counter()
    stop = start + seconds
    threads = [
        threading.Thread(target=client_loop, args=(url, bodies, stop, results))
        for _ in range(clients)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    cpu = server_cpu(pid) - cpu_before
    latencies = sorted(lat for lats, _ in results for lat in lats)  # type: ignore[misc]
    errors = sum(err for _, err in results)  # type: ignore[misc]
    return {
        "requests": len(latencies),
        "errors": errors,
        "seconds": elapsed,
        "requests_per_second": len(latencies) / elapsed,
        "latency_p50_ms": statistics.median(latencies) * 1000,
        "latency_p95_ms": latencies[int(len(latencies) * 0.95)] * 1000,
        "server_cpu_ms_per_request": cpu * 1000 / max(len(latencies), 1),
        "load_average_1m": os.getloadavg()[0],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=4.0)
    args = parser.parse_args()
    proc, url = start_server()
    try:
        with httpx.Client() as client:
            session = run_agent_session(client, url)
        bodies = session.bodies
        rounds = [
            run_round(url, bodies, args.clients, args.seconds, proc.pid) for _ in range(args.rounds)
        ]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    table = Table(
        title=f"emulator: {args.clients} keep-alive clients, {len(bodies)} Anthropic bodies"
    )
    for column in (
        "round",
        "requests",
        "errors",
        "req/s",
        "p50 ms",
        "p95 ms",
        "srv cpu ms/req",
        "load",
    ):
        table.add_column(column, justify="right")
    for number, r in enumerate(rounds, 1):
        table.add_row(
            str(number),
            str(r["requests"]),
            str(r["errors"]),
            f"{r['requests_per_second']:.0f}",
            f"{r['latency_p50_ms']:.1f}",
            f"{r['latency_p95_ms']:.1f}",
            f"{r['server_cpu_ms_per_request']:.2f}",
            f"{r['load_average_1m']:.1f}",
        )
    median = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
    table.add_row(
        "median",
        f"{median['requests']:.0f}",
        f"{median['errors']:.0f}",
        f"{median['requests_per_second']:.0f}",
        f"{median['latency_p50_ms']:.1f}",
        f"{median['latency_p95_ms']:.1f}",
        f"{median['server_cpu_ms_per_request']:.2f}",
        f"{median['load_average_1m']:.1f}",
        style="bold",
    )
    Console().print(table)
    body_sizes = [len(b) for b in bodies]
    report = {
        "benchmark": "emulator_anthropic_replay",
        "clients": args.clients,
        "bodies": len(bodies),
        "body_bytes_median": statistics.median(body_sizes),
        "body_bytes_max": max(body_sizes),
        "rounds": rounds,
        "median": median,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
    out = ROOT / "results" / "bench_emulator.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0 if all(r["errors"] == 0 for r in rounds) else 1


if __name__ == "__main__":
    raise SystemExit(main())
