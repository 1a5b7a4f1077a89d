"""Benchmark the conversation archive: save, reopen, incremental and unchanged saves.

For conversations of 10, 100 and 1,000 turns (each turn: a user message with a ~24 KB image, a
tool call, a ~2 KB tool result, a reply, and three panel items; 1,000 turns exceed the 20 MiB
image budget, so older images are omitted) it measures, as medians over several runs:

* the first save into an empty folder (with every fsync);
* reopening in a fresh store (reading, hash-checking images, decoding);
* a save after one new turn, the first after a reopen: time, bytes written and file-system
  calls;
* a save of an unchanged conversation: time and mutating file-system calls (must be 0);
* a save after one new turn in the process that saved the conversation (no reopen);
* each +1-turn time is the median of five saves, each followed by the two floors below
  measured on the bytes it wrote, so each ratio compares medians taken side by side;
* the floor those +1-turn saves are measured against, in the same run: ``orjson.dumps`` of the
  same document with sorted keys and indent, plus write, fsync and rename of those bytes;
* the durable floor: the same, plus what SPEC A9 makes a +1-turn save do besides (the new
  turn's image written, fsynced and renamed, ``images/`` and the folder fsynced: four fsyncs
  where the floor has one), so the ratio to it is what the save costs beyond its durability.

Crashes, faults and concurrency are measured by ``bench_reliability.py``.

Usage::

    python benchmarks/bench_archive.py [--repeat 5]

Prints a table and writes ``results/bench_archive.json``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console
from rich.table import Table

from llmcore.archive import ArchiveStore, Conversation, Item
from llmcore.archive.fs import MUTATING, FileSystem
from llmcore.messages import Image, Message, Text, ToolCall, ToolResult
from llmcore.usage import Cost, Usage

ROOT = Path(__file__).resolve().parent.parent
SIZES = (10, 100, 1000)
IMAGE_BYTES = 24 * 1024
RESULT_BYTES = 2 * 1024


class CountingFS(FileSystem):
    """Counts mutating calls and bytes written."""

    def __init__(self) -> None:
        self.calls = 0
        self.bytes = 0

    def __getattribute__(self, name: str) -> Any:
        attr = super().__getattribute__(name)
        if name not in MUTATING:
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if name == "write":  # bytes, or a list of pieces
                data = args[1]
                self.bytes += sum(map(len, data)) if isinstance(data, list) else len(data)
            return attr(*args, **kwargs)

        return counted


def _image(index: int) -> Image:
    body = os.urandom(16) + index.to_bytes(4, "big") * ((IMAGE_BYTES - 24) // 4)
    return Image(data=b"\x89PNG\r\n\x1a\n" + body, mime_type="image/png")


def _turn(index: int) -> tuple[list[Message], list[Item]]:
    call = f"toolu_{index:05d}"
    result = json.dumps({"created": [f"node-{index}-{k}" for k in range(RESULT_BYTES // 20)]})
    messages = [
        Message(
            role="user",
            content=(Text(text=f"# This turn\nMode: Just do it\n\nStep {index}"), _image(index)),
        ),
        Message.assistant(
            f"Working on step {index}.",
            ToolCall(id=call, name="batch_design", arguments=b'{"operations":"[]"}'),
        ),
        Message.tool(ToolResult(call_id=call, tool_name="batch_design", content=result.encode())),
        Message.assistant(f"Step {index} is done."),
    ]
    items = [
        Item.make(id=f"u{index}", type="user", text=f"Step {index}", hasImage=True),
        Item.make(id=f"t{index}", type="tool", name="batch_design", status="succeeded"),
        Item.make(id=f"a{index}", type="assistant", text=f"Step {index} is done."),
    ]
    return messages, items


def _conversation(turns: int) -> Conversation:
    conv = Conversation()
    for index in range(turns):
        messages, items = _turn(index)
        conv.end_turn(
            messages=messages,
            items=items,
            provider="anthropic",
            model="claude-sonnet-4-5",
            rounds=[
                (
                    Usage(input=100, output=20, cache_read=1000),
                    Cost(kind="estimated", dollars=0.001),
                )
            ],
        )
    return conv


def _floor_ms(folder: Path) -> float:
    """orjson with sorted keys and indent + write + fsync + rename of the same document."""
    doc = orjson.loads((folder / "conversation.json").read_bytes())
    target = folder.parent / "floor.json"
    started = time.perf_counter()
    data = orjson.dumps(doc, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n"
    _write_durably(target, data)
    return (time.perf_counter() - started) * 1000


def _durable_floor_ms(folder: Path) -> float:
    """:func:`_floor_ms` plus the image file and the two folder fsyncs of a durable +1 save."""
    doc = orjson.loads((folder / "conversation.json").read_bytes())
    image = _image(987_654).data
    base = folder.parent / "durable-floor"
    shutil.rmtree(base, ignore_errors=True)
    (base / "images").mkdir(parents=True)
    started = time.perf_counter()
    data = orjson.dumps(doc, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n"
    _write_durably(base / "images" / "new.png", image)
    _write_durably(base / "conversation.json", data, sync_after=base / "images")
    _fsync_dir(base)
    return (time.perf_counter() - started) * 1000


def _write_durably(target: Path, data: bytes, *, sync_after: Path | None = None) -> None:
    temp = target.with_name(f".{target.name}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    if sync_after is not None:
        _fsync_dir(sync_after)
    os.rename(temp, target)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


SAMPLES = 5
"""+1-turn saves (and floors, interleaved with them) per run and kind, in one run."""


def _measure(turns: int, work: Path) -> dict[str, float]:
    conv = _conversation(turns)
    folder = work / f"agent-{turns}"
    if folder.exists():
        shutil.rmtree(folder)
    writer = ArchiveStore(folder)
    started = time.perf_counter()
    first = writer.save(conv)
    save_s = time.perf_counter() - started
    same, floors, durables = [], [], []
    for sample in range(SAMPLES):  # each save interleaved with the two floors of its bytes
        messages, items = _turn(turns + 1000 + sample)
        conv.end_turn(messages=messages, items=items, provider="anthropic", model="m")
        gc.collect()
        started = time.perf_counter()
        writer.save(conv)
        same.append(time.perf_counter() - started)
        floors.append(_floor_ms(folder))
        durables.append(_durable_floor_ms(folder))

    fs = CountingFS()
    store = ArchiveStore(folder, fs=fs)  # a fresh store, used for open and saves as a host does
    started = time.perf_counter()
    reopened = store.open()
    reopen_s = time.perf_counter() - started
    assert len(reopened.history) == len(conv.history)
    # past the budget the one notice says how many images the saves omitted (SPEC A6)
    assert all("omitted" in notice.message for notice in reopened.notices)
    assert fs.calls == 0

    started = time.perf_counter()
    unchanged = store.save(reopened)
    unchanged_s = time.perf_counter() - started
    unchanged_calls = fs.calls

    after_reopen = []
    for sample in range(SAMPLES):  # the first save after each of several reopens
        if sample:
            store = ArchiveStore(folder, fs=fs)
            reopened = store.open()
        messages, items = _turn(turns + sample)
        reopened.end_turn(messages=messages, items=items, provider="anthropic", model="m")
        fs.calls = fs.bytes = 0
        gc.collect()
        started = time.perf_counter()
        after_turn = store.save(reopened)
        after_reopen.append(time.perf_counter() - started)
        floors.append(_floor_ms(folder))
        durables.append(_durable_floor_ms(folder))
    same_ms = statistics.median(same) * 1000
    turn_ms = statistics.median(after_reopen) * 1000
    floor_ms, durable_ms = statistics.median(floors), statistics.median(durables)
    return {
        "same_process_one_turn_save_ms": same_ms,
        "floor_ms": floor_ms,
        "same_process_over_floor": same_ms / floor_ms,
        "reopened_over_floor": turn_ms / floor_ms,
        "durable_floor_ms": durable_ms,
        "same_process_over_durable": same_ms / durable_ms,
        "reopened_over_durable": turn_ms / durable_ms,
        "first_save_ms": save_s * 1000,
        "first_save_bytes": first.bytes_written,
        "images_omitted": first.images_omitted,
        "reopen_ms": reopen_s * 1000,
        "unchanged_save_ms": unchanged_s * 1000,
        "unchanged_save_mutating_calls": unchanged_calls,
        "unchanged_action": unchanged.action,
        "one_turn_save_ms": turn_ms,
        "one_turn_bytes_written": fs.bytes,
        "one_turn_mutating_calls": fs.calls,
        "one_turn_action": after_turn.action,
        "conversation_json_bytes": (folder / "conversation.json").stat().st_size,
    }


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in runs[0]:
        values = [run[key] for run in runs]
        out[key] = statistics.median(values) if isinstance(values[0], int | float) else values[0]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "bench_archive.json")
    args = parser.parse_args()
    console = Console(width=200)
    results: dict[str, Any] = {"repeat": args.repeat, "load": os.getloadavg(), "sizes": {}}
    with tempfile.TemporaryDirectory(
        prefix="bench-archive-", dir=ROOT / "results" if (ROOT / "results").exists() else None
    ) as tmp:
        work = Path(tmp)
        for turns in SIZES:
            runs = [
                _measure(turns, work)
                for _ in range(args.repeat if turns < 1000 else max(1, args.repeat // 2 + 1))
            ]
            results["sizes"][str(turns)] = _median(runs)
            console.log(f"{turns} turns measured")
    table = Table(title="Conversation archive (medians)")
    for column in (
        "turns",
        "json KB",
        "first save ms",
        "reopen ms",
        "unchanged save ms",
        "unchanged writes",
        "+1 turn save ms",
        "+1 same process ms",
        "floor ms",
        "× floor (reopened / same)",
        "durable floor ms",
        "× durable (reopened / same)",
        "+1 turn bytes",
        "+1 turn fs calls",
        "images omitted",
    ):
        table.add_column(column, justify="right")
    for turns, row in results["sizes"].items():
        table.add_row(
            turns,
            f"{row['conversation_json_bytes'] / 1024:.0f}",
            f"{row['first_save_ms']:.1f}",
            f"{row['reopen_ms']:.1f}",
            f"{row['unchanged_save_ms']:.1f}",
            f"{row['unchanged_save_mutating_calls']:.0f}",
            f"{row['one_turn_save_ms']:.1f}",
            f"{row['same_process_one_turn_save_ms']:.1f}",
            f"{row['floor_ms']:.1f}",
            f"{row['reopened_over_floor']:.2f} / {row['same_process_over_floor']:.2f}",
            f"{row['durable_floor_ms']:.1f}",
            f"{row['reopened_over_durable']:.2f} / {row['same_process_over_durable']:.2f}",
            f"{row['one_turn_bytes_written']:,.0f}",
            f"{row['one_turn_mutating_calls']:.0f}",
            f"{row['images_omitted']:.0f}",
        )
    console.print(table)
    console.print(
        "load average (1, 5, 15 min) at start: {:.2f} {:.2f} {:.2f}".format(*results["load"])
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    console.print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
