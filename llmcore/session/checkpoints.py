"""Checkpoints of a session: list them, restore one (SPEC S5 ``/checkpoint [n]``).

Storage, beside the session file::

    sessions/<id>.json
    sessions/<id>.checkpoints/<n>.json     n = 1, 2, 3 …

Each checkpoint is a complete session file (schema 3, scrubbed, 0600, written atomically) as
the session stood when ``/checkpoint`` was run; the folder is 0700. Numbers only grow: the
next one is one more than the highest on disk (or the record's ``checkpoint_count``, which
stores the last number written and is informational only — the listing reads the folder).
Restoring ``n`` reads that file; the session keeps its id, replaces its history, summary,
decisions, manifest and phase by the checkpoint's, and is saved as usual. ``/reset`` deletes
the folder with the session file. A checkpoint file that cannot be read is listed as
unreadable and never changed.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from llmcore._words import plural
from llmcore.errors import SessionError, SessionReadError

from .paths import ProjectPaths
from .record import SessionRecord, decode_record, encode_record
from .store import atomic_write, check_readable_folder, ensure_folder, read_nofollow

__all__ = ["CheckpointInfo", "Checkpoints"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointInfo:
    """One line of the ``/checkpoint`` listing."""

    number: int
    """The checkpoint's number."""
    saved_at: str | None
    """When it was written (the record's ``updated_at``), ``None`` if unreadable."""
    messages: int
    """Messages in its history."""
    problem: str | None = None
    """Why it cannot be restored, or ``None``."""

    def line(self) -> str:
        """Return ``#n  YYYY-MM-DDTHH:MM:SSZ  k messages`` (or the problem)."""
        if self.problem:
            return f"#{self.number}  unreadable: {self.problem}"
        return f"#{self.number}  {self.saved_at}  {plural(self.messages, 'message')}"


class Checkpoints:
    """The checkpoints of one session."""

    def __init__(self, paths: ProjectPaths, session_id: str) -> None:
        self.folder: Path = paths.checkpoints_dir(session_id)
        self._sessions = paths.sessions

    def _check_folders(self) -> None:
        check_readable_folder(self._sessions)
        check_readable_folder(self.folder)

    def numbers(self) -> list[int]:
        """Return the numbers on disk, ascending.

        Raises:
            SessionReadError: The sessions or checkpoint folder is a symlink.
        """
        self._check_folders()
        try:
            names = os.listdir(self.folder)
        except (FileNotFoundError, NotADirectoryError):
            return []
        return sorted(
            int(n[:-5])
            for n in names
            if n.endswith(".json") and n[:-5].isascii() and n[:-5].isdigit() and n[0] != "0"
        )

    def write(self, record: SessionRecord) -> int:
        """Write ``record`` as the next checkpoint; return its number."""
        number = max([*self.numbers(), record.checkpoint_count], default=0) + 1
        ensure_folder(self.folder)
        atomic_write(self.folder / f"{number}.json", encode_record(record))
        return number

    def load(self, number: int) -> SessionRecord:
        """Read checkpoint ``number``.

        Raises:
            SessionError: There is no such checkpoint.
            SessionReadError: It cannot be read.
        """
        path = self.folder / f"{int(number)}.json"
        self._check_folders()
        try:
            data = read_nofollow(path)
        except OSError as exc:
            raise SessionReadError(f"cannot be read ({exc.strerror})", location=str(path)) from exc
        if data is None:
            raise SessionError(f"there is no checkpoint {number}", location=str(self.folder))
        return decode_record(data, str(path))

    def list(self) -> list[CheckpointInfo]:
        """Return every checkpoint, oldest first."""
        infos = []
        for number in self.numbers():
            try:
                record = self.load(number)
            except SessionError as exc:
                infos.append(
                    CheckpointInfo(number=number, saved_at=None, messages=0, problem=exc.message)
                )
                continue
            infos.append(
                CheckpointInfo(
                    number=number, saved_at=record.updated_at, messages=len(record.recent_messages)
                )
            )
        return infos

    def delete_all(self) -> None:
        """Remove the checkpoint folder (``/reset``); a symlink in its place is only unlinked."""
        if self.folder.is_symlink():
            self.folder.unlink()
        elif self.folder.is_dir():
            shutil.rmtree(self.folder)
