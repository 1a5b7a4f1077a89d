"""The fixed cost of one request at turn 10: llmcore's transport against httpx alone.

Each request goes through ``httpx.MockTransport`` (no socket), so what is measured is the
client side: building the body, :class:`llmcore.HTTPTransport` (its URL and headers, the
httpx request, reading and parsing the answer) and, as the floor, the same POST made with
httpx directly (``build_request`` + ``send`` + ``read``) and the mock handler alone. The
columns are timed in turns, so the machine's load weighs on all of them; the table gives the
minimum and the median over the rounds, in microseconds, and the load average.

Usage::

    python benchmarks/bench_request_overhead.py [--rounds 15] [--requests 500]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable

import httpx
from bench_bodies import ANTHROPIC_RESPONSE  # the same minimal answer

from llmcore import HTTPTransport, Message, Request, get_provider

ANSWER = json.dumps(ANTHROPIC_RESPONSE).encode()
HEADERS = {"content-type": "application/json", "request-id": "req_1"}
BASE = "http://127.0.0.1:1"


def _handler(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, content=ANSWER, headers=HEADERS)


def _columns() -> tuple[dict[str, Callable[[], object]], list[httpx.Client]]:
    provider = get_provider("anthropic")
    messages = tuple(
        Message.user(f"turn {i}") if i % 2 == 0 else Message.assistant(f"reply {i}")
        for i in range(19)
    )
    request = Request(model="m", messages=messages)
    body = provider.build_body(request)
    ours = httpx.Client(transport=httpx.MockTransport(_handler))
    raw = httpx.Client(transport=httpx.MockTransport(_handler))
    transport = HTTPTransport(
        client=ours, base_urls={"anthropic": BASE}, api_keys={"anthropic": "k"}
    )

    def plain_httpx() -> None:
        sent = raw.build_request(
            "POST",
            BASE + "/v1/messages",
            content=body,
            headers={"content-type": "application/json"},
        )
        response = raw.send(sent, stream=True)
        response.read()
        response.close()

    columns: dict[str, Callable[[], object]] = {
        "build + send (llmcore)": lambda: transport.send(provider, provider.build_body(request)),
        "send (llmcore)": lambda: transport.send(provider, body),
        "httpx alone": plain_httpx,
        "mock handler alone": lambda: _handler(raw.build_request("GET", BASE)),
        "build alone": lambda: provider.build_body(request),
    }
    return columns, [ours, raw]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--requests", type=int, default=500)
    args = parser.parse_args()
    load = os.getloadavg()
    columns, clients = _columns()
    times: dict[str, list[float]] = {name: [] for name in columns}
    for _ in range(args.rounds):
        for name, call in columns.items():
            started = time.perf_counter()
            for _ in range(args.requests):
                call()
            times[name].append((time.perf_counter() - started) / args.requests * 1e6)
    for client in clients:
        client.close()
    print(f"per request at turn 10, us ({args.rounds} rounds of {args.requests})")
    print(f"{'column':26} {'min':>8} {'median':>8}")
    for name, values in times.items():
        print(f"{name:26} {min(values):8.1f} {statistics.median(values):8.1f}")
    print("load average (1, 5, 15 min) at start: {:.2f} {:.2f} {:.2f}".format(*load))


if __name__ == "__main__":
    main()
