"""SPEC P6 and M4: a conversation saved on one provider continues unchanged on another.

All 12 ordered pairs of ``anthropic``, ``openai-chat``, ``openai-responses`` and ``openrouter``,
each over generated conversations with a save and reopen through the archive between the
providers; the checks are in :mod:`tests.properties.switching`. Examples per pair are fixed
(:data:`EXAMPLES`, whatever the profile's ``max_examples``; its other settings, e.g. the ``ci``
profile's ``derandomize``, apply), so the pairs stay near 10 s on two workers.
``benchmarks/bench_switching.py`` runs the same check and prints the 12-pair matrix.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from tests.examples import examples
from tests.properties.switching import PAIRS, check_switch

EXAMPLES = examples(full=40, sample=12)
"""Examples per ordered pair: a sample here, the full count in ``bench_properties.py``."""

_FOLDERS: dict[tuple[str, str], Path] = {}


def folder_for(pair: tuple[str, str]) -> Path:
    """One archive folder per pair, reused by its examples (each save replaces the last)."""
    if pair not in _FOLDERS:
        root = Path(tempfile.mkdtemp(prefix="p6-"))
        atexit.register(shutil.rmtree, root, True)
        _FOLDERS[pair] = root / "agent"
    return _FOLDERS[pair]


def test_all_twelve_ordered_pairs_are_covered():
    assert len(PAIRS) == 12 and len(set(PAIRS)) == 12


@pytest.mark.full_count
@pytest.mark.parametrize(("source", "target"), PAIRS, ids=[f"{a}->{b}" for a, b in PAIRS])
@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_switch_after_save_and_reopen_carries_the_same_messages(source, target, data):
    for case in check_switch(data, source, target, folder_for((source, target))):
        event(case)
