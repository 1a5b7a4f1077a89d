"""Standard output that cannot be written (a full disk, an I/O error): one line, never a traceback.

Used by every command that writes to standard output, and by ``llmcore --version`` before typer
is imported, so it imports nothing but the standard library.
"""

from __future__ import annotations

import os
import sys

__all__ = ["silence_stdout", "stdout_error"]


def stdout_error(exc: OSError) -> str:
    """Return ``cannot write to stdout (<reason>)`` for a failed write."""
    return f"cannot write to stdout ({exc.strerror or type(exc).__name__})"


def silence_stdout() -> None:
    """Point standard output at the null device, so the interpreter's last flush cannot fail.

    The unwritten bytes stay buffered; this is the recipe of the ``signal`` module's docs for a
    closed pipe. Without a file descriptor (a test's capture) it does nothing.
    """
    try:
        target = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, target)
    os.close(devnull)
