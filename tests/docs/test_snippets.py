"""Every Python and shell block of README.md and docs/ runs as written (issue 22).

One test per unit of blocks (see :mod:`tests.docs.snippets`), so ``-n 2`` spreads them. Blocks
run offline: the emulator on loopback stands in for the providers, API keys are removed from
the environment, and port 8765 in a block is replaced by a free port.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.snippets import ROOT, Block, blocks, doc_files, steps, units

_UNITS = units()
_TIMEOUT = 120
"""Seconds one unit may take before its process group is killed (a hang is a failure)."""
_LINKED = ("cassettes", "docs", "examples")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_TOKEN"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["HOME"] = str(home)
    env["XDG_CONFIG_HOME"] = str(home / ".config")
    env["NO_COLOR"] = "1"
    env.pop("LLMCORE_STRICT", None)
    return env


def _command(block: Block, folder: Path, number: int) -> list[str]:
    if block.kind == "python":
        script = folder / f"_block{number}.py"
        script.write_text(block.script, encoding="utf-8")
        return [sys.executable, str(script)]
    return ["bash", "-e", "-o", "pipefail", "-c", block.script]


def _run(block: Block, folder: Path, number: int, port: int) -> subprocess.CompletedProcess[str]:
    block = Block(**{**block.__dict__, "code": block.code.replace("8765", str(port))})
    process = subprocess.Popen(
        _command(block, folder, number),
        cwd=folder,
        env=_env(folder),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        pytest.fail(f"{block.name}: still running after {_TIMEOUT} s\n{out}\n{err}")
    finally:
        try:  # a block's background job (llmcore emulate &) never outlives it
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


@pytest.mark.parametrize("unit", _UNITS, ids=[unit[0].name for unit in _UNITS])
def test_block_runs(unit: list[Block], tmp_path: Path) -> None:
    for name in _LINKED:
        (tmp_path / name).symlink_to(ROOT / name)
    port = _free_port()
    for number, block in enumerate(steps(unit)):
        done = _run(block, tmp_path, number, port)
        assert done.returncode == 0, (
            f"{block.name} exited {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n"
            f"{done.stderr}"
        )


def test_blocks_are_found() -> None:
    names = {block.name for unit in _UNITS for block in unit}
    assert "docs/quickstart.md" in {name.rsplit(":", 1)[0] for name in names}
    assert len(names) >= 20


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_not_run_blocks_say_why(path: Path) -> None:
    for block in blocks(path):
        if block.not_run is not None:
            assert block.not_run.strip(), f"{block.name}: a not-run block needs a reason"
            assert block.kind is not None, f"{block.name}: not-run on a block that never runs"


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_continues_follows_a_block(path: Path) -> None:
    seen_runnable = False
    for block in blocks(path):
        if block.continues:
            assert seen_runnable, f"{block.name}: 'continues' with no runnable block before it"
        seen_runnable = seen_runnable or block.runnable
