"""The archive tests work in memory (tmpfs) where the machine has one.

Saves make fsync calls and ext4 flushes a file replaced by rename at close; on a busy disk each
costs milliseconds, and the SIGKILL, fault and fuzz tests make thousands. What they check does
not depend on the file system: a process killed (or failed) at a given call leaves what it had
written in the kernel either way, and the calls, their order and their errors are the same.
``benchmarks/bench_reliability.py`` runs the full-size scenarios on the disk. Without
``/dev/shm`` the tests use pytest's own temporary folder.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

MEMORY = Path("/dev/shm")
"""Linux's tmpfs mount."""


def memory_root() -> Path | None:
    """``/dev/shm`` when it is a writable folder, else ``None`` (the default temporary folder)."""
    return MEMORY if MEMORY.is_dir() and os.access(MEMORY, os.W_OK | os.X_OK) else None


@pytest.fixture
def tmp_path(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh empty folder for one test, on tmpfs when there is one; removed afterwards."""
    root = memory_root()
    if root is None:
        yield tmp_path_factory.mktemp("archive")
        return
    folder = Path(tempfile.mkdtemp(prefix="llmcore-archive-test-", dir=root))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
