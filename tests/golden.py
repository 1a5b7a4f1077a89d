"""Golden-file comparison: bodies are compared byte for byte with files under tests/.

Set ``UPDATE_GOLDEN=1`` to (re)write the files instead; review the diff before committing, since
a changed golden body means every user's prompt cache misses once (SPEC P2).
"""

from __future__ import annotations

import os
from pathlib import Path


def check_golden(path: Path, data: bytes) -> None:
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    expected = path.read_bytes()
    if data != expected:
        n = next(
            (i for i, (a, b) in enumerate(zip(data, expected, strict=False)) if a != b),
            min(len(data), len(expected)),
        )
        raise AssertionError(
            f"{path.name}: first difference at byte {n}:\n built:  {data[max(0, n - 40) : n + 40]!r}\n golden: {expected[max(0, n - 40) : n + 40]!r}"
        )
