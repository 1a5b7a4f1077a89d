"""A sample of each chat row of the reliability harness (``benchmarks/bench_reliability.py``
runs them at full size): junk in the sessions folder, SIGKILL and Ctrl+C at the steps of a turn.
Steps are call indices, never moments; every loss, escape, hang and traceback column is 0."""

from __future__ import annotations

import threading

import pytest

from tests.chat import reliability


def test_junk_in_the_sessions_folder_never_stops_start_up(tmp_path) -> None:
    row = reliability.junk_in_the_sessions_folder(tmp_path, count=40, seed=7)
    assert row.cases == 40
    assert row.clean, row.notes
    assert row.peak_rss_over_baseline < 64 * 2**20


def test_sigkill_at_every_step_of_a_turn_never_loses_a_shown_turn(tmp_path) -> None:
    row = reliability.steps_of_a_turn(tmp_path, "kill", stride=7)
    assert row.cases >= 9, row
    assert row.outcomes["killed"] >= 8
    assert row.clean, row.notes


@pytest.mark.skipif(
    threading.current_thread() is not threading.main_thread(), reason="signals need the main thread"
)
def test_ctrl_c_at_steps_of_a_turn_never_hangs_nor_keeps_a_cut_turn(tmp_path) -> None:
    row = reliability.steps_of_a_turn(tmp_path, "sigint", stride=13_001)
    assert row.cases >= 4, row
    assert row.outcomes.get("interrupted", 0) >= 3
    assert row.clean, row.notes
