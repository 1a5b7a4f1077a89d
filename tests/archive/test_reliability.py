"""A small sample of every scenario of the reliability harness (``bench_reliability.py``).

Each row's loss columns must be 0: torn archives, lost updates, deleted-but-referenced images,
leftovers after the next save, unexpected exceptions. The random-moment kills are the only
timing-dependent cases; what they assert (no torn archive) holds whenever the kill lands.
"""

from __future__ import annotations

import errno

import pytest

from tests.archive import reliability


@pytest.mark.parametrize("error", [errno.ENOSPC, errno.EIO, errno.EACCES])
@pytest.mark.parametrize("kind", sorted(reliability.SCENARIOS))
def test_os_level_fault_at_every_call_of_a_save(tmp_path, kind, error):
    row = reliability.os_faults(tmp_path, kind, error)
    assert row.cases > 20
    assert row.clean, row.notes


def test_two_processes_saving_one_folder_never_lose_an_update(tmp_path):
    row = reliability.two_savers(tmp_path, rounds=25)
    assert row.cases == 25
    assert row.clean, row.notes


def test_opens_while_another_process_saves_never_see_a_half_save(tmp_path):
    row = reliability.reads_during_saves(tmp_path, reads=300)
    assert row.cases == 300
    assert row.clean, row.notes


def test_mutated_conversation_json_files_open_without_loss(tmp_path):
    row = reliability.mutated_opens(tmp_path, count=400, seed=11)
    assert row.cases == 400
    assert row.clean, row.notes


def test_sigkill_at_random_moments_leaves_old_or_new(tmp_path):
    row = reliability.random_kills(tmp_path, kills=25, seed=5)
    assert row.cases == 25
    assert row.clean, row.notes
