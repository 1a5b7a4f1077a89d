"""Fake CLI executables that replay recorded event streams (tests/backends/streams/).

:func:`fake_cli` writes a small Python program into a temporary folder. Each run prints the
next stream's lines (one stream per run, in order), logs its command line to ``argv.jsonl``,
and can stop early, write to stderr, exit with a status or kill itself — the edge cases a real
program shows (crash mid-stream, non-zero exit).
"""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

STREAMS = Path(__file__).parent / "streams"

_PROGRAM = """#!{python}
import json, os, signal, sys, time
from pathlib import Path
here = Path({here!r})
log = here / "argv.jsonl"
runs = sum(1 for _ in log.open()) if log.exists() else 0
with log.open("a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
streams = {streams!r}
lines = Path(streams[min(runs, len(streams) - 1)]).read_text().splitlines()
stop = {stop!r}
for line in lines[:stop]:
    sys.stdout.write(line + "\\n")
    sys.stdout.flush()
sys.stderr.write({stderr!r})
sys.stderr.flush()
if {kill!r}:
    os.kill(os.getpid(), signal.SIGKILL)
sys.exit({status!r})
"""


class FakeCLI:
    """A fake executable and the command lines it was run with."""

    def __init__(self, path: Path) -> None:
        self.path = path
        """The executable."""

    @property
    def runs(self) -> list[list[str]]:
        """The arguments of each run, in order."""
        log = self.path.parent / "argv.jsonl"
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines()]


def fake_cli(
    folder: Path,
    streams: list[str | Path],
    *,
    stop: int | None = None,
    stderr: str = "",
    status: int = 0,
    kill: bool = False,
) -> FakeCLI:
    """Write a fake CLI into ``folder`` that replays ``streams`` (names under ``streams/``).

    Args:
        folder: An empty folder (the program and its ``argv.jsonl`` go there).
        streams: One recorded stream per run; the last repeats.
        stop: Print only the first ``stop`` lines of each stream.
        stderr: Text written to standard error after the lines.
        status: The exit status.
        kill: Kill itself with SIGKILL after the lines (exit status -9).
    """
    folder.mkdir(parents=True, exist_ok=True)
    paths = [str(s if isinstance(s, Path) else STREAMS / s) for s in streams]
    program = folder / "fake-cli"
    program.write_text(
        _PROGRAM.format(
            python=sys.executable,
            here=str(folder),
            streams=paths,
            stop=stop,
            stderr=stderr,
            kill=kill,
            status=status,
        )
    )
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    return FakeCLI(program)
