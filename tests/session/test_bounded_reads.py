"""Session files, pointers and tracked files are read bounded and never block (issue 18 items 1-2).

A 1 GiB session file was read whole at start-up (11.7 s, 2.1 GB), and a 768 MiB tracked file
was read whole to hash it at each save. Now a session file or checkpoint over
:data:`llmcore.safeio.MAX_FILE` and a pointer over :data:`~llmcore.session.store.MAX_POINTER`
are refused by their size before any byte is read, a FIFO or device in their place is refused
unopened, and tracked files are hashed in 1 MiB chunks.
"""

from __future__ import annotations

import hashlib
import os
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest

from llmcore.errors import SessionReadError
from llmcore.runner import Runner
from llmcore.safeio import MAX_FILE
from llmcore.session.drift import build_manifest, detect_drift
from llmcore.session.store import MAX_POINTER
from tests.special_files import finishes, make_fifo, make_null_device, make_sparse

from .test_session import Replies, Terminal, _turn


def _peak(call: Callable[[], Any]) -> tuple[Any, int]:
    """``call()`` and the most bytes Python held meanwhile (tracemalloc)."""
    tracemalloc.start()
    try:
        result = finishes(call)
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture
def terminal(workspace, config, clock, ids):
    return Terminal(workspace, config, clock, ids)


@pytest.fixture
def saved(terminal, runner):
    """A session saved by one turn; returns its file."""
    with terminal.start() as first:
        _turn(first, runner, "x")
    return first.store.paths.session_file(first.session_id), first.session_id


@pytest.fixture
def runner():
    return Runner(provider="anthropic", model="claude-sonnet-4-5", transport=Replies())


def test_a_session_file_over_the_limit_is_refused_at_start_up_without_being_read(terminal, saved):
    path, old_id = saved
    make_sparse(path, MAX_FILE + 1)
    terminal.said.clear()
    session, peak = _peak(terminal.start)
    assert len(terminal.said) == 1 and "Ignored a saved session" in terminal.said[0]
    assert "67,108,865 bytes, over the 67,108,864-byte limit" in terminal.said[0]
    assert session.session_id != old_id
    assert os.path.getsize(path) == MAX_FILE + 1  # kept as it is
    path.unlink()  # (the secret scan of the config folder would read it whole)
    assert peak < 2 << 20  # the old code read all 64 MiB (and 1 GiB for a 1 GiB file)


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_fifo_or_device_in_place_of_the_session_file_is_refused_unopened(terminal, saved, kind):
    path, old_id = saved
    path.unlink()
    if kind == "fifo":
        make_fifo(path)
    elif not make_null_device(path):
        pytest.skip("this user may not create device nodes")
    terminal.said.clear()
    session = finishes(terminal.start, fifos=(path,))
    assert len(terminal.said) == 1
    expected = "a FIFO (named pipe)" if kind == "fifo" else "a character device"
    assert f"it is {expected}, not a regular file" in terminal.said[0]
    assert session.session_id != old_id


def test_a_huge_pointer_is_refused_by_its_size(terminal, saved):
    store = terminal.start().store
    pointer = store.paths.pointer_file(4242)
    make_sparse(pointer, 64 * 1024 * 1024)

    def read() -> BaseException | None:
        try:
            store.read_pointer(4242)
        except SessionReadError as exc:
            return exc.__cause__
        return None

    cause, peak = _peak(read)
    pointer.unlink()  # (the secret scan of the config folder would read it whole)
    assert f"it is 67,108,864 bytes, over the {MAX_POINTER:,}-byte limit" in str(cause)
    assert peak < 1 << 20  # the old code read all 64 MiB of it


def test_tracked_files_are_hashed_in_constant_memory(workspace):
    make_sparse(workspace / "agent_spec.md", 48 * 1024 * 1024)
    manifest, peak = _peak(lambda: build_manifest(workspace, ["agent_spec.md"]))
    digest = hashlib.sha256()
    for _ in range(48):
        digest.update(bytes(1 << 20))
    assert manifest == {"agent_spec.md": digest.hexdigest()}
    assert peak < 4 << 20  # the old code held the whole file (a 768 MiB spec: MemoryError)


def test_a_fifo_in_place_of_a_tracked_file_reads_as_deleted(workspace):
    (workspace / "spec.md").write_bytes(b"spec")
    manifest = build_manifest(workspace, ["spec.md"])
    (workspace / "spec.md").unlink()
    fifo = make_fifo(workspace / "spec.md")
    drift = finishes(lambda: detect_drift(workspace, manifest), fifos=(fifo,))
    assert drift.deleted == ("spec.md",)
    assert finishes(lambda: build_manifest(workspace, ["spec.md"]), fifos=(fifo,)) == {}
