"""Body-building benchmark: llmcore vs the official SDKs and orjson for the turn-N request body.

For N = 10, 50, 200, 1,000 turns of a tool-using conversation (each turn: a user message,
sometimes with a 40 KB image; an assistant message with one or two tool calls; tool results of
1–20 KB; a final assistant text; the newest turn has the same content at every N, so every N
encodes the same new bytes), the median time to produce the turn-N body is measured, side by
side in one run, for:

* ``llmcore incremental``: ``build_body`` with the :class:`~llmcore.providers.base.EncodeCache`
  carried from the turn N-1 build (how an agent loop builds; each timed build gets its own
  ``copy.copy`` of that cache): the new turn's messages are encoded, the rest copied from the
  stored history;
* ``llmcore cold``: ``build_body`` with no encode cache, of the messages read back from the
  archive each time (:func:`reopened`: the first request after a reopen — every object new, no
  image has its base64 yet);
* ``copy floor``: one copy of the body's bytes into a new ``bytes`` object (``b"".join`` of the
  body in two pieces) — the least any builder that returns the body as one ``bytes`` can do;
  ``incr.-floor`` (the build beyond the copy) is the median, over repetitions, of the median
  difference of 5 incremental builds each timed beside one copy (the copy's noise at
  N = 1,000 is larger than the difference); the flatness line printed under the table is that
  difference at N = 1,000 over the one at N = 200;
* ``join/msg``: ``b"".join`` of the body cut into one piece per message (what a builder that
  keeps one stored piece per message pays to join them);
* ``orjson``: ``orjson.dumps`` of the same body as a parsed dict (a C serializer, no cache);
* ``SDK`` (N ≤ 200): ``client.messages.create(**body)`` / ``client.chat.completions.create(**body)``
  with the same already-shaped body, sent through ``httpx2.MockTransport`` (the current packages
  take an ``httpx2`` client) whose handler returns a minimal response.

Prints a rich table and writes ``results/bench_bodies.json`` (``--cold-caches``:
``results/bench_bodies_cold_caches.json``). Timings depend on the machine's
load; only ratios measured in the same run compare. Run:
``python benchmarks/bench_bodies.py [--reps R] [--turns 10,50,200,1000] [--no-sdk]
[--cold-caches]``.

``--cold-caches`` writes a 64 MB buffer before each timed incremental build and each copy floor,
so every one starts with the CPU caches holding none of its code or data. Without it, what a
timed call finds in the caches depends on N: at N = 1,000 the previous ~24 MB copy has evicted
the whole last-level cache, at N = 200 it has not, so the Python work of the same new turn
runs slower at N = 1,000 for that reason alone (in an agent loop, sending the body and reading
the response stand between two builds).
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import random
import statistics
import time
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import orjson
from rich.console import Console
from rich.table import Table

from llmcore.archive import codec
from llmcore.archive.state import ConversationState
from llmcore.messages import Image, Message, Text, ToolCall, ToolResult
from llmcore.providers import get_provider
from llmcore.providers.base import EncodeCache
from llmcore.request import Params, Request, Tool

TURNS = (10, 50, 200, 1000)
SDK_MAX_TURNS = 200
PAIRS = 5
MODELS = {"anthropic": "claude-sonnet-4-5", "openai-chat": "gpt-4o", "openai-responses": "gpt-4o"}
SDK_PROVIDERS = ("anthropic", "openai-chat")
"""The providers with an SDK column (Responses has no SDK row: its peers are in bench_peers)."""
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
        if turn == turns - 1:  # the newest turn has the same content at every N: the same new
            rng = random.Random(seed + 1)  # bytes, so the builds beyond the copy compare
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


def reopened(messages: list[Message]) -> list[Message]:
    """The messages as a reopen gives them: written to ``conversation.json`` and read back.

    The archive's own codec does both (the files on disk are left out): every message, image
    and tool result is a new object, no image has its base64 yet, and tool results read as text
    are known to be valid UTF-8 (those stored as base64, not valid UTF-8, are checked again).
    """
    images = {
        hashlib.sha256(part.data).hexdigest(): part.data
        for message in messages
        for part in message.content
        if isinstance(part, Image)
    }
    stored = codec.encode(ConversationState(history=tuple(messages)))
    return list(codec.decode(stored, load_image=lambda sha256, _mime: images[sha256]).history)


def evict(cold_caches: bool) -> None:
    """With ``--cold-caches``, push the timed call's code and data out of the CPU caches."""
    if cold_caches:
        bytearray(EVICT_BYTES)


def cut(body: bytes, count: int) -> list[bytes]:
    """The body cut into ``count`` pieces of about equal size (the last one may be shorter)."""
    size = max(1, -(-len(body) // count))
    return [body[i : i + size] for i in range(0, len(body), size)]


EVICT_BYTES = 64_000_000
"""Written before a timed call with ``--cold-caches``: twice a 32 MB last-level cache."""


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn()
    return (time.perf_counter() - start) * 1000, value


def measure(
    provider: str, turns: int, reps: int, sdk: bool, cold_caches: bool = False
) -> dict[str, float]:
    """Each repetition times every column once, one after the other, so that the machine's
    load at that moment weighs on all of them; ratios are the medians of per-repetition ratios.
    """
    p = get_provider(provider)
    messages = conversation(turns)
    req = request(provider, messages)
    prev = previous_request(provider, messages)
    body_bytes = p.build_body(req)
    shaped = json.loads(body_bytes)
    halves = cut(body_bytes, 2)
    per_message = cut(body_bytes, len(messages) + 1)
    columns: dict[str, list[float]] = {
        "llmcore_incremental_ms": [],
        "llmcore_cold_ms": [],
        "copy_floor_ms": [],
        "join_per_message_ms": [],
        "orjson_ms": [],
    }
    beyond: list[float] = []
    for _ in range(reps):
        cache = EncodeCache()
        p.build_body(prev, cache=cache)
        # PAIRS incremental builds, each from its own copy of the turn N-1 cache (a build
        # changes the cache; copy.copy gives one with its own buffer), each beside one copy
        # floor: at N = 1,000 both copy ~24 MB, and one pair's difference is mostly the noise
        # of that copy.
        pairs = []
        for _ in range(PAIRS):
            copied = copy.copy(cache)
            evict(cold_caches)
            took, built = timed(partial(p.build_body, req, cache=copied))
            assert built == body_bytes
            del built, copied
            evict(cold_caches)
            pairs.append((took, timed(partial(b"".join, halves))[0]))
        columns["llmcore_incremental_ms"].append(statistics.median(i for i, _ in pairs))
        columns["copy_floor_ms"].append(statistics.median(f for _, f in pairs))
        beyond.append(statistics.median(i - f for i, f in pairs))
        columns["join_per_message_ms"].append(timed(partial(b"".join, per_message))[0])
        columns["orjson_ms"].append(timed(partial(orjson.dumps, shaped))[0])
        fresh = request(provider, reopened(messages))  # a reopen: no image has its base64 yet
        columns["llmcore_cold_ms"].append(timed(partial(p.build_body, fresh))[0])
    result: dict[str, float] = {"body_bytes": len(body_bytes), "messages": len(messages)}
    result.update({name: statistics.median(values) for name, values in columns.items()})
    result["incremental_over_floor_ms"] = max(0.0, statistics.median(beyond))
    result["incremental_over_floor"] = statistics.median(
        i / f
        for i, f in zip(columns["llmcore_incremental_ms"], columns["copy_floor_ms"], strict=True)
    )
    result["cold_over_orjson"] = statistics.median(
        c / o for c, o in zip(columns["llmcore_cold_ms"], columns["orjson_ms"], strict=True)
    )
    if sdk and turns <= SDK_MAX_TURNS and provider in SDK_PROVIDERS:
        send = sdk_sender(provider)
        send(shaped)  # warm up the client
        result["sdk_ms"] = median_ms(lambda: send(shaped), reps)
    return result


COLUMNS = (
    "provider",
    "N",
    "body KB",
    "incr.",
    "cold",
    "copy floor",
    "join/msg",
    "incr.-floor",
    "orjson",
    "SDK",
    "incr./floor",
    "cold/orjson",
    "SDK/incr.",
)


def table_row(row: dict[str, Any]) -> list[str]:
    sdk = row.get("sdk_ms")
    return [
        row["provider"],
        str(row["turns"]),
        f"{row['body_bytes'] / 1024:.0f}",
        f"{row['llmcore_incremental_ms']:.3f}",
        f"{row['llmcore_cold_ms']:.2f}",
        f"{row['copy_floor_ms']:.3f}",
        f"{row['join_per_message_ms']:.3f}",
        f"{row['incremental_over_floor_ms']:.3f}",
        f"{row['orjson_ms']:.2f}",
        "-" if sdk is None else f"{sdk:.2f}",
        f"{row['incremental_over_floor']:.1f}x",
        f"{row['cold_over_orjson']:.1f}x",
        "-" if sdk is None else f"{sdk / row['llmcore_incremental_ms']:.0f}x",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=int(os.environ.get("BENCH_REPS", "15")))
    parser.add_argument("--turns", default=",".join(str(n) for n in TURNS))
    parser.add_argument("--no-sdk", action="store_true", help="leave the SDK column out")
    parser.add_argument("--providers", default=",".join(MODELS), help="comma-separated")
    parser.add_argument(
        "--cold-caches",
        action="store_true",
        help="evict the CPU caches before each timed incremental build and copy floor",
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore", DeprecationWarning)  # the SDK warns about model names
    turns_list = [int(n) for n in args.turns.split(",")]
    rows = []
    load = os.getloadavg()
    for provider in args.providers.split(","):
        for turns in turns_list:
            result = measure(provider, turns, args.reps, not args.no_sdk, args.cold_caches)
            rows.append({"provider": provider, "turns": turns, **result})
        by_turns = {row["turns"]: row for row in rows if row["provider"] == provider}
        if 200 in by_turns and 1000 in by_turns:
            big, small = by_turns[1000], by_turns[200]
            big["incremental_over_turn_200"] = (
                big["llmcore_incremental_ms"] / small["llmcore_incremental_ms"]
            )
            big["beyond_floor_over_turn_200"] = big["incremental_over_floor_ms"] / max(
                small["incremental_over_floor_ms"], 1e-6
            )
    table = Table(title=f"turn-N body build, median of {args.reps} (ms)")
    for column in COLUMNS:
        table.add_column(column, justify="right")
    for row in rows:
        table.add_row(*table_row(row))
    Console(width=200).print(table)
    print("load average (1, 5, 15 min) at start: {:.2f} {:.2f} {:.2f}".format(*load))
    for row in rows:
        if "incremental_over_turn_200" in row:
            print(
                f"{row['provider']}: incremental turn-1000 / turn-200 = "
                f"{row['incremental_over_turn_200']:.2f}x; beyond the copy floor (incr.-floor): "
                f"{row['beyond_floor_over_turn_200']:.2f}x (flat in N: at most 1.5x)"
            )
    results = RESULTS.with_name("bench_bodies_cold_caches.json") if args.cold_caches else RESULTS
    results.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "reps": args.reps,
        "cold_caches": args.cold_caches,
        "anthropic": anthropic.__version__,
        "openai": openai.__version__,
        "orjson": orjson.__version__,
        "cpus": os.cpu_count(),
        "load_average": load,
    }
    results.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
