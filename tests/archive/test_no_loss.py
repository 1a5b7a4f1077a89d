"""No data loss between processes and on read errors (SPEC A7, A9, A12; issue 8 items 1–3, 5).

Every test here failed before the folder lock, the conflict check, unread images and the
post-commit rules existed. Concurrency is made deterministic with events at file-system calls and
zero lock timeouts, never with sleeps.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import threading
from pathlib import Path

import pytest

from llmcore.archive import ArchiveStore, Conversation
from llmcore.archive._results import VersionJob
from llmcore.archive.fs import FileSystem
from llmcore.errors import ArchiveBusyError, ArchiveConflictError, ArchiveWriteError
from llmcore.messages import OMITTED_IMAGE_PLACEHOLDER, Image, Text

from .helpers import conversation, images_intact, png, snapshot, turn


def _saved(folder: Path, turns: int = 3) -> Conversation:
    folder.parent.mkdir(parents=True, exist_ok=True)
    conv = Conversation(conversation(turns))
    ArchiveStore(folder).save(conv)
    return conv


def _images(state) -> list[Image]:
    return [p for m in state.history for p in m.content if isinstance(p, Image)]


def _unread(state) -> list[Text]:
    return [
        p
        for m in state.history
        for p in m.content
        if isinstance(p, Text) and p.unread_image_sha256 is not None
    ]


def _hold_lock(folder: Path) -> int:
    fd = os.open(folder / ".llmcore.lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


# ------------------------------------------------------------------------- two processes (A9)


def test_save_of_a_conversation_opened_before_another_save_conflicts(tmp_path):
    folder = tmp_path / "agent"
    _saved(folder)
    mine = ArchiveStore(folder).open()
    theirs = ArchiveStore(folder).open()
    theirs.end_turn(messages=turn(10, image=png(b"theirs")), provider="anthropic", model="m")
    ArchiveStore(folder).save(theirs)
    after_theirs = snapshot(folder)
    mine.end_turn(messages=turn(11, image=png(b"mine")), provider="anthropic", model="m")
    with pytest.raises(ArchiveConflictError, match="changed on disk") as caught:
        ArchiveStore(folder).save(mine)
    assert caught.value.location == str(folder)
    assert snapshot(folder) == after_theirs  # their update and images stand, untouched
    assert ArchiveStore(folder).load().state == theirs.state


def test_conflict_is_a_write_error_so_existing_handlers_catch_it():
    assert issubclass(ArchiveConflictError, ArchiveWriteError)
    assert issubclass(ArchiveBusyError, ArchiveWriteError)


def test_the_same_change_in_two_processes_is_not_a_conflict(tmp_path):
    folder = tmp_path / "agent"
    _saved(folder)
    first, second = ArchiveStore(folder).open(), ArchiveStore(folder).open()
    for conv in (first, second):
        conv.set_queued(["same"])
    assert ArchiveStore(folder).save(first).action == "written"
    assert ArchiveStore(folder).save(second).action == "unchanged"


def test_saving_again_after_a_save_is_not_a_conflict_and_a_reopen_continues(tmp_path):
    folder = tmp_path / "agent"
    _saved(folder)
    store = ArchiveStore(folder)
    conv = store.open()
    for index in range(3):
        conv.end_turn(messages=turn(20 + index), provider="anthropic", model="m")
        assert store.save(conv).action == "written"
    other = ArchiveStore(folder).open()
    other.set_unsent(["x"])
    ArchiveStore(folder).save(other)
    conv.set_unsent(["y"])
    with pytest.raises(ArchiveConflictError):
        store.save(conv)
    again = store.open()
    again.set_unsent(["y"])
    assert store.save(again).action == "written"


def test_two_new_conversations_in_one_empty_folder_conflict(tmp_path):
    folder = tmp_path / "agent"
    first, second = ArchiveStore(folder).open(), ArchiveStore(folder).open()
    first.end_turn(messages=turn(1), provider="anthropic", model="m")
    second.end_turn(messages=turn(2), provider="anthropic", model="m")
    ArchiveStore(folder).save(first)
    with pytest.raises(ArchiveConflictError):
        ArchiveStore(folder).save(second)
    assert ArchiveStore(folder).load().state == first.state


def test_save_while_another_process_holds_the_lock_times_out_changing_nothing(tmp_path):
    folder = tmp_path / "agent"
    _saved(folder)
    before = snapshot(folder, lock=True)
    fd = _hold_lock(folder)
    try:
        with pytest.raises(ArchiveBusyError, match="lock"):
            ArchiveStore(folder, lock_timeout=0).write(conversation(4))
        assert snapshot(folder, lock=True) == before
    finally:
        os.close(fd)
    assert ArchiveStore(folder, lock_timeout=0).write(conversation(4)).action == "written"


def test_open_while_a_save_holds_the_lock_is_a_notice_and_the_folder_is_kept(tmp_path):
    folder = tmp_path / "agent"
    _saved(folder)
    before = snapshot(folder, lock=True)
    fd = _hold_lock(folder)
    try:
        store = ArchiveStore(folder, lock_timeout=0)
        conv = store.open()
        assert "held the archive's lock" in conv.notices[0].reason
        assert store.save(conv).action == "kept_unreadable"
        conv.end_turn(messages=turn(9), provider="anthropic", model="m")
    finally:
        os.close(fd)
    with pytest.raises(ArchiveConflictError):  # it never read the file: it cannot replace it
        ArchiveStore(folder).save(conv)
    assert snapshot(folder, lock=True) == before


class _PauseAfter(FileSystem):
    """Signals ``reached`` after the first ``read_bytes`` of ``conversation.json``, then waits."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.go = threading.Event()

    def read_bytes(self, path: Path) -> bytes:
        data = super().read_bytes(path)
        if path.name == "conversation.json" and not self.reached.is_set():
            self.reached.set()
            assert self.go.wait(30)
        return data


def test_a_reader_between_json_and_images_blocks_saves_so_it_never_reads_half(tmp_path):
    folder = tmp_path / "agent"
    old = _saved(folder, turns=3)
    fs = _PauseAfter()
    got = []
    reader = threading.Thread(target=lambda: got.append(ArchiveStore(folder, fs=fs).load()))
    reader.start()
    assert fs.reached.wait(30)
    # The reader has conversation.json and not yet its images. A save that drops those images
    # must not run now (before the lock, it deleted them and the reader saw them omitted).
    with pytest.raises(ArchiveBusyError):
        ArchiveStore(folder, lock_timeout=0).write(conversation(1))
    fs.go.set()
    reader.join(30)
    assert got[0].state == old.state and len(_images(got[0].state)) == 3


class _PauseAtCommit(FileSystem):
    """Signals after the rename of ``conversation.json`` (the commit point), then waits."""

    def __init__(self) -> None:
        self.committed = threading.Event()
        self.go = threading.Event()

    def rename(self, source: Path, target: Path) -> None:
        super().rename(source, target)
        if target.name == "conversation.json":
            self.committed.set()
            assert self.go.wait(30)


def test_a_save_between_commit_and_cleanup_is_not_read(tmp_path):
    folder = tmp_path / "agent"
    _saved(folder, turns=3)
    fs = _PauseAtCommit()
    writer = threading.Thread(target=lambda: ArchiveStore(folder, fs=fs).write(conversation(1)))
    writer.start()
    assert fs.committed.wait(30)
    loaded = ArchiveStore(folder, lock_timeout=0).load()
    assert loaded.notice is not None and "lock" in loaded.notice.reason  # not a half state
    fs.go.set()
    writer.join(30)
    assert ArchiveStore(folder).load().state == conversation(1)


def test_cleanup_keeps_images_that_the_conversation_json_on_disk_names(tmp_path):
    folder = tmp_path / "agent"
    _saved(folder, turns=3)

    class ForeignWriterAtCommit(FileSystem):
        """Another program (not taking the lock) puts back the 3-turn file right at commit."""

        old = (folder / "conversation.json").read_bytes()

        def rename(self, source: Path, target: Path) -> None:
            super().rename(source, target)
            if target.name == "conversation.json":
                (folder / "conversation.json").write_bytes(self.old)

    ArchiveStore(folder, fs=ForeignWriterAtCommit()).write(conversation(1))
    data = (folder / "conversation.json").read_bytes()
    assert images_intact(folder, data)  # the 3 images it names were not cleaned up


# ------------------------------------------------------------------- read errors are not loss (A7)


class _FailingImageReads(FileSystem):
    def __init__(self, error: int = errno.EIO) -> None:
        self.error = error

    def read_bytes(self, path: Path) -> bytes:
        if path.parent.name == "images":
            raise OSError(self.error, os.strerror(self.error), str(path))
        return super().read_bytes(path)


@pytest.mark.parametrize("error", [errno.EIO, errno.EACCES, errno.EMFILE])
def test_an_image_read_error_is_a_notice_and_never_drops_the_image(tmp_path, error):
    folder = tmp_path / "agent"
    original = _saved(folder, turns=2)
    store = ArchiveStore(folder, fs=_FailingImageReads(error))
    conv = store.open()
    assert len(conv.notices) == 1 and "could not be read" in conv.notices[0].message
    assert os.strerror(error) in conv.notices[0].reason
    assert not conv.keeps_unreadable
    unread = _unread(conv.state)
    assert [t.text for t in unread] == [OMITTED_IMAGE_PLACEHOLDER] * 2
    assert {t.unread_image_sha256 for t in unread} == {i.sha256 for i in _images(original.state)}
    conv.end_turn(messages=turn(7, image=png(b"new")), provider="anthropic", model="m")
    assert store.save(conv).action == "written"
    doc = json.loads((folder / "conversation.json").read_text())
    blocks = [b["type"] for m in doc["history"] for b in m["content"] if "mimeType" in b]
    assert blocks == ["image", "image", "image"]  # never imageOmitted
    assert images_intact(folder, (folder / "conversation.json").read_bytes())
    reopened = ArchiveStore(folder).load().state  # the error is gone: the images are back
    assert _images(reopened)[:2] == _images(original.state)


def test_an_unread_image_is_dropped_only_when_its_file_is_gone_or_wrong(tmp_path):
    folder = tmp_path / "agent"
    original = _saved(folder, turns=3)
    conv = ArchiveStore(folder, fs=_FailingImageReads()).open()
    first, second, _ = (folder / "images" / f"{i.sha256}.png" for i in _images(original.state))
    first.unlink()
    second.write_bytes(b"other bytes")
    conv.set_queued(["x"])
    ArchiveStore(folder).save(conv)
    doc = json.loads((folder / "conversation.json").read_text())
    blocks = [b["type"] for m in doc["history"] for b in m["content"] if "mimeType" in b]
    assert blocks == ["imageOmitted", "imageOmitted", "image"]


def test_a_symlinked_images_folder_keeps_every_reference(tmp_path):
    folder = tmp_path / "agent"
    _saved(folder, turns=2)
    (folder / "images").rename(tmp_path / "outside")
    os.symlink(tmp_path / "outside", folder / "images")
    before = snapshot(folder)
    conv = ArchiveStore(folder).open()
    assert "images is a symbolic link" in conv.notices[0].reason
    assert len(_unread(conv.state)) == 2
    conv.end_turn(messages=turn(5), provider="anthropic", model="m")  # a turn with no image
    with pytest.raises(ArchiveWriteError, match="images is a symbolic link"):
        ArchiveStore(folder).save(conv)  # before: saved both images as imageOmitted
    assert snapshot(folder) == before


# ------------------------------------------------------------------ after the commit point (A9)


class _FailAfterCommit(FileSystem):
    """Raises ``EIO`` from the ``n``-th file-system call of any kind after the commit."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.after = 0
        self.committed = False
        self.failed: str | None = None

    def __getattribute__(self, name: str):
        attr = super().__getattribute__(name)
        if name.startswith("_") or not callable(attr) or name in {"n", "after"}:
            return attr

        def call(*args, **kwargs):
            if self.committed:
                self.after += 1
                if self.after == self.n:
                    self.failed = name
                    if name in {"close", "release"}:  # the descriptor is freed all the same
                        attr(*args, **kwargs)
                    raise OSError(errno.EIO, "Input/output error (injected)")
            result = attr(*args, **kwargs)
            if name == "rename" and args[1].name == "conversation.json":
                self.committed = True
            return result

        return call


def test_every_oserror_after_the_commit_is_a_problem_never_raised(tmp_path):
    n = 0
    while True:
        n += 1
        folder = tmp_path / f"n{n}" / "agent"
        _saved(folder, turns=3)
        fs = _FailAfterCommit(n)
        result = ArchiveStore(folder, fs=fs).write(conversation(1))  # never raises
        assert result.action == "written"
        assert ArchiveStore(folder).load().state == conversation(1)
        if not fs.failed:
            break
        if fs.failed != "release":  # closing the lock's descriptor changes nothing on disk
            assert result.problems, f"call {n} ({fs.failed}) after the commit was not reported"
        ArchiveStore(folder).write(conversation(1))  # the next save cleans up
        assert len(list((folder / "images").iterdir())) == 1
    assert n > 5


class _RenameErrsButTakesEffect(FileSystem):
    def rename(self, source: Path, target: Path) -> None:
        super().rename(source, target)
        if target.name == "conversation.json":
            raise OSError(errno.EIO, "Input/output error (reply lost)")


def test_a_rename_that_reports_an_error_but_took_effect_counts_as_committed(tmp_path):
    folder = tmp_path / "agent"
    _saved(folder, turns=1)
    new = conversation(3, image_size=128)
    result = ArchiveStore(folder, fs=_RenameErrsButTakesEffect()).write(new)
    assert result.action == "written"
    assert any("took effect" in p for p in result.problems)
    data = (folder / "conversation.json").read_bytes()
    assert images_intact(folder, data)  # before: the undo deleted the new images it names
    assert ArchiveStore(folder).load().state == new


class _RenameFails(FileSystem):
    def __init__(self, *, then_replace: bytes | None = None) -> None:
        self.then_replace = then_replace

    def rename(self, source: Path, target: Path) -> None:
        if target.name == "conversation.json":
            if self.then_replace is not None:
                target.write_bytes(self.then_replace)
            raise OSError(errno.EIO, "Input/output error")
        super().rename(source, target)


def test_the_error_says_unchanged_only_when_the_archive_is(tmp_path):
    folder = tmp_path / "agent"
    _saved(folder, turns=1)
    before = snapshot(folder)
    with pytest.raises(ArchiveWriteError, match="the previous archive is unchanged"):
        ArchiveStore(folder, fs=_RenameFails()).write(conversation(2))
    assert snapshot(folder) == before
    with pytest.raises(ArchiveWriteError, match="could not be confirmed unchanged"):
        ArchiveStore(folder, fs=_RenameFails(then_replace=b"{}")).write(conversation(2))


# --------------------------------------------------------------- a symlinked conversation.json


def test_a_symlinked_conversation_json_is_never_replaced_nor_removed(tmp_path):
    folder = tmp_path / "agent"
    folder.mkdir()
    target = tmp_path / "elsewhere.json"
    target.write_bytes(b'{"formatVersion": 1}')
    os.symlink(target, folder / "conversation.json")
    store = ArchiveStore(folder)
    conv = store.open()
    assert "symbolic link" in conv.notices[0].reason and conv.keeps_unreadable
    assert store.save(conv).action == "kept_unreadable"
    conv.end_turn(messages=turn(1), provider="anthropic", model="m")
    with pytest.raises(ArchiveWriteError, match="conversation.json is a symbolic link"):
        store.save(conv)  # before: the rename silently replaced the link with a file
    assert os.path.islink(folder / "conversation.json")
    result = ArchiveStore(folder, keep_conversation=False).save(conv)
    assert result.action == "deleted" and "conversation.json" in result.kept
    assert os.path.islink(folder / "conversation.json")  # before: the link was unlinked
    assert target.read_bytes() == b'{"formatVersion": 1}'


# ------------------------------------------------------------------------------ the lock file


def test_the_lock_file_is_llmcores_made_by_saves_only_and_removed_with_the_archive(tmp_path):
    folder = tmp_path / "agent"
    folder.mkdir()
    (folder / "conversation.json").write_bytes(b"{not json")
    ArchiveStore(folder).open()
    assert not (folder / ".llmcore.lock").exists()  # opening never writes
    store = ArchiveStore(folder)
    store.save(Conversation(conversation(1)))
    assert (folder / ".llmcore.lock").read_bytes() == b""
    assert store.delete().action == "deleted"
    assert not folder.exists()


# ------------------------------------------------------------- the tester's second round


class _SignalSecondTry(FileSystem):
    """Signals ``waiting`` at its second lock try (the gate is held; now the lock file)."""

    def __init__(self) -> None:
        self.tries = 0
        self.waiting = threading.Event()

    def try_lock(self, fd: int, *, exclusive: bool) -> bool:
        self.tries += 1
        got = super().try_lock(fd, exclusive=exclusive)
        if self.tries >= 2 and not got:
            self.waiting.set()
        return got


def test_a_waiting_save_keeps_new_opens_out_so_opens_cannot_starve_it(tmp_path):
    folder = tmp_path / "agent"
    _saved(folder, turns=2)
    reader_fs = _PauseAfter()
    first = threading.Thread(target=lambda: ArchiveStore(folder, fs=reader_fs).load())
    first.start()
    assert reader_fs.reached.wait(30)  # a reader holds the shared lock
    writer_fs = _SignalSecondTry()
    saved = []
    writer = threading.Thread(
        target=lambda: saved.append(ArchiveStore(folder, fs=writer_fs).write(conversation(3)))
    )
    writer.start()
    assert writer_fs.waiting.wait(30)  # the save holds the gate and waits for the reader
    late = ArchiveStore(folder, lock_timeout=0).load()  # before: got in at once, again and again
    assert late.notice is not None and "lock" in late.notice.reason
    reader_fs.go.set()
    first.join(30)
    writer.join(30)
    assert saved[0].action == "written"
    assert ArchiveStore(folder).load().state == conversation(3)


def test_an_unreadable_image_sent_again_is_rewritten_from_memory(tmp_path):
    folder = tmp_path / "agent"
    data = png(b"hello" * 100)
    conv = Conversation()
    conv.end_turn(messages=turn(1, image=data), provider="anthropic", model="m")
    ArchiveStore(folder).save(conv)
    name = f"{Image(data=data, mime_type='image/png').sha256}.png"

    class OneBadImage(FileSystem):
        def read_bytes(self, path: Path) -> bytes:
            if path.name == name:
                raise OSError(errno.EIO, "Input/output error", str(path))
            return super().read_bytes(path)

    store = ArchiveStore(folder, fs=OneBadImage())
    again = store.open()
    assert again.notices  # the image could not be read
    again.end_turn(messages=turn(2, image=data), provider="anthropic", model="m")
    assert store.save(again).action == "written"  # before: EIO on every save
    assert images_intact(folder, (folder / "conversation.json").read_bytes())


def test_an_interrupt_after_the_commit_is_not_a_conflict_next_time(tmp_path):
    folder = tmp_path / "agent"

    class InterruptAfterCommit(FileSystem):
        armed = False

        def fsync_dir(self, path: Path) -> None:
            if self.armed and path == folder:
                self.armed = False
                raise KeyboardInterrupt
            super().fsync_dir(path)

    _interrupted_after_commit_then_saved(folder, InterruptAfterCommit())


def test_an_unchanged_save_of_a_folder_without_a_lock_file_writes_nothing(tmp_path):
    from .helpers import CountingFS

    folder = tmp_path / "agent"
    _saved(folder, turns=2)
    os.unlink(folder / ".llmcore.lock")  # an older version's archive, or a copy without dot files
    fs = CountingFS()
    store = ArchiveStore(folder, fs=fs)
    assert store.save(store.open()).action == "unchanged"
    assert fs.calls == []  # before: create_lock
    conv = store.open()
    conv.set_queued(["x"])
    store.save(conv)
    assert (folder / ".llmcore.lock").is_file()  # a save that writes makes it


def test_a_path_with_a_nul_byte_is_a_notice_and_typed_errors(tmp_path):
    store = ArchiveStore(tmp_path / "x\0y" / "agent")
    conv = store.open()
    assert "NUL" in conv.notices[0].reason
    with pytest.raises(ArchiveWriteError, match="NUL"):
        store.write(conversation(1))
    with pytest.raises(ArchiveWriteError, match="NUL"):
        store.delete()


def test_host_numbers_are_kept_exactly_through_open_and_save(tmp_path):
    folder = tmp_path / "agent"
    _saved(folder, turns=1)
    path = folder / "conversation.json"
    numbers = '"n1": 12345678901234567890.5, "n2": 1E+2, "n3": 0.1e-400, "n4": 1.5'
    path.write_text(path.read_text().replace('"hasImage": true', '"hasImage": true, ' + numbers, 1))
    store = ArchiveStore(folder)
    conv = store.open()
    conv.set_card("skill", "u0", {"score": 0.5})  # a host value set in memory, next to them
    conv.set_queued(["x"])
    store.save(conv)
    text = path.read_text()
    for kept in ('"n1": 12345678901234567890.5', '"n2": 1E+2', '"n3": 0.1e-400', '"n4": 1.5'):
        assert kept in text  # before: 1.2345678901234567e+19, 100.0, 0.0 (A4: kept unchanged)
    again = ArchiveStore(folder).open()
    again.set_unsent(["y"])
    ArchiveStore(folder).save(again)
    assert '"n1": 12345678901234567890.5' in path.read_text()


def test_an_interrupt_while_a_large_save_waits_for_its_version_is_not_a_conflict_next_time(
    tmp_path, monkeypatch
):
    # A file of 1 MiB or more is hashed in a thread while it is written; a KeyboardInterrupt
    # that lands while the save waits for that thread comes after the commit point.
    folder = tmp_path / "agent"
    store = ArchiveStore(folder)
    conv = store.open()
    conv.end_turn(messages=turn(1, result=b"x" * (1 << 20)), provider="a", model="m")
    store.save(conv)
    real_result = VersionJob.result
    armed = [True]

    def result(self: VersionJob) -> str:
        version = real_result(self)  # the hash is done; the interrupt lands on the return
        if armed[0]:
            armed[0] = False
            raise KeyboardInterrupt
        return version

    monkeypatch.setattr(VersionJob, "result", result)
    conv.end_turn(messages=turn(2), provider="a", model="m")
    with pytest.raises(KeyboardInterrupt):
        store.save(conv)  # turn 2 is committed
    assert ArchiveStore(folder).load().state == conv.state
    conv.end_turn(messages=turn(3), provider="a", model="m")
    assert store.save(conv).action == "written"  # before: ArchiveConflictError
    assert ArchiveStore(folder).load().state == conv.state


def test_an_interrupt_as_the_commit_rename_returns_is_not_a_conflict_next_time(tmp_path):
    folder = tmp_path / "agent"

    class InterruptOnRename(FileSystem):
        armed = False

        def rename(self, source: Path, target: Path) -> None:
            super().rename(source, target)
            if self.armed and target.name == "conversation.json":
                self.armed = False
                raise KeyboardInterrupt  # the rename took effect

    _interrupted_after_commit_then_saved(folder, InterruptOnRename())


def _interrupted_after_commit_then_saved(folder, fs) -> None:
    """A save interrupted after its commit by ``fs`` (armed), then the next save: no conflict."""
    store = ArchiveStore(folder, fs=fs)
    conv = store.open()
    conv.end_turn(messages=turn(1), provider="a", model="m")
    store.save(conv)
    conv.end_turn(messages=turn(2), provider="a", model="m")
    fs.armed = True
    with pytest.raises(KeyboardInterrupt):
        store.save(conv)  # turn 2 is committed
    conv.end_turn(messages=turn(3), provider="a", model="m")
    assert store.save(conv).action == "written"  # before: ArchiveConflictError
    assert ArchiveStore(folder).load().state == conv.state
