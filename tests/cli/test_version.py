"""``llmcore --version``: one line, ``llmcore <version>``, exit 0."""

from __future__ import annotations

import subprocess
import sys

import llmcore


def test_version_prints_name_and_version() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "from llmcore.cli import main; main()", "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0
    assert done.stdout == f"llmcore {llmcore.__version__}\n"
    assert done.stderr == ""
