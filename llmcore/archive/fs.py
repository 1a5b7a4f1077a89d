"""The file-system calls of the archive, behind one small injectable class (SPEC A9).

Every call a save or a load makes goes through a :class:`FileSystem`, so a test can fail any
one of them (the Nth ``write``, ``fsync``, ``rename``, ``unlink``, …) or count them (an
unchanged save must make no mutating call, A12). The methods are thin wrappers of :mod:`os`;
they raise :class:`OSError` as :mod:`os` does.

:data:`MUTATING` names the calls that change the disk or make it durable.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path
from typing import Final

from llmcore.safeio import MAX_FILE, read_regular

__all__ = ["MUTATING", "FileSystem"]

MUTATING: Final = frozenset(
    {
        "mkdir",
        "open_write",
        "write",
        "fsync",
        "close",
        "rename",
        "unlink",
        "rmdir",
        "fsync_dir",
        "fsync_file",
        "create_lock",
    }
)
"""The :class:`FileSystem` methods that write, make durable, or remove."""


_IOV_MAX: Final = 1024
"""Pieces per ``os.writev`` call (``IOV_MAX`` on Linux and macOS)."""


def _write_all(fd: int, view: memoryview) -> None:
    while view:
        written = os.write(fd, view)
        view = view[written:]


class FileSystem:
    """The real file system. Subclass and override to inject faults or count calls."""

    read_limit: int = MAX_FILE
    """Largest file :meth:`read_bytes` reads (64 MiB); a save writes no larger file."""

    # -- reading (never changes the disk)

    def read_bytes(self, path: Path) -> bytes:
        """Return the whole regular file at ``path`` (following no symlink at the last component).

        Read by :func:`llmcore.safeio.read_regular`: a FIFO, device or socket is refused
        without being opened, and a file over :data:`~llmcore.safeio.MAX_FILE` (64 MiB) before
        any byte is read (:attr:`read_limit`).

        Raises:
            FileRefusedError: Not a regular file, or over the limit (an ``OSError`` too).
            OSError: Missing, a symlink (``ELOOP``), unreadable.
        """
        return read_regular(path, limit=self.read_limit)

    def lstat(self, path: Path) -> os.stat_result | None:
        """Return ``os.lstat(path)``, or ``None`` if nothing is there (or a parent is a file)."""
        try:
            return os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None

    def is_dir(self, path: Path) -> bool:
        """Return whether ``path`` is a directory (not a symlink to one)."""
        info = self.lstat(path)
        return info is not None and stat.S_ISDIR(info.st_mode)

    def is_file(self, path: Path) -> bool:
        """Return whether ``path`` is a regular file (not a symlink to one)."""
        info = self.lstat(path)
        return info is not None and stat.S_ISREG(info.st_mode)

    def listdir(self, path: Path) -> list[str]:
        """Return the names in directory ``path``, sorted; ``[]`` if it does not exist."""
        try:
            return sorted(os.listdir(path))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def regular_files(self, path: Path) -> dict[str, int]:
        """Return name → inode of the regular files in directory ``path`` (not symlinks to one).

        One listing, no ``stat`` per entry (the kinds come from the directory itself). ``{}``
        if ``path`` does not exist, is not a directory, or is a symlink (never followed).
        """
        flags = os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_DIRECTORY", 0)
        try:
            fd = os.open(path, flags | getattr(os, "O_NOFOLLOW", 0))
        except (FileNotFoundError, NotADirectoryError):
            return {}
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return {}
            raise
        try:
            with os.scandir(fd) as entries:
                return {e.name: e.inode() for e in entries if e.is_file(follow_symlinks=False)}
        finally:
            os.close(fd)

    # -- the folder's lock file (llmcore.archive.lock); taking a lock changes nothing on disk

    def open_lock(self, path: Path) -> int:
        """Open the existing lock file ``path`` for locking (never following a symlink).

        Only a regular file is opened (``O_NONBLOCK`` keeps a FIFO in its place from
        blocking); read-only where the file or the file system is not writable.

        Raises:
            FileNotFoundError: There is no lock file yet.
            OSError: Any other failure (``ELOOP`` for a symlink, ``EACCES``, ``EISDIR`` …).
        """
        base = os.O_CLOEXEC | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(path, os.O_RDWR | base)
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EROFS, errno.EPERM):
                raise
            fd = os.open(path, os.O_RDONLY | base)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise OSError(errno.EINVAL, "the lock file is not a regular file", str(path))
        return fd

    def open_dir(self, path: Path) -> int:
        """Open the directory ``path`` (not through a symlink) to lock it."""
        flags = os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_DIRECTORY", 0)
        return os.open(path, flags | getattr(os, "O_NOFOLLOW", 0))

    def try_lock(self, fd: int, *, exclusive: bool) -> bool:
        """Take an advisory ``flock`` on ``fd`` without waiting; ``False`` if another holds it.

        Raises:
            OSError: The file system cannot lock (``ENOLCK``, ``EOPNOTSUPP``) or ``fd`` is bad.
        """
        operation = (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB
        try:
            fcntl.flock(fd, operation)
        except BlockingIOError:
            return False
        return True

    def same_file(self, fd: int, path: Path) -> bool:
        """Return whether ``path`` (not followed) is still the file open as ``fd``."""
        opened = os.fstat(fd)
        now = self.lstat(path)
        return now is not None and (now.st_dev, now.st_ino) == (opened.st_dev, opened.st_ino)

    def release(self, fd: int) -> None:
        """Close ``fd``, which releases its lock."""
        os.close(fd)

    # -- writing

    def create_lock(self, path: Path) -> int:
        """Create the lock file ``path`` if missing (mode 0o644) and open it for locking."""
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
        return os.open(path, flags, 0o644)

    def mkdir(self, path: Path) -> None:
        """Create directory ``path`` (its parent must exist)."""
        os.mkdir(path)

    def open_write(self, path: Path) -> int:
        """Create ``path`` exclusively for writing (mode 0o644) and return its descriptor."""
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)

    def write(self, fd: int, data: bytes | list[bytes | memoryview]) -> None:
        """Write all of ``data`` to ``fd``: bytes, or a list of pieces written in order.

        Pieces are written with ``os.writev`` (:data:`_IOV_MAX` per call), so a large file
        made of many pieces is never joined into one buffer. Short writes are continued.
        """
        if not isinstance(data, list):
            _write_all(fd, memoryview(data))
            return
        for start in range(0, len(data), _IOV_MAX):
            group = data[start : start + _IOV_MAX]
            written = os.writev(fd, group)
            if written < sum(map(len, group)):  # a short write (rare): the rest, piece by piece
                for piece in group:
                    if written < len(piece):
                        _write_all(fd, memoryview(piece)[written:])
                    written = max(written - len(piece), 0)

    def fsync(self, fd: int) -> None:
        """Flush ``fd`` to stable storage."""
        os.fsync(fd)

    def start_writeback(self, fd: int) -> None:
        """Start writing ``fd``'s data to storage without waiting (a hint; never raises).

        ``posix_fadvise(POSIX_FADV_DONTNEED)``, where there is one: Linux starts the
        write-back (allocating the blocks), so the journal commit of a later fsync of another
        file carries this file's data too and its own :meth:`fsync_file` only flushes. Nothing
        is made durable: a later :meth:`fsync_file` or :meth:`fsync` does that.
        """
        advise = getattr(os, "posix_fadvise", None)
        if advise is None:
            return
        try:
            advise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        except OSError:
            pass

    def fsync_file(self, path: Path) -> None:
        """Flush the regular file ``path`` (not through a symlink) to stable storage."""
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def close(self, fd: int) -> None:
        """Close ``fd``."""
        os.close(fd)

    def rename(self, source: Path, target: Path) -> None:
        """Atomically replace ``target`` with ``source`` (``os.replace``)."""
        os.replace(source, target)

    def unlink(self, path: Path) -> None:
        """Remove the file or symlink ``path``."""
        os.unlink(path)

    def rmdir(self, path: Path) -> None:
        """Remove the empty directory ``path``."""
        os.rmdir(path)

    def fsync_dir(self, path: Path) -> None:
        """Make the entries of directory ``path`` durable (fsync on the directory)."""
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
