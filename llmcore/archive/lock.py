"""The archive folder's advisory lock, shared by every process that opens or saves it (SPEC A9).

Saves take an exclusive ``flock`` on :data:`LOCK_FILE` inside the archive folder for the whole
save; opening takes a shared one while it reads ``conversation.json`` and its images. So two
processes never interleave their saves, and a reader never sees a save between its commit and
its cleanup (a ``conversation.json`` naming images the cleanup has just removed).

The lock file is llmcore's own (empty, mode 0644). The first save of a folder creates it (opening
never writes: a reader that finds no lock file reads unlocked and then checks that there is still
none, since a save creates it before changing anything), and it is removed only when the archive
is deleted, while the deleting process holds it; a process that was waiting on the removed file
notices (its descriptor no longer names the path) and starts over. Locks are advisory: a program
that does not take them is not stopped.

Waiting is bounded: a lock held longer than ``timeout`` seconds raises :class:`LockTimeout`.
Where locks cannot be had at all — a read-only folder where the lock file cannot be created, a
file system without ``flock`` (``ENOLCK``, ``EOPNOTSUPP``) — a reader goes on without one (the
save-side conflict check, :class:`~llmcore.errors.ArchiveConflictError`, still prevents lost
updates) and a save raises :class:`LockUnavailable`.

It leaves out what is done under the lock (:mod:`llmcore.archive.store`).
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
    "LockState",
    "LockTimeout",
    "LockUnavailable",
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


LockState = Literal["held", "absent", "unavailable"]
"""What :func:`folder_lock` got: the lock, no lock file yet (a shared lock only; see below), or
no lock at all (a shared lock on a folder that cannot be locked)."""


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
    """Hold the folder's lock for the ``with`` block; yields what was got.

    An exclusive lock creates the lock file if it is missing. A shared lock never creates it
    (opening only reads): with no lock file it yields ``"absent"``, and the reader must check
    afterwards that there is still none — every llmcore save creates it before changing
    anything — and read again, locked, if there is.

    Args:
        folder: The archive folder; it must exist.
        fs: The file-system layer.
        exclusive: An exclusive (save) or shared (open) lock.
        timeout: Seconds to wait for another holder; 0 tries once.
        clock: Monotonic seconds (injected by tests).
        pause: Sleeps between tries (injected by tests).

    Raises:
        LockTimeout: Another process held the lock for ``timeout`` seconds.
        LockUnavailable: ``exclusive`` and the lock file cannot be created or locked (the
            reason names the error); a shared lock goes on unlocked instead
            (``"unavailable"``).
    """
    path = folder / LOCK_FILE
    deadline = clock() + timeout
    for _ in range(_RETRIES):
        try:
            fd = fs.open_lock(path) if not exclusive else _open_or_create(path, fs)
        except FileNotFoundError:
            if exclusive:
                raise LockUnavailable("the folder disappeared") from None
            yield "absent"
            return
        except OSError as exc:
            if exclusive:
                raise LockUnavailable(_reason("the lock file cannot be opened", exc)) from exc
            yield "unavailable"
            return
        try:
            got = _take(fd, path, fs, exclusive, deadline, clock, pause)
        except BaseException:
            _release(fd, fs)
            raise
        if got == "retry":
            _release(fd, fs)  # the file was removed (an archive deleted) while we waited: again
            continue
        try:
            yield got
        finally:
            _release(fd, fs)
        return
    raise LockTimeout(f"the lock file was replaced {_RETRIES} times while waiting")


def _release(fd: int, fs: FileSystem) -> None:
    """Close the lock's descriptor; the lock is released even if ``close`` reports an error."""
    try:
        fs.release(fd)
    except OSError:
        pass


def _open_or_create(path: Path, fs: FileSystem) -> int:
    try:
        return fs.open_lock(path)
    except FileNotFoundError:
        return fs.create_lock(path)


def _take(
    fd: int,
    path: Path,
    fs: FileSystem,
    exclusive: bool,
    deadline: float,
    clock: Callable[[], float],
    pause: Callable[[float], None],
) -> LockState | Literal["retry"]:
    """Lock ``fd``; ``"retry"`` if the file was replaced meanwhile.

    Raises:
        LockTimeout: ``deadline`` passed.
        LockUnavailable: ``exclusive`` and the file system cannot lock.
    """
    try:
        _wait(fd, fs, exclusive, deadline, clock, pause)
        same = fs.same_file(fd, path)
    except LockTimeout:
        raise
    except OSError as exc:
        if exclusive:
            raise LockUnavailable(_reason("the folder cannot be locked", exc)) from exc
        return "unavailable"
    return "held" if same else "retry"


def _wait(
    fd: int,
    fs: FileSystem,
    exclusive: bool,
    deadline: float,
    clock: Callable[[], float],
    pause: Callable[[float], None],
) -> None:
    """Take the lock on ``fd``, pausing between tries until ``deadline``.

    Raises:
        LockTimeout: ``deadline`` passed.
    """
    wait = _FIRST_PAUSE
    while not fs.try_lock(fd, exclusive=exclusive):
        if clock() >= deadline:
            raise LockTimeout("another process holds the archive's lock")
        pause(wait)
        wait = min(wait * 2, _LONGEST_PAUSE)


def _reason(what: str, exc: OSError) -> str:
    return f"{what} ({exc.strerror or exc})"
