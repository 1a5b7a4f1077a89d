"""Kill a saving process with SIGKILL at random moments and check the archive each time.

Run as ``python -m tests.archive.kill_child FOLDER --kills N --seed S`` from the repository
root. A saver process (forked from this one, so it starts at once) saves conversation versions
0, 1, 2, … (cycling) into FOLDER as fast as it can; this process kills it after a random delay,
then checks that ``conversation.json`` is exactly one version's bytes, that every image it names
is present and hash-correct, and that the archive loads as exactly that version. Prints one JSON
object: kills, distinct versions seen, kills that left a temporary file behind, failures.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import time
from pathlib import Path

from llmcore import jsonbytes
from llmcore.archive import ArchiveStore, Conversation, encode, kept_images
from tests.archive.helpers import conversation, images_intact

VERSIONS = 12


def _versions() -> list:
    # Versions grow by one turn each; the last drops back to one turn (many images removed).
    return [conversation(k + 1, image_size=16_384 + 1024 * k) for k in range(VERSIONS)]


def _saver(folder: Path, versions: list, start: int) -> None:
    store = ArchiveStore(folder)
    k = start
    while True:
        k = (k + 1) % len(versions)
        store.save(Conversation(versions[k]))


def _check(
    folder: Path, expected: dict[bytes, int], versions: list
) -> tuple[int | None, str | None]:
    path = folder / "conversation.json"
    if not path.exists():
        return None, None
    data = path.read_bytes()
    k = expected.get(data)
    if k is None:
        return None, "conversation.json is no version's bytes"
    if not images_intact(folder, data):
        return k, f"version {k}: an image is missing or damaged"
    if ArchiveStore(folder).load().state != versions[k]:
        return k, f"version {k}: loads as something else"
    return k, None


def _leftover(folder: Path) -> bool:
    names = [p.name for p in folder.rglob(".*.tmp")]
    return bool(names)


def run(folder: Path, kills: int, seed: int, max_delay: float) -> dict:
    rng = random.Random(seed)
    versions = _versions()
    expected = {
        encode(v, kept_images=kept_images(v.history).kept): k for k, v in enumerate(versions)
    }
    seen: dict[int, int] = {}
    failures: list[str] = []
    with_leftovers = 0
    current = 0
    started = time.perf_counter()
    for _ in range(kills):
        pid = os.fork()
        if pid == 0:  # the saver
            try:
                _saver(folder, versions, current)
            finally:
                os._exit(1)
        time.sleep(rng.uniform(0, max_delay))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        with_leftovers += _leftover(folder)
        k, failure = _check(folder, expected, versions)
        if failure:
            failures.append(failure)
        if k is not None:
            seen[k] = seen.get(k, 0) + 1
            current = k
    return {
        "kills": kills,
        "seconds": round(time.perf_counter() - started, 3),
        "versions_seen": len(seen),
        "kills_leaving_temp_files": with_leftovers,
        "failures": failures,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", type=Path)
    parser.add_argument("--kills", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-delay", type=float, default=0.03)
    args = parser.parse_args()
    args.folder.parent.mkdir(parents=True, exist_ok=True)
    result = run(args.folder, args.kills, args.seed, args.max_delay)
    sys.stdout.buffer.write(jsonbytes.dumps(result) + b"\n")


if __name__ == "__main__":
    main()
