"""Fuzz the loader with mutated ``conversation.json`` files (SPEC A7, A8).

Every mutated file opens with at most one notice, nothing but ``ArchiveReadError`` leaves the
decoder, nothing escapes :meth:`ArchiveStore.open`, and opening never changes the folder (no
mutating file-system call, identical bytes after). How long each open takes is the benchmark's
to measure (``bench_reliability.py``'s "hangs over 2 s" column), not a wall-clock assertion.
The suite opens a sample of 300 mutated files; ``benchmarks/bench_properties.py`` runs this test
at 2,000 and ``benchmarks/bench_reliability.py --mutations`` opens 100,000 through the same
mutator.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmcore.archive import ArchiveStore, Conversation, decode
from llmcore.errors import ArchiveReadError
from tests.archive.conftest import memory_root
from tests.examples import examples

from .helpers import FIXTURE, CountingFS, conversation
from .mutations import Mutator


def _base_folder() -> tuple[Path, dict[str, Any]]:
    root = Path(tempfile.mkdtemp(prefix="archive-fuzz-", dir=memory_root()))
    atexit.register(shutil.rmtree, root, True)
    store = ArchiveStore(root / "base")
    store.save(Conversation(conversation(3)))
    doc = json.loads((root / "base" / "conversation.json").read_bytes())
    return root, doc


_ROOT, _BASE = _base_folder()
_MUTATOR = Mutator(json.loads(FIXTURE.read_bytes()), _BASE)


@st.composite
def mutated_files(draw: st.DrawFn) -> bytes:
    """A mutated archive file; choices come from one drawn ``Random`` to keep drawing cheap."""
    return _MUTATOR.mutate(draw(st.randoms(use_true_random=False)))


def _state_of(folder: Path) -> tuple:
    """conversation.json's bytes and every other entry's name, size and mtime."""
    entries = []
    for root, dirs, files in os.walk(folder):
        for name in sorted(dirs + files):
            info = os.lstat(os.path.join(root, name))
            entries.append((root, name, info.st_size, info.st_mtime_ns))
    return (folder / "conversation.json").read_bytes(), entries


@pytest.mark.full_count
@settings(
    max_examples=examples(full=2000, sample=300),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(mutated_files())
def test_mutated_files_open_with_at_most_one_notice_and_change_nothing(data):
    folder = _ROOT / "case"
    if not folder.exists():
        shutil.copytree(_ROOT / "base", folder)
    target = folder / "conversation.json"
    target.unlink()  # a fresh file: rewriting in place makes ext4 flush at close (auto_da_alloc)
    target.write_bytes(data)
    before = _state_of(folder)
    try:
        decode(data)
    except ArchiveReadError as exc:
        assert exc.location is not None and exc.location.startswith("$")
    fs = CountingFS()
    conv = ArchiveStore(folder, fs=fs).open()
    unreadable = [n for n in conv.notices if "image budget" not in n.message]  # A6 aside
    assert len(unreadable) <= 1
    assert conv.keeps_unreadable == bool(unreadable)
    assert fs.calls == []
    assert _state_of(folder) == before
    # A save of the untouched conversation keeps an unreadable folder byte-for-byte.
    if unreadable:
        ArchiveStore(folder).save(conv)
        assert _state_of(folder) == before
