"""The archive folder's advisory locks, shared by every process that opens or saves it (SPEC A9).

Two ``flock`` locks, both advisory:

* the **lock file** :data:`LOCK_FILE` inside the folder: a save holds it exclusively for the
  whole save, an open holds it shared while it reads ``conversation.json`` and its images — so
  two processes never interleave their saves and a reader never sees a save between its commit
  and its cleanup;
* the **gate**, a lock on the folder itself (its directory descriptor): a save holds it
  exclusively too, an open only while it takes its shared lock. A save that is waiting for
  readers to finish therefore keeps new readers out, so a stream of opens can never starve a
  save (writers go first).

The lock file is llmcore's own (empty, mode 0644). Nothing creates it but a save that writes:
opening never writes, and an unchanged save of a folder that has none (an archive from an older
version, or a copy without dot files) makes no write either — without a lock file, opens hold
the gate shared for their whole read and a save holds it exclusively, which excludes the same
way. It is removed only when the archive is deleted, by the deleting process while it holds
both locks; a process that was waiting on a removed lock file or folder notices (its descriptor
no longer names the path) and starts over.

Waiting is bounded: locks held longer than ``timeout`` seconds in total raise
:class:`LockTimeout`. Where locks cannot be had — a file system without ``flock`` (``ENOLCK``,
``EOPNOTSUPP``), a lock file that is not a regular file llmcore can open — an open goes on
without them (the save-side conflict check, :class:`~llmcore.errors.ArchiveConflictError`,
still prevents lost updates) and a save raises :class:`LockUnavailable`.

It leaves out what is done under the locks (:mod:`llmcore.archive.store`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final, Literal

from .fs import FileSystem

__all__ = [
    "DEFAULT_LOCK_TIMEOUT",
    "LOCK_FILE",
    "FolderGone",
    "LockState",
    "LockTimeout",
    "LockUnavailable",
    "create_lock_file",
    "folder_lock",
]

LOCK_FILE: Final = ".llmcore.lock"
"""The lock file's name inside the archive folder."""
DEFAULT_LOCK_TIMEOUT: Final = 10.0
"""Seconds a save or an open waits for another process's lock before giving up."""
_RETRIES: Final = 1000
"""Times a lock is taken again after the file it locked was removed under it."""
_FIRST_PAUSE: Final = 0.001
_LONGEST_PAUSE: Final = 0.005


class LockTimeout(Exception):
    """Another process held the folder's lock for longer than the timeout."""


class LockUnavailable(Exception):
    """The folder cannot be locked: ``reason`` says why (an ``OSError``'s text)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class FolderGone(LockUnavailable):
    """The archive folder does not exist (any more): a save may create it and try again."""


LockState = Literal["held", "absent", "unavailable"]
"""What :func:`folder_lock` got: both locks (``held``), the gate but no lock file yet
(``absent``: a save that writes must create it, :func:`create_lock_file`), or no lock at all
(``unavailable``: an open of a folder that cannot be locked)."""


@contextmanager
def folder_lock(
    folder: Path,
    fs: FileSystem,
    *,
    exclusive: bool,
    timeout: float = DEFAULT_LOCK_TIMEOUT,
    clock: Callable[[], float] = time.monotonic,
    pause: Callable[[float], None] = time.sleep,
) -> Iterator[LockState]:
    """Hold the folder's locks for the ``with`` block; yields what was got (see the module).

    Args:
        folder: The archive folder; it must exist.
        fs: The file-system layer.
        exclusive: A save's locks (exclusive) or an open's (shared).
        timeout: Seconds to wait for other holders in total; 0 tries once.
        clock: Monotonic seconds (injected by tests).
        pause: Sleeps between tries (injected by tests).

    Raises:
        LockTimeout: Other processes held the locks for ``timeout`` seconds.
        LockUnavailable: ``exclusive`` and the folder cannot be locked (the reason names the
            error); an open goes on unlocked instead (``"unavailable"``).
    """
    waiter = _Waiter(fs, exclusive, clock() + timeout, clock, pause)
    for _ in range(_RETRIES):
        got = waiter.acquire(folder)
        if got is None:
            continue  # the folder or its lock file was replaced while we waited: again
        state, gate, fd = got
        try:
            yield state
        finally:
            _release(fd, fs)
            _release(gate, fs)
        return
    raise LockTimeout(f"the archive folder was replaced {_RETRIES} times while waiting")


def create_lock_file(folder: Path, fs: FileSystem) -> None:
    """Create the lock file of a folder whose gate this process holds exclusively."""
    _release(fs.create_lock(folder / LOCK_FILE), fs)


class _Waiter:
    """Takes the gate, then the lock file, within one deadline."""

    def __init__(
        self,
        fs: FileSystem,
        exclusive: bool,
        deadline: float,
        clock: Callable[[], float],
        pause: Callable[[float], None],
    ) -> None:
        self.fs = fs
        self.exclusive = exclusive
        self.deadline = deadline
        self.clock = clock
        self.pause = pause

    def acquire(self, folder: Path) -> tuple[LockState, int | None, int | None] | None:
        """Return (state, gate descriptor, lock-file descriptor), or ``None`` to start over.

        Raises:
            LockTimeout: The deadline passed.
            LockUnavailable: A save cannot lock the folder.
        """
        gate = self._gate(folder)
        if gate is None:
            return "unavailable", None, None
        try:
            fd = self._lock_file(folder)
        except BaseException:
            _release(gate, self.fs)
            raise
        if fd == "retry":
            _release(gate, self.fs)
            return None
        if fd is None:
            return "absent", gate, None
        if not self.exclusive:  # readers hold the gate only to get in (writers go first)
            _release(gate, self.fs)
            return "held", None, fd
        return "held", gate, fd

    def _gate(self, folder: Path) -> int | None:
        """Lock the folder itself; ``None`` (an open only) when it cannot be locked."""
        try:
            gate = self.fs.open_dir(folder)
        except FileNotFoundError as exc:
            if self.exclusive:
                raise FolderGone("the archive folder was removed") from exc
            return None
        except OSError as exc:
            self._unavailable("the archive folder cannot be opened", exc)
            return None
        got = self._take(gate, folder, "the archive folder")
        if got != "replaced":
            return got
        if self.exclusive:
            raise FolderGone("the archive folder was removed or replaced while waiting")
        return None

    def _lock_file(self, folder: Path) -> int | None | Literal["retry"]:
        """Lock the lock file: its descriptor, ``None`` if there is none, or ``"retry"``."""
        path = folder / LOCK_FILE
        try:
            fd = self.fs.open_lock(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._unavailable("the lock file cannot be opened", exc)
            return None
        got = self._take(fd, path, "the lock file")
        return "retry" if got == "replaced" else got

    def _take(self, fd: int, path: Path, what: str) -> int | None | Literal["replaced"]:
        """Lock ``fd`` (open on ``path``): ``fd``, ``None`` if unavailable, or ``"replaced"``.

        ``"replaced"``: ``path`` no longer names the locked file (it was removed meanwhile).
        Every outcome but ``fd`` closes it.

        Raises:
            LockTimeout: The deadline passed.
            LockUnavailable: A save, and the file system cannot lock.
        """
        try:
            self._wait(fd)
            if self.fs.same_file(fd, path):
                return fd
        except OSError as exc:
            _release(fd, self.fs)
            self._unavailable(f"{what} cannot be locked", exc)
            return None
        except BaseException:
            _release(fd, self.fs)
            raise
        _release(fd, self.fs)
        return "replaced"

    def _unavailable(self, what: str, exc: OSError) -> None:
        """Raise :class:`LockUnavailable` for a save; an open goes on without the lock."""
        if self.exclusive:
            raise LockUnavailable(f"{what} ({exc.strerror or exc})") from exc

    def _wait(self, fd: int) -> None:
        """Take the lock on ``fd``, pausing between tries until the deadline.

        Raises:
            LockTimeout: The deadline passed.
            OSError: The file system cannot lock.
        """
        wait = _FIRST_PAUSE
        while not self.fs.try_lock(fd, exclusive=self.exclusive):
            if self.clock() >= self.deadline:
                raise LockTimeout("another process holds the archive's lock")
            self.pause(wait)
            wait = min(wait * 2, _LONGEST_PAUSE)


def _release(fd: int | None, fs: FileSystem) -> None:
    """Close a lock's descriptor; the lock is released even if ``close`` reports an error."""
    if fd is None:
        return
    try:
        fs.release(fd)
    except OSError:
        pass
