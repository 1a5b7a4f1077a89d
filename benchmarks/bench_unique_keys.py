"""Measure what ``jsonbytes.loads(..., unique_keys=True)`` costs on an archive-sized file.

Builds a ~3 MB ``conversation.json``-like document (sorted keys, two-space indent: the archive's
form; messages with text, a tool call, a tool result, usage and provider state) and times, as
the minimum and median over ``--repeat`` interleaved runs:

* ``json.loads`` on the text (the floor);
* ``jsonbytes.loads`` on the bytes (strict UTF-8 decode added);
* ``jsonbytes.loads(..., unique_keys=True)`` (the duplicate-key check);
* the error path: the same file with a repeated top-level key (a second, locating parse).

Usage::

    python benchmarks/bench_unique_keys.py [--repeat 25] [--size 3000000]
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from llmcore import jsonbytes


def _message(index: int, rng: random.Random) -> dict[str, Any]:
    return {
        "role": "user" if index % 2 == 0 else "assistant",
        "content": [
            {"type": "text", "text": "lorem ipsum " * rng.randint(5, 60)},
            {
                "type": "toolCall",
                "id": f"call_{index}",
                "name": "read_file",
                "arguments": {"path": f"/src/file{index}.py", "start": index, "end": index + 40},
            },
            {
                "type": "toolResult",
                "callID": f"call_{index}",
                "isError": False,
                "content": [{"type": "text", "text": "x = 1\n" * rng.randint(1, 30)}],
            },
        ],
        "usage": {"input": 100 + index, "cacheRead": 5000, "cacheWrite": 20, "output": 50},
        "provider": {"name": "anthropic", "state": {"signature": "abc" * 10}},
    }


def build(size: int) -> bytes:
    """Return archive-like JSON bytes of at least ``size`` bytes."""
    rng = random.Random(1)
    history: list[dict[str, Any]] = []
    doc = {"formatVersion": 1, "model": "claude-sonnet-4-5", "history": history}
    while True:
        history.extend(_message(len(history) + k, rng) for k in range(50))
        data = jsonbytes.dumps_sorted(doc, indent=2)
        if len(data) >= size:
            return data


def _refused(data: bytes) -> None:
    try:
        jsonbytes.loads(data, unique_keys=True)
    except jsonbytes.DuplicateKeyError:
        return
    raise AssertionError("the repeated key was not refused")


def main() -> None:
    """Run the measurement and print one line per case."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=25)
    parser.add_argument("--size", type=int, default=3_000_000)
    args = parser.parse_args()
    data = build(args.size)
    text = data.decode("utf-8")
    bad = data.replace(b'"formatVersion": 1', b'"formatVersion": 1, "formatVersion": 1', 1)
    cases: dict[str, Callable[[], object]] = {
        "json.loads(text)": lambda: json.loads(text),
        "jsonbytes.loads(data)": lambda: jsonbytes.loads(data),
        "jsonbytes.loads(data, unique_keys=True)": lambda: jsonbytes.loads(data, unique_keys=True),
        "error path (repeated top-level key)": lambda: _refused(bad),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.repeat):
        for name, run in cases.items():
            gc.collect()
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    floor = min(times["json.loads(text)"])
    print(f"{len(data):,} bytes")
    for name, got in times.items():
        best, median = min(got), statistics.median(got)
        print(
            f"{name:42} min {best * 1e3:7.1f} ms  median {median * 1e3:7.1f} ms  "
            f"x{best / floor:.2f} of json.loads"
        )


if __name__ == "__main__":
    main()
