"""The proxy's cost: added latency and throughput vs. direct to the emulator; audit memory bound.

The emulator and ``llmcore proxy --upstream EMULATOR`` each run in their own process. In the
same run, for each case — a small Chat body and a 300 KB one, each streamed and not — a
keep-alive client sends ``--requests`` requests direct and as many through the proxy, the two
interleaved in rounds; the table gives p50/p99 latency of each and the added p50/p99. Then
``--clients`` threads send small requests for ``--seconds`` seconds, direct and through the
proxy: requests per second. Last, the live audit's memory (tracemalloc) after 1,000 and after
10,000 conversations, each a different 1 KB first message: bounded by ``max_conversations``
(1,000), the second figure is about the first. Writes ``results/bench_proxy.json``.

``--instant`` puts an upstream that answers at once in the emulator's place: what is left is
the proxy's own cost (streamed cases are then plain JSON too; writes
``results/bench_proxy_instant.json``). ``--before DIR`` runs a second proxy from another
checkout's source (``PYTHONPATH=DIR``) in the same rounds: the columns ``before`` beside the
proxy of this tree, for a change's effect.

Run: ``python benchmarks/bench_proxy.py [--requests 200] [--clients 4] [--seconds 3]
[--before DIR] [--instant]``.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

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
INSTANT = """
import socket, uvicorn
ANSWER = b'{"object": "chat.completion", "usage": {"prompt_tokens": 10, "completion_tokens": 1}}'
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(ANSWER))]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": ANSWER})
sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
sock.bind(("127.0.0.1", 0))
sock.listen(512)
print(f"anthropic base URL http://127.0.0.1:{sock.getsockname()[1]} ", flush=True)
config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", ws="none")
uvicorn.Server(config).run(sockets=[sock])
"""
"""``--instant``: an upstream that answers every request at once with a fixed JSON body, so
the added latency is the proxy's own (the emulator's work, and its spread, left out)."""


def start(
    args: list[str], marker: str, stream: str, source: Path = ROOT
) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "PYTHONPATH": str(source)}
    proc = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=source, env=env
    )
    pipe = proc.stdout if stream == "stdout" else proc.stderr
    assert pipe is not None
    line = pipe.readline()
    return proc, line.split(marker)[1].split(" ")[0]


def body(size: int, stream: bool, n: int) -> bytes:
    text = "Rules of the house. " * max(1, size // 20)
    value: dict[str, Any] = {
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


def latency(urls: dict[str, str], requests: int) -> list[dict[str, Any]]:
    """p50/p99 per case and URL; each round sends one request to each, in a rotating order."""
    rows = []
    names = list(urls)
    for size in (200, 300_000):
        for stream in (False, True):
            times: dict[str, list[float]] = {name: [] for name in names}
            with client() as http:
                for n in range(requests):
                    for name in names[n % len(names) :] + names[: n % len(names)]:
                        times[name].append(timed(http, urls[name], body(size, stream, n)))
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


def table(rows: list[dict[str, Any]], names: list[str], requests: int, instant: bool) -> Table:
    """Direct p50/p99, then each proxy's p50/p99 and the p50/p99 it adds."""
    upstream = "an instant upstream" if instant else "the emulator"
    out = Table(
        title=f"llmcore proxy vs direct to {upstream} ({requests} requests each, interleaved)"
    )
    columns = ["body", "stream", "direct p50 ms", "direct p99 ms"]
    for name in names:
        columns += [f"{name} p50 ms", f"{name} added p50", f"{name} p99 ms", f"{name} added p99"]
    for column in columns:
        out.add_column(column, justify="right")
    for row in rows:
        d50, d99 = float(row["direct_p50"]), float(row["direct_p99"])
        cells = [str(row["body"]), "yes" if row["stream"] else "no", f"{d50:.2f}", f"{d99:.2f}"]
        for name in names:
            p50, p99 = float(row[f"{name}_p50"]), float(row[f"{name}_p99"])
            cells += [f"{p50:.2f}", f"{p50 - d50:+.2f}", f"{p99:.2f}", f"{p99 - d99:+.2f}"]
        out.add_row(*cells)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--before", type=Path, help="another checkout: its proxy beside this one")
    parser.add_argument("--instant", action="store_true", help="an upstream that answers at once")
    args = parser.parse_args()
    upstream = INSTANT if args.instant else EMULATOR
    emulator, direct = start([sys.executable, "-c", upstream], "anthropic base URL ", "stdout")
    command = [sys.executable, "-m", "llmcore", "proxy", "--upstream", direct]
    procs = {"proxy": start(command, "listening: ", "stderr")}
    if args.before is not None:
        procs = {"before": start(command, "listening: ", "stderr", args.before), **procs}
    urls = {"direct": direct, **{name: url for name, (_, url) in procs.items()}}
    try:
        rows = latency(urls, args.requests)
        rates = {name: throughput(url, args.clients, args.seconds) for name, url in urls.items()}
    finally:
        for proc, _ in procs.values():
            proc.terminate()
            proc.wait()
        emulator.terminate()
        emulator.wait()
    mem = memory()
    console = Console(width=200)
    console.print(table(rows, list(procs), args.requests, args.instant))
    shown = ", ".join(
        f"{name} {rate:.0f} req/s ({rate / rates['direct']:.0%})" for name, rate in rates.items()
    )
    console.print(f"throughput, {args.clients} clients, small bodies: {shown}")
    console.print(
        f"live audit memory: {mem['after_1000_MB']:.1f} MB after 1,000 conversations,"
        f" {mem['after_10000_MB']:.1f} MB after 10,000 "
        f"(peak {mem['peak_MB']:.1f} MB; {mem['conversations_kept']:.0f} kept)"
    )
    out = ROOT / "results" / ("bench_proxy_instant.json" if args.instant else "bench_proxy.json")
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"latency": rows, "throughput": rates, "memory": mem}, indent=2))


if __name__ == "__main__":
    main()
