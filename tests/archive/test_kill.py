"""SIGKILL during repeated saves: the archive is always exactly the old or the new one (A9)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ROOT


def test_sigkill_at_random_moments_leaves_old_or_new(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.archive.kill_child",
            str(tmp_path / "agent"),
            "--kills",
            "300",
            "--seed",
            "7",
        ],
        cwd=ROOT,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    result = json.loads(proc.stdout)
    assert result["failures"] == []
    assert result["kills"] == 300
    assert result["versions_seen"] >= 6
    assert result["kills_leaving_temp_files"] > 0  # some kills landed in the middle of a save
