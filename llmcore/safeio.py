"""Reading files that someone else can place, bounded before any byte is read (SPEC S6, A9, R2).

Every file llmcore reads from a folder it does not control — a workspace file a tool reads, a
session file or pointer, a tracked file hashed for drift, a request file, ``conversation.json``
and its images — is read here, by one rule:

1. ``lstat`` the name (no symlink followed): anything but a regular file — a FIFO, a character
   or block device, a socket, a folder — is refused with :class:`~llmcore.errors.FileRefusedError`
   naming the path, **without opening it** (opening a device can have effects of its own).
2. Open with ``O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC`` (a FIFO swapped in meanwhile
   cannot block the open; a symlink swapped in fails with ``ELOOP``) and ``fstat`` the
   descriptor: it must still be a regular file.
3. Refuse a file whose ``st_size`` is over the caller's limit before reading, then read at most
   ``limit + 1`` bytes (a file that grows while it is read is refused, never read whole). A
   sparse 3 GiB file is refused by its size alone: nothing of it is read.
4. Where the file's identity matters (the workspace tools), refuse a regular file with more than
   one hard link (``st_nlink > 1``): another name for it may be outside the workspace.

:func:`sha256_regular` hashes such a file in 1 MiB chunks (constant memory); one over
:data:`MAX_HASHED` by its size, time and ends (constant time).

It leaves out writing (each writer renames a temporary file in the same folder over its
target) and the folder walks (:mod:`llmcore.session.drift` opens each folder with ``openat``).
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Final

from llmcore.errors import FileRefusedError

__all__ = [
    "MAX_FILE",
    "MAX_HASHED",
    "file_kind",
    "open_regular",
    "read_regular",
    "read_stream_at_most",
    "sha256_regular",
]

MAX_FILE: Final = 64 * 1024 * 1024
"""Largest session file, checkpoint, ``conversation.json``, archive image or request file read:
64 MiB (67,108,864 bytes). It is above the largest request body a provider accepts (OpenAI
50 MiB, Anthropic 32 MiB: :data:`llmcore.emulator.limits.OPENAI_MAX_BODY`), so no file a
conversation could send is refused. A larger file is refused before it is read."""

_READ_FLAGS: Final = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
_FOLLOW_FLAGS: Final = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
_CHUNK: Final = 1 << 20
_KINDS: Final = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
)

PathArg = str | Path


def file_kind(mode: int) -> str:
    """Return what ``mode`` is, in words (``"a regular file"``, ``"a FIFO (named pipe)"`` …)."""
    if stat.S_ISREG(mode):
        return "a regular file"
    return next((word for test, word in _KINDS if test(mode)), "not a regular file")


def _refuse_kind(mode: int, where: str) -> FileRefusedError:
    return FileRefusedError(
        f"it is {file_kind(mode)}, not a regular file",
        location=where,
        code=errno.EINVAL,
    )


def open_regular(
    path: PathArg,
    *,
    dir_fd: int | None = None,
    name: str | None = None,
    follow_symlinks: bool = False,
) -> tuple[int, os.stat_result]:
    """Open regular file ``path`` for reading without blocking or following a symlink.

    Args:
        path: The file; relative to ``dir_fd`` when that is given.
        dir_fd: A folder descriptor ``path`` is relative to (``openat``), or ``None``.
        name: How errors name the file (default: ``path``).
        follow_symlinks: Follow a symlink at the last component (a file named on the command
            line); what it points to must still be a regular file.

    Returns:
        The descriptor (the caller closes it) and its ``fstat``.

    Raises:
        FileRefusedError: It is a FIFO, device, socket or folder (not opened).
        OSError: It is missing (``ENOENT``), a symlink (``ELOOP``), unreadable (``EACCES``) …
        ValueError: The path holds a NUL or cannot be encoded (a lone surrogate).
    """
    where = str(path) if name is None else name
    before = os.stat(path, dir_fd=dir_fd, follow_symlinks=follow_symlinks)
    if not stat.S_ISREG(before.st_mode) and not stat.S_ISLNK(before.st_mode):
        raise _refuse_kind(before.st_mode, where)
    flags = _FOLLOW_FLAGS if follow_symlinks else _READ_FLAGS
    fd = os.open(path, flags, dir_fd=dir_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _refuse_kind(info.st_mode, where)
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def read_regular(
    path: PathArg,
    *,
    limit: int,
    dir_fd: int | None = None,
    name: str | None = None,
    single_link: bool = False,
    follow_symlinks: bool = False,
) -> bytes:
    """Return the bytes of regular file ``path``, at most ``limit`` of them (the module's rule).

    Args:
        path: The file; relative to ``dir_fd`` when that is given.
        limit: Most bytes accepted; a larger file is refused before any byte is read.
        dir_fd: A folder descriptor ``path`` is relative to, or ``None``.
        name: How errors name the file (default: ``path``).
        single_link: Refuse a file with more than one hard link.
        follow_symlinks: Follow a symlink at the last component (see :func:`open_regular`).

    Raises:
        FileRefusedError: Not a regular file, over ``limit`` bytes (or grew past it while
            read), or hard-linked with ``single_link``.
        OSError: Missing, a symlink (``ELOOP``), unreadable.
        ValueError: The path holds a NUL or cannot be encoded.
    """
    where = str(path) if name is None else name
    fd, info = open_regular(path, dir_fd=dir_fd, name=where, follow_symlinks=follow_symlinks)
    try:
        if single_link and info.st_nlink > 1:
            raise FileRefusedError(
                f"it has {info.st_nlink} hard links; another name for it may be outside, so "
                "it is not read",
                location=where,
                code=errno.EMLINK,
            )
        if info.st_size > limit:
            raise _too_large(f"it is {info.st_size:,} bytes, over the {limit:,}-byte limit", where)
        return read_stream_at_most(
            lambda n: os.read(fd, n),
            limit=limit,
            name=where,
            what="it grew past the {limit:,}-byte limit while it was read",
            expected=info.st_size,
        )
    finally:
        os.close(fd)


def _too_large(message: str, where: str) -> FileRefusedError:
    return FileRefusedError(message, location=where, code=errno.EFBIG)


def read_stream_at_most(
    read: Callable[[int], bytes],
    *,
    limit: int,
    name: str,
    what: str = "it holds more than the {limit:,}-byte limit",
    expected: int = _CHUNK,
) -> bytes:
    """Return what ``read(n)`` gives until it gives ``b""``, refusing more than ``limit`` bytes.

    For a stream that has no size (standard input) and for a file after its size was checked:
    at most ``limit + 1`` bytes are read, the first ``read`` asking for ``expected + 1`` (a
    file's size: one call reads it and a second sees its end), the later ones 1 MiB each.
    ``what`` is the refusal's message (``{limit}`` is filled in).

    Raises:
        FileRefusedError: More than ``limit`` bytes came.
        OSError: ``read`` failed.
    """
    chunks = []
    left = limit + 1
    size = expected + 1
    while left > 0 and (chunk := read(min(left, size))):
        chunks.append(chunk)
        left -= len(chunk)
        size = _CHUNK
    if left <= 0:
        raise _too_large(what.format(limit=limit), name)
    return b"".join(chunks)


MAX_HASHED: Final = MAX_FILE
"""Largest file :func:`sha256_regular` hashes whole (64 MiB, about 0.1 s); a larger one is
hashed by its size, modification time and first and last MiB instead (constant time)."""


def sha256_regular(path: PathArg, *, dir_fd: int | None = None, name: str | None = None) -> str:
    """Return the SHA-256 hex of regular file ``path``, read in 1 MiB chunks (constant memory).

    A file over :data:`MAX_HASHED` bytes is not read whole: the digest is of its size, its
    modification time (ns) and its first and last MiB, so a tracked 3 GiB file costs two
    reads. A change that keeps all three is not seen; a ``touch`` alone is seen as a change.

    Raises:
        FileRefusedError: Not a regular file (not opened).
        OSError: Missing, a symlink (``ELOOP``), unreadable.
        ValueError: The path holds a NUL or cannot be encoded.
    """
    fd, info = open_regular(path, dir_fd=dir_fd, name=name)
    digest = hashlib.sha256()
    try:
        if info.st_size > MAX_HASHED:
            digest.update(f"llmcore large file {info.st_size} {info.st_mtime_ns}\n".encode())
            digest.update(os.pread(fd, _CHUNK, 0))
            digest.update(os.pread(fd, _CHUNK, info.st_size - _CHUNK))
        else:
            while chunk := os.read(fd, _CHUNK):
                digest.update(chunk)
    finally:
        os.close(fd)
    return digest.hexdigest()
