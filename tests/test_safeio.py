"""The one bounded, non-blocking reader of placed files (:mod:`llmcore.safeio`, issue 18 item 1-3)."""

from __future__ import annotations

import errno
import hashlib
import os
import tracemalloc
from pathlib import Path

import pytest

from llmcore.errors import FileRefusedError, LLMCoreError, UserError
from llmcore.safeio import (
    MAX_FILE,
    MAX_HASHED,
    read_regular,
    read_stream_at_most,
    sha256_regular,
)
from tests.special_files import finishes, make_fifo, make_null_device, make_sparse, unix_socket


def _refused(path: Path, **kwargs) -> FileRefusedError:
    with pytest.raises(FileRefusedError) as err:
        finishes(lambda: read_regular(path, **kwargs), fifos=(path,))
    assert err.value.location == str(path)
    assert isinstance(err.value, OSError) and isinstance(err.value, UserError)
    assert err.value.filename == str(path) and err.value.strerror == err.value.message
    return err.value


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = make_fifo(tmp_path / "pipe")
    error = _refused(fifo, limit=MAX_FILE)
    assert error.message == "it is a FIFO (named pipe), not a regular file"
    assert error.errno == errno.EINVAL
    assert str(error) == f"{fifo}: it is a FIFO (named pipe), not a regular file"


def test_a_socket_and_a_folder_are_refused(tmp_path):
    with unix_socket(tmp_path / "sock") as sock:
        assert "it is a socket" in _refused(sock, limit=MAX_FILE).message
    (tmp_path / "dir").mkdir()
    assert "it is a folder" in _refused(tmp_path / "dir", limit=MAX_FILE).message


def test_a_device_is_refused_without_being_opened(tmp_path):
    device = tmp_path / "null"
    if not make_null_device(device):
        pytest.skip("this user may not create device nodes")
    assert "it is a character device" in _refused(device, limit=MAX_FILE).message


def test_a_sparse_file_over_the_limit_is_refused_by_its_size_alone(tmp_path):
    sparse = make_sparse(tmp_path / "big", 3 * 1024**3)
    tracemalloc.start()
    try:
        error = _refused(sparse, limit=MAX_FILE)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert error.message == "it is 3,221,225,472 bytes, over the 67,108,864-byte limit"
    assert error.errno == errno.EFBIG
    assert peak < 1 << 20


def test_the_limit_is_inclusive(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 10)
    assert read_regular(path, limit=10) == b"x" * 10
    path.write_bytes(b"x" * 11)
    assert _refused(path, limit=10).message == "it is 11 bytes, over the 10-byte limit"


def test_a_file_longer_than_its_size_says_is_cut_at_limit_plus_one():
    # /proc files report st_size 0 and hold more: the read stops at limit + 1 bytes.
    status = Path("/proc/self/status")
    if not status.is_file():
        pytest.skip("no /proc")
    error = _refused(status, limit=10)
    assert error.message == "it grew past the 10-byte limit while it was read"


def test_symlinks_are_not_followed_unless_asked(tmp_path):
    target = tmp_path / "target"
    target.write_bytes(b"t")
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(OSError) as err:
        read_regular(tmp_path / "link", limit=10)
    assert err.value.errno == errno.ELOOP
    assert read_regular(tmp_path / "link", limit=10, follow_symlinks=True) == b"t"
    fifo = make_fifo(tmp_path / "pipe")
    (tmp_path / "to-pipe").symlink_to(fifo)
    with pytest.raises(FileRefusedError, match="FIFO"):
        finishes(lambda: read_regular(tmp_path / "to-pipe", limit=10, follow_symlinks=True))


def test_hard_links_are_refused_only_when_asked(tmp_path):
    path = tmp_path / "a"
    path.write_bytes(b"shared")
    os.link(path, tmp_path / "b")
    assert read_regular(tmp_path / "b", limit=10) == b"shared"
    error = _refused(tmp_path / "b", limit=10, single_link=True)
    assert error.message.startswith("it has 2 hard links") and error.errno == errno.EMLINK


def test_sha256_streams_in_constant_memory(tmp_path):
    sparse = make_sparse(tmp_path / "big", 48 * 1024**2)
    tracemalloc.start()
    try:
        digest = sha256_regular(sparse)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    expected = hashlib.sha256()
    for _ in range(48):
        expected.update(bytes(1 << 20))
    assert digest == expected.hexdigest()
    assert peak < 4 << 20
    with pytest.raises(FileRefusedError):
        finishes(lambda: sha256_regular(make_fifo(tmp_path / "pipe")))


def test_a_stream_is_read_to_at_most_limit_plus_one():
    data = iter([b"abc", b"def", b"ghi"])
    asked: list[int] = []

    def read(n: int) -> bytes:
        asked.append(n)
        return next(data, b"")

    with pytest.raises(FileRefusedError) as err:
        read_stream_at_most(read, limit=5, name="<stdin>")
    assert str(err.value) == "<stdin>: it holds more than the 5-byte limit"
    assert asked == [6, 3]
    rest = iter([b"ab", b""])
    assert read_stream_at_most(lambda n: next(rest), limit=5, name="x") == b"ab"
    assert issubclass(FileRefusedError, LLMCoreError)


def test_a_file_over_max_hashed_is_hashed_by_size_time_and_ends(tmp_path):
    sparse = make_sparse(tmp_path / "big", 3 * 1024**3)
    tracemalloc.start()
    try:
        first = sha256_regular(sparse)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20
    assert sha256_regular(sparse) == first
    info = os.stat(sparse)
    with open(sparse, "r+b") as handle:  # a change in the last MiB, the time kept
        handle.seek(info.st_size - 10)
        handle.write(b"x")
    os.utime(sparse, ns=(info.st_atime_ns, info.st_mtime_ns))
    second = sha256_regular(sparse)
    assert second != first
    os.utime(sparse, ns=(info.st_atime_ns, info.st_mtime_ns + 1))
    assert sha256_regular(sparse) not in (first, second)
    assert MAX_HASHED == MAX_FILE
