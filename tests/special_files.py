"""Hostile things to place in a folder: FIFOs, sockets, devices, sparse files, deep trees, links.

Shared by the tests of :mod:`llmcore.safeio` and its callers and by the chat-surface rows of the
reliability harness (``tests/chat/hostile.py``).
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def make_fifo(path: Path) -> Path:
    """A FIFO (named pipe) at ``path``."""
    os.mkfifo(path)
    return path


@contextlib.contextmanager
def unix_socket(path: Path) -> Iterator[Path]:
    """A listening Unix socket bound at ``path`` while the block runs."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    folder = os.open(path.parent, _FOLDER)
    try:  # bound through /proc/self/fd: a socket path may be at most 107 bytes long
        short = f"/proc/self/fd/{folder}/{path.name}"
        server.bind(short if len(os.fsencode(path)) > 100 else str(path))
        server.listen(1)
        yield path
    finally:
        server.close()
        os.close(folder)


def make_null_device(path: Path) -> bool:
    """A character device at ``path`` with ``/dev/null``'s numbers; ``False`` if not allowed.

    ``/dev/null`` reads as empty and swallows writes, so even code that (wrongly) opens it
    neither blocks nor fills memory.
    """
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, OSError):
        return False
    return True


def make_sparse(path: Path, size: int) -> Path:
    """A file of ``size`` bytes that takes (almost) no disk: ``truncate``."""
    with open(path, "wb") as handle:
        handle.truncate(size)
    return path


def make_deep_tree(root: Path, depth: int, name: str = "d") -> None:
    """``depth`` nested folders under ``root`` with a file at the bottom (by ``openat``)."""
    fd = os.open(root, _FOLDER)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, _FOLDER, dir_fd=fd)
            os.close(fd)
            fd = inner
        bottom = os.open("bottom.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.close(bottom)
    finally:
        os.close(fd)


def remove_deep_tree(root: Path, name: str = "d") -> None:
    """Remove the tree :func:`make_deep_tree` made under ``root`` (bottom up, no recursion)."""
    chain = [os.open(root, _FOLDER)]
    try:
        while True:
            try:
                chain.append(os.open(name, _FOLDER, dir_fd=chain[-1]))
            except FileNotFoundError:
                break
        for index in range(len(chain) - 1, 0, -1):  # the root's other entries are left
            for entry in os.listdir(chain[index]):
                if entry != name:
                    os.unlink(entry, dir_fd=chain[index])
            os.close(chain.pop())
            os.rmdir(name, dir_fd=chain[index - 1])
    finally:
        for fd in chain:
            os.close(fd)


def unblock(fifo: Path) -> None:
    """Let a reader blocked on ``fifo`` go: open its write end without blocking and close it."""
    with contextlib.suppress(OSError):
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    with contextlib.suppress(OSError):  # a writer blocked on it: open and close a read end
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))


def finishes(call: Callable[[], Any], fifos: tuple[Path, ...] = (), limit: float = 60.0) -> Any:
    """Return ``call()``; raise ``AssertionError`` if it is still blocked after ``limit`` s.

    ``limit`` only detects a hang (the fixed code returns in milliseconds): a blocked call is
    then released by :func:`unblock` on each of ``fifos`` so that no thread is left behind.
    """
    result: list[Any] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            result.append(call())
        except BaseException as exc:  # re-raised in the test's thread
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(limit)
    if thread.is_alive():
        for fifo in fifos:
            unblock(fifo)
        thread.join(limit)
        raise AssertionError(f"blocked for over {limit:g} s (a FIFO or device was opened)")
    if errors:
        raise errors[0]
    return result[0]
