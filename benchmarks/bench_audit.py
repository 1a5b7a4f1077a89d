"""Auditor throughput on a synthetic multi-turn agent session given as JSONL (SPEC V1, issue 5).

Builds, for each provider shape, the request bodies an agent sends over a long tool-using session
(tools and a long system prompt, tool calls with arguments, tool results of 2-12 KB, one image of
about 150 KB, a moving breakpoint on the newest message), writes them one per line, and times
reading + auditing the JSONL file (parsing included). Prints a table of medians and writes
``results/bench_audit.json``. Target: >= 50 MB/s.

Run: ``python benchmarks/bench_audit.py [--turns N] [--repeats N]``.
"""

from __future__ import annotations

import argparse
import base64
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from llmcore import jsonbytes
from llmcore.audit import audit_paths

ROOT = Path(__file__).resolve().parent.parent
TARGET_MB_S = 50.0
WORDS = (
    "cache prefix request body token stable history message provider tool result image "
    "archive session turn byte order key value compaction summary breakpoint model"
).split()


def _text(rng: random.Random, n_bytes: int) -> str:
    out: list[str] = []
    size = 0
    while size < n_bytes:
        word = rng.choice(WORDS)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)


def _tools(rng: random.Random) -> list[dict[str, Any]]:
    return [
        {
            "name": f"tool_{i}",
            "description": _text(rng, 300),
            "input_schema": {
                "type": "object",
                "properties": {
                    f"arg{j}": {"type": "string", "description": _text(rng, 60)} for j in range(4)
                },
                "required": ["arg0"],
            },
        }
        for i in range(6)
    ]


def _neutral_session(
    turns: int, seed: int = 7
) -> tuple[str, list[dict[str, Any]], list[list[dict[str, Any]]]]:
    """Return (system, tools, steps); a step is the neutral events sent before one request."""
    rng = random.Random(seed)
    system = _text(rng, 6000)
    tools = _tools(rng)
    image = base64.b64encode(rng.randbytes(110_000)).decode()
    steps: list[list[dict[str, Any]]] = []
    for t in range(turns):
        events: list[dict[str, Any]] = [
            {"kind": "user", "text": _text(rng, 300), "image": image if t == 1 else None}
        ]
        steps.append(events)
        for c in range(2):
            call_id = f"call_{t}_{c}"
            args = {
                "arg0": _text(rng, 80),
                "arg1": rng.randint(0, 10_000),
                "path": f"src/mod_{t}_{c}.py",
            }
            steps.append(
                [
                    {"kind": "call", "id": call_id, "name": f"tool_{c}", "args": args},
                    {"kind": "result", "id": call_id, "text": _text(rng, rng.randint(2000, 12000))},
                ]
            )
        steps[-1].append({"kind": "answer", "text": _text(rng, 500)})
    return system, tools, steps


def _anthropic_history(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for e in events:
        if e["kind"] == "user":
            blocks: list[dict[str, Any]] = []
            if e["image"]:
                blocks.append(
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": e["image"]},
                    }
                )
            blocks.append({"type": "text", "text": e["text"]})
            out.append({"role": "user", "content": blocks})
        elif e["kind"] == "call":
            out.append(
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": e["id"], "name": e["name"], "input": e["args"]}
                    ],
                }
            )
        elif e["kind"] == "result":
            out.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": e["id"], "content": e["text"]}
                    ],
                }
            )
        else:
            out.append({"role": "assistant", "content": [{"type": "text", "text": e["text"]}]})
    return out


def _chat_history(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for e in events:
        if e["kind"] == "user":
            parts: list[dict[str, Any]] = [{"type": "text", "text": e["text"]}]
            if e["image"]:
                parts.append(
                    {
                        "type": "image_url",
                        "image_url": {"url": "data:image/png;base64," + e["image"]},
                    }
                )
            out.append({"role": "user", "content": parts})
        elif e["kind"] == "call":
            call = {
                "id": e["id"],
                "type": "function",
                "function": {"name": e["name"], "arguments": jsonbytes.dumps(e["args"]).decode()},
            }
            out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif e["kind"] == "result":
            out.append({"role": "tool", "tool_call_id": e["id"], "content": e["text"]})
        else:
            out.append({"role": "assistant", "content": e["text"]})
    return out


def _responses_history(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for e in events:
        if e["kind"] == "user":
            parts: list[dict[str, Any]] = [{"type": "input_text", "text": e["text"]}]
            if e["image"]:
                parts.append(
                    {"type": "input_image", "image_url": "data:image/png;base64," + e["image"]}
                )
            out.append({"role": "user", "content": parts})
        elif e["kind"] == "call":
            out.append(
                {
                    "type": "function_call",
                    "call_id": e["id"],
                    "name": e["name"],
                    "arguments": jsonbytes.dumps(e["args"]).decode(),
                }
            )
        elif e["kind"] == "result":
            out.append({"type": "function_call_output", "call_id": e["id"], "output": e["text"]})
        else:
            out.append(
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": e["text"]}],
                }
            )
    return out


def _interleaved(turns: int) -> list[bytes]:
    """Two Anthropic sessions sent alternately: no body follows its own predecessor."""
    first, second = _bodies("anthropic", turns // 2), _bodies("anthropic", turns // 2, seed=8)
    return [body for pair in zip(first, second, strict=True) for body in pair]


def _bodies(shape: str, turns: int, seed: int = 7) -> list[bytes]:
    system, tools, steps = _neutral_session(turns, seed)
    bodies: list[bytes] = []
    events: list[dict[str, Any]] = []
    for step in steps:
        events.extend(step)
        if shape == "anthropic":
            history = _anthropic_history(events)
            last = dict(history[-1])
            blocks = [dict(b) for b in last["content"]]
            blocks[-1]["cache_control"] = {"type": "ephemeral"}
            history[-1] = {**last, "content": blocks}
            tools_wire = [dict(t) for t in tools]
            tools_wire[-1]["cache_control"] = {"type": "ephemeral"}
            body = {
                "model": "claude-sonnet-4-5",
                "max_tokens": 4096,
                "tools": tools_wire,
                "system": [
                    {"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}
                ],
                "messages": history,
            }
        elif shape == "openai-chat":
            fn_tools = [
                {
                    "type": "function",
                    "function": {
                        "name": t["name"],
                        "description": t["description"],
                        "parameters": t["input_schema"],
                    },
                }
                for t in tools
            ]
            body = {
                "model": "gpt-4.1",
                "messages": [{"role": "system", "content": system}, *_chat_history(events)],
                "tools": fn_tools,
            }
        else:
            fn_tools = [
                {
                    "type": "function",
                    "name": t["name"],
                    "description": t["description"],
                    "parameters": t["input_schema"],
                }
                for t in tools
            ]
            body = {
                "model": "gpt-5",
                "instructions": system,
                "input": _responses_history(events),
                "tools": fn_tools,
            }
        bodies.append(jsonbytes.dumps(body))
    return bodies


def _measure(path: Path, repeats: int) -> tuple[list[float], Any]:
    times: list[float] = []
    report = None
    for _ in range(repeats):
        start = time.perf_counter()
        report = audit_paths([path])
        times.append(time.perf_counter() - start)
    return times, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for shape in ("anthropic", "openai-chat", "openai-responses", "anthropic x2 interleaved"):
            if shape.endswith("interleaved"):
                bodies = _interleaved(args.turns)
            else:
                bodies = _bodies(shape, args.turns)
            path = Path(tmp) / f"{shape.replace(' ', '_')}.jsonl"
            path.write_bytes(b"\n".join(bodies) + b"\n")
            size = path.stat().st_size
            times, report = _measure(path, args.repeats)
            median = statistics.median(times)
            rows.append(
                {
                    "shape": shape,
                    "requests": len(bodies),
                    "megabytes": size / 1e6,
                    "median_seconds": median,
                    "min_seconds": min(times),
                    "median_mb_per_s": size / 1e6 / median,
                    "verdicts": report.counts(),
                    "theoretical_hit_rate": report.theoretical_hit_rate,
                }
            )
    table = Table(
        title=f"llmcore audit throughput (JSONL, parsing included, median of {args.repeats})"
    )
    for col in ("shape", "requests", "MB", "median s", "MB/s", "verdicts", "theoretical hit rate"):
        table.add_column(col, justify="left" if col in ("shape", "verdicts") else "right")
    for r in rows:
        verdicts = ", ".join(f"{k} {v}" for k, v in r["verdicts"].items() if v)
        table.add_row(
            r["shape"],
            str(r["requests"]),
            f"{r['megabytes']:.1f}",
            f"{r['median_seconds']:.3f}",
            f"{r['median_mb_per_s']:.0f}",
            verdicts,
            f"{r['theoretical_hit_rate']:.1%}",
        )
    Console(width=130).print(table)
    slowest = min(r["median_mb_per_s"] for r in rows)
    verdict = "ok" if slowest >= TARGET_MB_S else "BELOW TARGET"
    print(f"slowest median: {slowest:.0f} MB/s (target >= {TARGET_MB_S:.0f} MB/s): {verdict}")
    out = ROOT / "results" / "bench_audit.json"
    out.parent.mkdir(exist_ok=True)
    out.write_bytes(
        jsonbytes.dumps(
            {
                "target_mb_per_s": TARGET_MB_S,
                "turns": args.turns,
                "repeats": args.repeats,
                "results": rows,
            }
        )
        + b"\n"
    )
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
