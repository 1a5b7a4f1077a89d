"""The chat's prompt history: scrubbed lines in a private file (SPEC S6).

:class:`PromptHistory` is prompt_toolkit's file history (``<project>/history``, the file format
of :class:`prompt_toolkit.history.FileHistory`) with three changes:

* every line passes the session scrubber (:func:`llmcore.session.scrub_text`: the secret
  patterns and the values of ``*_API_KEY``-style environment variables) before it is kept, in
  the file and in memory, so a key typed at the prompt is stored as ``[REDACTED:…]``; a file
  written by an older version is scrubbed and rewritten when it is loaded;
* the file is created 0600 (an existing one is set to 0600) and never through a symlink, and
  each folder created for it is 0700 (:func:`llmcore.session.store.ensure_folder`);
* :meth:`PromptHistory.clear` removes the file and the loaded lines (``/reset``).

Importing this module imports prompt_toolkit; the command imports it only on a terminal.
"""

from __future__ import annotations

import datetime
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from prompt_toolkit.history import FileHistory

from llmcore.session.scrub import scrub_text
from llmcore.session.store import FILE_MODE, atomic_write, ensure_folder, read_nofollow

__all__ = ["PromptHistory"]

_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)


def _entry(string: str) -> bytes:
    lines = "".join(f"+{line}\n" for line in string.split("\n"))
    return f"\n# {datetime.datetime.now()}\n{lines}".encode("utf-8", errors="replace")


def _parse(data: bytes) -> list[str]:
    """The entries of a history file, oldest first (FileHistory's format)."""
    strings: list[str] = []
    lines: list[str] = []
    for raw in data.splitlines(keepends=True):
        line = raw.decode("utf-8", errors="replace")
        if line.startswith("+"):
            lines.append(line[1:])
        elif lines:
            strings.append("".join(lines)[:-1])
            lines = []
    if lines:
        strings.append("".join(lines)[:-1])
    return strings


class PromptHistory(FileHistory):
    """A prompt history file that keeps no secrets (see the module doc).

    Raises:
        SessionWriteError: The folder cannot be created or is a symlink.
    """

    def __init__(self, path: Path) -> None:
        ensure_folder(path.parent)
        self.path = path
        super().__init__(str(path))

    def load_history_strings(self) -> Iterable[str]:
        """Return the stored lines, newest first (scrubbed; an unscrubbed file is rewritten)."""
        try:
            data = read_nofollow(self.path)
            if data is None:
                return []
            os.chmod(self.path, FILE_MODE, follow_symlinks=False)
            stored = _parse(data)
            clean = [scrub_text(string) for string in stored]
            if clean != stored:
                atomic_write(self.path, b"".join(_entry(string) for string in clean))
        except OSError:
            return []
        return list(reversed(clean))

    def append_string(self, string: str) -> None:
        """Keep ``string`` scrubbed, in memory and in the file."""
        super().append_string(scrub_text(string))

    def store_string(self, string: str) -> None:
        """Append one entry to the file (created 0600, never through a symlink).

        A file that cannot be written, or is not a regular file, keeps nothing (the prompt
        goes on).
        """
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NONBLOCK | _NOFOLLOW
        try:
            fd = os.open(self.path, flags, FILE_MODE)
        except OSError:
            return
        try:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                os.fchmod(fd, FILE_MODE)
                os.write(fd, _entry(scrub_text(string)))
        except OSError:
            pass
        finally:
            os.close(fd)

    def clear(self) -> None:
        """Forget every line: the file is removed and nothing loaded is kept."""
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        self._loaded_strings = []
