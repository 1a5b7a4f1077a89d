"""The proxy's cost: added latency and throughput vs. direct to the emulator; audit memory bound.

The emulator and ``llmcore proxy --upstream EMULATOR`` each run in their own process. In the
same run, for each case — a small Chat body and a 300 KB one, each streamed and not — a
keep-alive client sends ``--requests`` requests direct and as many through the proxy, the two
interleaved in rounds; the table gives p50/p99 latency of each and the added p50/p99. Then
``--clients`` threads send small requests for ``--seconds`` seconds, direct and through the
proxy: requests per second. Last, the live audit's memory (tracemalloc) after 1,000 and after
10,000 conversations, each a different 1 KB first message: bounded by ``max_conversations``
(1,000), the second figure is about the first. Writes ``results/bench_proxy.json``.

Run: ``python benchmarks/bench_proxy.py [--requests 200] [--clients 4] [--seconds 3]``.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import httpx
from rich.console import Console
from rich.table import Table

from llmcore import jsonbytes
from llmcore.audit.live import LiveAudit

ROOT = Path(__file__).resolve().parent.parent
EMULATOR = (
    "import sys; from llmcore.cli.emulate import emulate_command; "
    "sys.exit(emulate_command(0, None))"
)


def start(args: list[str], marker: str, stream: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT
    )
    pipe = proc.stdout if stream == "stdout" else proc.stderr
    assert pipe is not None
    line = pipe.readline()
    return proc, line.split(marker)[1].split(" ")[0]


def body(size: int, stream: bool, n: int) -> bytes:
    text = "Rules of the house. " * max(1, size // 20)
    value = {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": text},
            {"role": "user", "content": f"question {n}"},
        ],
    }
    if stream:
        value |= {"stream": True, "stream_options": {"include_usage": True}}
    return jsonbytes.dumps(value)


def client() -> httpx.Client:
    transport = httpx.HTTPTransport(socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
    return httpx.Client(timeout=60, transport=transport)


def timed(http: httpx.Client, url: str, data: bytes) -> float:
    start = time.perf_counter()
    with http.stream(
        "POST",
        url + "/v1/chat/completions",
        content=data,
        headers={"content-type": "application/json"},
    ) as response:
        for _ in response.iter_raw():
            pass
        assert response.status_code == 200, response.status_code
    return time.perf_counter() - start


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def latency(direct: str, proxy: str, requests: int) -> list[dict[str, object]]:
    rows = []
    for size in (200, 300_000):
        for stream in (False, True):
            times: dict[str, list[float]] = {"direct": [], "proxy": []}
            with client() as http:
                for n in range(requests):
                    for name, url in (
                        (("direct", direct), ("proxy", proxy))
                        if n % 2
                        else (("proxy", proxy), ("direct", direct))
                    ):
                        times[name].append(timed(http, url, body(size, stream, n)))
            rows.append(
                {
                    "body": "300 KB" if size > 1000 else "small",
                    "stream": stream,
                    **{
                        f"{name}_p{q}": pct(times[name], q / 100)
                        for name in times
                        for q in (50, 99)
                    },
                }
            )
    return rows


def throughput(url: str, clients: int, seconds: float) -> float:
    counts: list[int] = []
    stop = time.perf_counter() + seconds

    def loop() -> None:
        done = 0
        with client() as http:
            while time.perf_counter() < stop:
                timed(http, url, body(200, False, done))
                done += 1
        counts.append(done)

    threads = [threading.Thread(target=loop) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(counts) / seconds


def memory() -> dict[str, float]:
    audit = LiveAudit()
    tracemalloc.start()
    out = {}
    for n in range(10_000):
        text = f"conversation {n}: " + "x" * 1000
        audit.observe(
            jsonbytes.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": text}]}),
            path="/v1/chat/completions",
        )
        if n + 1 in (1_000, 10_000):
            out[f"after_{n + 1}_MB"] = tracemalloc.get_traced_memory()[0] / 2**20
    out["peak_MB"] = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    out["conversations_kept"] = len(audit.rows())
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    emulator, direct = start([sys.executable, "-c", EMULATOR], "anthropic base URL ", "stdout")
    proxy_proc, proxy = start(
        [sys.executable, "-m", "llmcore", "proxy", "--upstream", direct], "listening: ", "stderr"
    )
    try:
        rows = latency(direct, proxy, args.requests)
        rates = {
            "direct": throughput(direct, args.clients, args.seconds),
            "proxy": throughput(proxy, args.clients, args.seconds),
        }
    finally:
        for proc in (proxy_proc, emulator):
            proc.terminate()
            proc.wait()
    mem = memory()
    table = Table(
        title=f"llmcore proxy vs direct to the emulator ({args.requests} requests each,"
        " interleaved)"
    )
    for name in (
        "body",
        "stream",
        "direct p50 ms",
        "proxy p50 ms",
        "added p50 ms",
        "direct p99 ms",
        "proxy p99 ms",
        "added p99 ms",
    ):
        table.add_column(name, justify="right")
    for row in rows:
        d50, p50, d99, p99 = (
            float(row[k]) for k in ("direct_p50", "proxy_p50", "direct_p99", "proxy_p99")
        )  # type: ignore[arg-type]
        table.add_row(
            str(row["body"]),
            "yes" if row["stream"] else "no",
            f"{d50:.2f}",
            f"{p50:.2f}",
            f"{p50 - d50:+.2f}",
            f"{d99:.2f}",
            f"{p99:.2f}",
            f"{p99 - d99:+.2f}",
        )
    console = Console()
    console.print(table)
    console.print(
        f"throughput, {args.clients} clients, small bodies: direct {rates['direct']:.0f} req/s,"
        f" proxy {rates['proxy']:.0f} req/s ({rates['proxy'] / rates['direct']:.0%})"
    )
    console.print(
        f"live audit memory: {mem['after_1000_MB']:.1f} MB after 1,000 conversations,"
        f" {mem['after_10000_MB']:.1f} MB after 10,000 "
        f"(peak {mem['peak_MB']:.1f} MB; {mem['conversations_kept']:.0f} kept)"
    )
    out = ROOT / "results" / "bench_proxy.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"latency": rows, "throughput": rates, "memory": mem}, indent=2))


if __name__ == "__main__":
    main()
