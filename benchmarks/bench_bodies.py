"""Body-building benchmark: llmcore vs the official SDKs for the turn-N request body.

For N = 10, 50, 200 turns of a tool-using conversation (each turn: a user message, sometimes
with a 40 KB image; an assistant message with one or two tool calls; tool results of 1–20 KB; a
final assistant text), the median time to produce the turn-N body is measured for:

* ``llmcore cold``: ``build_body`` with no encode cache;
* ``llmcore incremental``: ``build_body`` with the :class:`~llmcore.providers.base.EncodeCache`
  carried from the turn N-1 build (how an agent loop builds);
* ``SDK``: ``client.messages.create(**body)`` / ``client.chat.completions.create(**body)`` with
  the same already-shaped body (llmcore's body parsed), sent through ``httpx2.MockTransport``
  (the current packages take an ``httpx2`` client) whose handler returns a minimal response.

Prints a rich table and writes ``results/bench_bodies.json``. Run:
``python benchmarks/bench_bodies.py [--reps R]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
from rich.console import Console
from rich.table import Table

from llmcore.messages import Image, Message, Text, ToolCall, ToolResult
from llmcore.providers import get_provider
from llmcore.providers.base import EncodeCache
from llmcore.request import Params, Request, Tool

TURNS = (10, 50, 200)
MODELS = {"anthropic": "claude-sonnet-4-5", "openai-chat": "gpt-4o"}
RESULTS = Path(__file__).resolve().parent.parent / "results" / "bench_bodies.json"

ANTHROPIC_RESPONSE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "ok"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 1, "output_tokens": 1},
}
CHAT_RESPONSE = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 0,
    "model": "gpt-4o",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "ok"},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}

TOOLS = (
    Tool.from_schema(
        "read_file",
        "Read a file from the workspace.",
        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    ),
    Tool.from_schema(
        "run_shell",
        "Run a shell command and return its output.",
        {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]},
    ),
    Tool.from_schema(
        "screenshot", "Take a screenshot of the page.", {"type": "object", "properties": {}}
    ),
)


def conversation(turns: int, seed: int = 7) -> list[Message]:
    """A deterministic tool-using conversation of ``turns`` turns (last message: a user one)."""
    rng = random.Random(seed)
    words = "the quick brown fox jumps over a lazy dog while compiling code in 日本 ünïcode"
    words = words.split()
    png = b"\x89PNG\r\n\x1a\n" + rng.randbytes(40_000)
    history: list[Message] = []
    for turn in range(turns):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(10, 60)))
        parts: list[Any] = [Text(text=text)]
        if turn % 5 == 0:
            parts.append(Image(data=png[:-8] + turn.to_bytes(8, "big"), mime_type="image/png"))
        history.append(Message(role="user", content=tuple(parts)))
        calls = [
            ToolCall(
                id=f"toolu_{turn:04d}_{k}",
                name=rng.choice(["read_file", "run_shell"]),
                arguments=json.dumps({"path": f"src/module_{turn}_{k}.py"}).encode(),
            )
            for k in range(rng.randint(1, 2))
        ]
        history.append(Message(role="assistant", content=(Text(text="Let me look."), *calls)))
        results = [
            ToolResult(
                call_id=c.id,
                tool_name=c.name,
                content=(" ".join(rng.choice(words) for _ in range(400)).encode() * 5)[
                    : rng.randint(1_000, 20_000)
                ],
            )
            for c in calls
        ]
        history.append(Message(role="tool", content=tuple(results)))
        history.append(Message(role="assistant", content=(Text(text=f"Done with step {turn}."),)))
    history.append(Message(role="user", content=(Text(text="Next, please."),)))
    return history


def request(provider: str, messages: list[Message]) -> Request:
    return Request(
        model=MODELS[provider],
        system=("You are a careful coding agent.",),
        tools=TOOLS,
        messages=tuple(messages),
        params=Params(max_tokens=4096),
    )


def previous_request(provider: str, messages: list[Message]) -> Request:
    """The turn N-1 request: the history before the last turn's messages."""
    return request(provider, messages[:-4] if len(messages) > 4 else messages)


def median_ms(fn: Callable[[], object], reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def sdk_sender(provider: str) -> Callable[[dict[str, Any]], object]:
    payload = json.dumps(ANTHROPIC_RESPONSE if provider == "anthropic" else CHAT_RESPONSE).encode()

    def handler(req: httpx2.Request) -> httpx2.Response:
        req.read()
        return httpx2.Response(200, content=payload, headers={"content-type": "application/json"})

    http_client = httpx2.Client(transport=httpx2.MockTransport(handler))
    if provider == "anthropic":
        client_a = anthropic.Anthropic(api_key="test", http_client=http_client, max_retries=0)
        return lambda body: client_a.messages.create(**body)
    client_o = openai.OpenAI(api_key="test", http_client=http_client, max_retries=0)
    return lambda body: client_o.chat.completions.create(**body)


def measure(provider: str, turns: int, reps: int) -> dict[str, float]:
    p = get_provider(provider)
    messages = conversation(turns)
    req = request(provider, messages)
    prev = previous_request(provider, messages)
    body_bytes = p.build_body(req)
    shaped = json.loads(body_bytes)
    send = sdk_sender(provider)
    send(shaped)  # warm up the client

    def incremental() -> None:
        cache = EncodeCache()
        p.build_body(prev, cache=cache)
        start = time.perf_counter()
        assert p.build_body(req, cache=cache) == body_bytes
        timings.append((time.perf_counter() - start) * 1000)

    timings: list[float] = []
    for _ in range(reps):
        incremental()
    return {
        "body_bytes": len(body_bytes),
        "llmcore_cold_ms": median_ms(lambda: p.build_body(req), reps),
        "llmcore_incremental_ms": statistics.median(timings),
        "sdk_ms": median_ms(lambda: send(shaped), reps),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=int(os.environ.get("BENCH_REPS", "15")))
    args = parser.parse_args()
    warnings.simplefilter("ignore", DeprecationWarning)  # the SDK warns about model names
    rows = []
    for provider in MODELS:
        for turns in TURNS:
            result = measure(provider, turns, args.reps)
            result["cold_speedup"] = result["sdk_ms"] / result["llmcore_cold_ms"]
            result["incremental_speedup"] = result["sdk_ms"] / result["llmcore_incremental_ms"]
            rows.append({"provider": provider, "turns": turns, **result})
    table = Table(title=f"turn-N body build, median of {args.reps} (ms)")
    for column in (
        "provider",
        "N",
        "body KB",
        "llmcore cold",
        "llmcore incr.",
        "SDK",
        "SDK/cold",
        "SDK/incr.",
    ):
        table.add_column(column, justify="right")
    for row in rows:
        table.add_row(
            row["provider"],
            str(row["turns"]),
            f"{row['body_bytes'] / 1024:.0f}",
            f"{row['llmcore_cold_ms']:.2f}",
            f"{row['llmcore_incremental_ms']:.3f}",
            f"{row['sdk_ms']:.2f}",
            f"{row['cold_speedup']:.1f}x",
            f"{row['incremental_speedup']:.1f}x",
        )
    Console().print(table)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    meta = {"reps": args.reps, "anthropic": anthropic.__version__, "openai": openai.__version__}
    RESULTS.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
