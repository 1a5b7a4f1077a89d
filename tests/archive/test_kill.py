"""SIGKILL at every file-system call index of a save leaves the old or the new archive (A9).

Kills are placed at call indices (the saver kills itself right before its Nth file-system call),
never at wall-clock moments, so what is tested does not depend on the machine's load.
"""

from __future__ import annotations

import pytest

from tests.archive import reliability


@pytest.mark.parametrize("kind", sorted(reliability.SCENARIOS))
def test_sigkill_before_every_call_of_a_save_leaves_old_or_new(tmp_path, kind):
    calls = reliability.count_calls(tmp_path / "count" / "agent", *reliability.SCENARIOS[kind])
    row = reliability.kill_at_every_call(tmp_path, kind)
    assert row.cases == calls + 1  # every call index, and once after the last one
    assert calls > 20
    assert row.clean, row.notes
