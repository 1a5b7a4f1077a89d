"""``-`` when the process was started with standard input closed (``<&-``): one line, exit 2."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    ("command", "line"),
    [
        (
            ["body", "-", "-p", "anthropic"],
            "llmcore: <stdin>: cannot read (standard input is closed)",
        ),
        (
            ["import", "-", "-p", "anthropic"],
            "llmcore: <stdin>: cannot read (standard input is closed)",
        ),
        (["audit", "-"], "llmcore: <stdin>: cannot read: standard input is closed"),
    ],
)
def test_closed_standard_input_is_one_line(command: list[str], line: str) -> None:
    shell = 'exec "$0" -c "from llmcore.cli import main; main()" "$@" <&-'
    done = subprocess.run(["sh", "-c", shell, sys.executable, *command], capture_output=True)
    assert done.returncode == 2
    assert done.stdout == b""
    assert done.stderr.decode().splitlines() == [line]
