"""A sample of the chat-surface rows of the reliability harness (``bench_reliability.py``).

Every fixed hostile case of each category on two of the tools (turning), a few fuzzed paths, and every placed
file × every reader: 0 escapes, 0 lost, 0 tracebacks, 0 hangs, peak RSS under 64 MiB over
baseline. The 1,200-level tree runs in the benchmark (and in ``test_tools_hostile.py``).
"""

from __future__ import annotations

import pytest

from tests.chat import hostile


@pytest.mark.parametrize("category", sorted(set(hostile.CASES) - {"deep trees"}))
def test_hostile_tool_calls_of_each_category(tmp_path, category):
    # Two tools a case, turning, so each tool meets every kind of case of the category (the
    # benchmark runs every case on all four).
    row = hostile.HostileRow(scenario=category)
    tools = hostile.TOOLS
    for index, (case, setup) in enumerate(hostile.CASES[category]):
        pair = (tools[index % 4], tools[(index + 1) % 4])
        hostile.run_case(tmp_path, row, case, setup, pair)
    assert row.cases == len(hostile.CASES[category]) * 2
    assert row.clean, (row, row.notes)


def test_fuzzed_paths_never_escape(tmp_path):
    row = hostile.fuzzed_paths(tmp_path, 20, seed=18)
    assert row.cases == 20
    assert row.clean, (row, row.notes)


def test_placed_files_never_block_or_raise_untyped(tmp_path):
    row = hostile.placed_files(tmp_path)
    assert row.cases == len(hostile.PLACED_KINDS) * len(hostile.READERS)
    assert row.clean, (row, row.notes)


def test_the_sparse_3_gib_file_is_refused_within_the_rss_limit(tmp_path):
    row = hostile.HostileRow(scenario="sizes")
    (case, setup) = hostile.CASES["sizes"][0]
    assert case == "sparse 3 GiB"
    hostile.run_case(tmp_path, row, case, setup, ("read_file", "view_image"))
    assert row.clean and row.peak_rss_mib < 64, (row, row.notes)


def test_the_harness_counts_an_escape_a_traceback_and_a_hang(tmp_path):
    # The judge itself: a result holding the secret, a raise and a hang are each counted.
    row = hostile.HostileRow(scenario="self-check")
    place = hostile.Place(tmp_path / "p")
    place.make()
    outside = place.outside_state()
    leaked = {"error": False, "secret": True, "text": "", "peak": 0}
    hostile._judge(row, place, "x × read_file", {}, leaked, outside)
    raised = hostile.in_child(lambda: {"value": 1 // 0})
    hostile._judge(row, place, "y × read_file", {}, raised, outside)
    assert row.escapes == 1 and row.unexpected == 1 and "ZeroDivisionError" in row.notes[1]
    fifo = place.ws / "pipe"
    hostile.make_fifo(fifo)
    old = hostile.HANG_SECONDS
    hostile.HANG_SECONDS = 0.5  # the blocked open below never returns on its own
    try:
        hung = hostile.in_child(lambda: {"data": open(fifo, "rb").read()}, (fifo,))
    finally:
        hostile.HANG_SECONDS = old
    assert hung == {"hang": True}
    assert not row.clean
