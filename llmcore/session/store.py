"""Reading and writing session files and pointers (SPEC S1, S2, S6).

**Writes are atomic**: the bytes go to a fresh temporary file in the same folder (mode 0600,
``O_EXCL | O_NOFOLLOW``), which is fsynced and renamed over the target; then the folder is
fsynced. A crash at any instant leaves the old file or the new one. Folders are created 0700
(and an existing session folder is set to 0700).

**Reads never follow a symlink** (``O_NOFOLLOW``); a session file that cannot be decoded is
reported (:class:`~llmcore.errors.SessionReadError`) and left byte-for-byte as it is. A
``sessions`` folder that is itself a symlink is refused the same way for reads
(:class:`~llmcore.errors.SessionReadError`) and writes (:class:`~llmcore.errors.SessionWriteError`):
nothing is listed, read or written through it.

**Two processes** (two terminals): each has its own pointer ``active_<pid>.json``. A save
takes the session folder's exclusive lock (:func:`llmcore.archive.lock.folder_lock`) and
compares the SHA-256 of the file on disk with the one this process last read or wrote (its
*base*); if another process saved in between, nothing is written and
:class:`~llmcore.errors.SessionConflictError` is raised, so the other process's turn is kept.

Pointers hold ``{"session_id": …}``; the id is checked against ``^[a-f0-9]{12}$`` before any
path is built from it, so a crafted pointer (``../../x``) is refused with a clear message. A
pointer's name is ``active_<pid>.json`` with ``<pid>`` in ASCII decimal, no leading zero, from 1
to :data:`PID_MAX`; any other ``active_….json`` (``active_².json``, a 25-digit pid) is not a
pointer: :meth:`SessionStore.pointer_scan` lists it as refused and nothing reads it.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from llmcore import jsonbytes
from llmcore.archive.fs import FileSystem
from llmcore.archive.lock import (
    LOCK_FILE,
    LockTimeout,
    LockUnavailable,
    create_lock_file,
    folder_lock,
)
from llmcore.errors import SessionConflictError, SessionReadError, SessionWriteError
from llmcore.safeio import MAX_FILE, read_regular

from .paths import ProjectPaths, check_session_id
from .record import SessionRecord, decode_record, encode_record

__all__ = [
    "FILE_MODE",
    "FOLDER_MODE",
    "MAX_POINTER",
    "NO_FILE",
    "PID_MAX",
    "Loaded",
    "PointerScan",
    "SessionStore",
    "atomic_write",
    "check_readable_folder",
    "ensure_folder",
    "read_nofollow",
    "remove_leftovers",
    "shown_name",
]

FILE_MODE: Final = 0o600
"""Mode of every file the session layer writes."""
FOLDER_MODE: Final = 0o700
"""Mode of every folder the session layer creates."""
NO_FILE: Final = "none"
"""The base of a session that has no file on disk yet."""
MAX_POINTER: Final = 4096
"""Largest pointer file ``active_<pid>.json`` read (it holds ``{"session_id": …}``, 31 bytes)."""
PID_MAX: Final = 2**31 - 1
"""The largest pid a pointer name may hold (``pid_t`` is a signed 32-bit integer)."""
_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_POINTER_NAME: Final = re.compile(r"active_([1-9][0-9]{0,9})\.json")
_TEMP_NAME: Final = re.compile(r"\..+\.([1-9][0-9]{0,9})\.[0-9a-f]{8}\.tmp")
_SYMLINKED: Final = "refused: the folder is a symlink"


def read_nofollow(path: Path, *, limit: int = MAX_FILE) -> bytes | None:
    """Return the bytes of regular file ``path`` (no symlink followed), ``None`` if missing.

    Read by :func:`llmcore.safeio.read_regular`: a FIFO, device or socket is refused without
    being opened, a file over ``limit`` bytes (default :data:`~llmcore.safeio.MAX_FILE`,
    64 MiB) before any byte is read.

    Raises:
        FileRefusedError: Not a regular file, or over ``limit`` (an ``OSError`` too).
        OSError: Any failure but a missing file (``ELOOP`` for a symlink).
    """
    try:
        return read_regular(path, limit=limit)
    except FileNotFoundError:
        return None


def ensure_folder(path: Path) -> None:
    """Create ``path`` and its missing parents, each 0700 (``path`` too); a symlink is refused.

    Raises:
        SessionWriteError: ``path`` is a symlink, or a folder cannot be created.
    """
    if path.is_symlink():
        raise SessionWriteError(_SYMLINKED, location=str(path))
    missing = []
    current = path
    while not current.is_dir() and current != current.parent:
        missing.append(current)
        current = current.parent
    try:
        for folder in reversed(missing):  # each folder this layer creates is 0700
            try:
                folder.mkdir(mode=FOLDER_MODE)
            except FileExistsError:
                pass
            os.chmod(folder, FOLDER_MODE, follow_symlinks=False)
        os.chmod(path, FOLDER_MODE, follow_symlinks=False)
    except OSError as exc:
        raise SessionWriteError(
            f"cannot create the folder ({exc.strerror})", location=str(exc.filename or path)
        ) from exc


def atomic_write(target: Path, data: bytes) -> None:
    """Replace ``target`` with ``data``: temp file (0600), fsync, rename, folder fsync.

    The temporary file is ``.<name>.<pid>.<8 hex>.tmp``: a kill before the rename leaves it,
    and :func:`remove_leftovers` removes it once process ``<pid>`` no longer runs.
    """
    temp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | _NOFOLLOW
    fd = os.open(temp, flags, FILE_MODE)
    try:
        try:
            os.fchmod(fd, FILE_MODE)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, target)
    except BaseException:
        _unlink(temp)
        raise
    FileSystem().fsync_dir(target.parent)


def remove_leftovers(folder: Path, alive: Callable[[int], bool], own_pid: int) -> list[str]:
    """Remove the temporary files killed saves left in ``folder``; return their names.

    A leftover is a regular file named as :func:`atomic_write` names its temporary file whose
    ``<pid>`` is ``own_pid`` or not running (``alive``), so another terminal's save in progress
    is never touched. A symlinked or missing folder is left alone; a file that cannot be
    removed is skipped.
    """
    if folder.is_symlink():
        return []
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    removed = []
    for name in sorted(names):
        match = _TEMP_NAME.fullmatch(name)
        if match is None:
            continue
        pid = int(match.group(1))
        if pid != own_pid and (pid > PID_MAX or alive(pid)):
            continue
        try:
            if not stat.S_ISREG(os.lstat(folder / name).st_mode):
                continue
            os.unlink(folder / name)
        except OSError:
            continue
        removed.append(name)
    return removed


def _unlink(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def check_readable_folder(path: Path) -> None:
    """Refuse to read through a folder that is a symlink, as :func:`ensure_folder` refuses writes.

    Raises:
        SessionReadError: ``path`` is a symlink.
    """
    if path.is_symlink():
        raise SessionReadError(_SYMLINKED, location=str(path))


def shown_name(name: str) -> str:
    """Return a file name for a one-line message: escaped (``repr``) and cut to 60 characters."""
    text = repr(name)
    return text if len(text) <= 60 else text[:57] + "…"


def _digest(data: bytes | None) -> str:
    return NO_FILE if data is None else hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class PointerScan:
    """What the sessions folder holds that looks like a pointer."""

    pids: tuple[int, ...]
    """The pid of each well-formed ``active_<pid>.json``, ascending."""
    refused: tuple[str, ...]
    """The names of the other ``active_….json`` files, sorted: not pointers, never read."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Loaded:
    """A session file read from disk."""

    record: SessionRecord
    """Its content."""
    base: str
    """SHA-256 hex of the bytes read: the base of the next save."""


class SessionStore:
    """The session files and pointers of one project (see the module doc).

    Args:
        paths: The project's session folder.
        lock_timeout: Seconds a save waits for another process's lock.
    """

    def __init__(self, paths: ProjectPaths, *, lock_timeout: float = 10.0) -> None:
        self.paths = paths
        self.lock_timeout = lock_timeout

    # ------------------------------------------------------------------ session files

    def load(self, session_id: str) -> Loaded | None:
        """Read session ``session_id``; ``None`` when there is no file.

        Raises:
            SessionIdError: ``session_id`` is not 12 hex digits (no path was built).
            SessionReadError: The file is corrupt, of a newer schema, a symlink or unreadable;
                it is left as it is.
        """
        path = self.paths.session_file(session_id)
        check_readable_folder(self.paths.sessions)
        try:
            data = read_nofollow(path)
        except OSError as exc:
            raise SessionReadError(f"cannot be read ({exc.strerror})", location=str(path)) from exc
        if data is None:
            return None
        record = decode_record(data, str(path))
        if record.session_id != session_id:
            raise SessionReadError("holds another session id", location=str(path))
        return Loaded(record=record, base=_digest(data))

    @contextmanager
    def _locked(self) -> Iterator[None]:
        ensure_folder(self.paths.sessions)
        fs = FileSystem()
        try:
            with folder_lock(
                self.paths.sessions, fs, exclusive=True, timeout=self.lock_timeout
            ) as got:
                if got == "absent":  # the gate excludes already; the lock file lets opens in early
                    create_lock_file(self.paths.sessions, fs)
                os.chmod(self.paths.sessions / LOCK_FILE, FILE_MODE, follow_symlinks=False)
                yield
        except LockTimeout as exc:
            raise SessionWriteError(str(exc), location=str(self.paths.sessions)) from exc
        except LockUnavailable as exc:
            raise SessionWriteError(exc.reason, location=str(self.paths.sessions)) from exc

    def save(self, record: SessionRecord, base: str) -> str:
        """Write ``record`` atomically if the file on disk is still ``base``; return the new base.

        Raises:
            SessionConflictError: Another process saved the file since ``base``; nothing written.
            SessionWriteError: The folder or file cannot be written; the old file stands.
        """
        path = self.paths.session_file(record.session_id)
        data = encode_record(record)
        with self._locked():
            try:
                current = _digest(read_nofollow(path))
            except OSError as exc:
                raise SessionWriteError(
                    f"cannot read ({exc.strerror})", location=str(path)
                ) from exc
            if current != base:
                raise SessionConflictError(
                    "another process saved this session since it was read; its save is kept",
                    location=str(path),
                )
            try:
                atomic_write(path, data)
            except OSError as exc:
                raise SessionWriteError(
                    f"cannot write ({exc.strerror})", location=str(path)
                ) from exc
        return _digest(data)

    def delete(self, session_id: str) -> None:
        """Remove session ``session_id``'s file (if any)."""
        path = self.paths.session_file(session_id)
        with self._locked():
            _unlink(path)

    def remove_leftovers(self, alive: Callable[[int], bool], own_pid: int) -> list[str]:
        """Remove killed saves' temporary files here and in each ``<id>.checkpoints`` folder.

        Returns the names removed (checkpoint ones as ``<id>.checkpoints/<name>``); see
        :func:`remove_leftovers`.
        """
        folder = self.paths.sessions
        removed = remove_leftovers(folder, alive, own_pid)
        try:
            names = [] if folder.is_symlink() else sorted(os.listdir(folder))
        except OSError:
            names = []
        for name in names:
            if name.endswith(".checkpoints"):
                found = remove_leftovers(folder / name, alive, own_pid)
                removed.extend(f"{name}/{leftover}" for leftover in found)
        return removed

    # ------------------------------------------------------------------ pointers

    def read_pointer(self, pid: int) -> str | None:
        """Return the session id ``active_<pid>.json`` names; ``None`` if there is none.

        Raises:
            SessionIdError: The pointer names something that is not a session id (refused
                before any path is built).
            SessionReadError: The pointer is not ``{"session_id": str}`` JSON.
        """
        path = self.paths.pointer_file(pid)
        check_readable_folder(self.paths.sessions)
        try:
            data = read_nofollow(path, limit=MAX_POINTER)
            obj = None if data is None else jsonbytes.loads(data)
        except (OSError, ValueError, RecursionError) as exc:
            raise SessionReadError("the pointer cannot be read", location=str(path)) from exc
        if obj is None:
            return None
        if not isinstance(obj, dict) or set(obj) != {"session_id"}:
            raise SessionReadError('expected {"session_id": …}', location=str(path))
        return check_session_id(obj["session_id"], str(path))

    def write_pointer(self, pid: int, session_id: str) -> None:
        """Point ``active_<pid>.json`` at ``session_id`` (atomically, 0600)."""
        check_session_id(session_id)
        path = self.paths.pointer_file(pid)
        ensure_folder(self.paths.sessions)
        try:
            atomic_write(path, jsonbytes.dumps_sorted({"session_id": session_id}) + b"\n")
        except OSError as exc:
            raise SessionWriteError(f"cannot write ({exc.strerror})", location=str(path)) from exc

    def delete_pointer(self, pid: int) -> None:
        """Remove ``active_<pid>.json`` (if any)."""
        _unlink(self.paths.pointer_file(pid))

    def pointer_pids(self) -> list[int]:
        """Return the pids of every well-formed ``active_<pid>.json`` in the folder, in order.

        Raises:
            SessionReadError: The folder is a symlink.
            OSError: The folder cannot be listed (a missing folder has no pointers).
        """
        return list(self.pointer_scan().pids)

    def pointer_scan(self) -> PointerScan:
        """Return the well-formed pointers' pids and the names of the refused ones.

        Raises:
            SessionReadError: The folder is a symlink.
            OSError: The folder cannot be listed (a missing folder has no pointers).
        """
        check_readable_folder(self.paths.sessions)
        try:
            names = os.listdir(self.paths.sessions)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                return PointerScan(pids=(), refused=())
            raise
        pids, refused = [], []
        for name in names:
            if not (name.startswith("active_") and name.endswith(".json")):
                continue
            match = _POINTER_NAME.fullmatch(name)
            if match and int(match.group(1)) <= PID_MAX:
                pids.append(int(match.group(1)))
            else:
                refused.append(name)
        return PointerScan(pids=tuple(sorted(pids)), refused=tuple(sorted(refused)))
