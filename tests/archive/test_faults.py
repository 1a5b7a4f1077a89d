"""Fail the Nth file-system call of a save, for every N until the save completes (SPEC A9)."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from llmcore.archive import ArchiveStore, Conversation, Item, encode
from llmcore.archive.fs import MUTATING
from llmcore.errors import ArchiveWriteError
from llmcore.messages import Message

from .helpers import CountingFS, conversation, images_intact, png, snapshot, turn


def _old_and_new():
    old = Conversation(conversation(4))
    new = Conversation(conversation(4))
    # Drop two turns (their images become unreferenced) and add one with a new image.
    new.compact(
        summary=Message.user("# Conversation so far\nsummary"),
        keep_from=8,
        notice=Item.make(id="n", type="notice", text="compacted"),
        kept_turn_starts=[1, 5],
    )
    new.end_turn(
        messages=turn(50, image=png(b"brand new image")), provider="openai-chat", model="g"
    )
    return old, new


def _run_every_n(tmp_path, prepare, new):
    template = tmp_path / "template"
    template.mkdir()
    prepare(template)
    old_snapshot = snapshot(template / "agent")
    reference = tmp_path / "reference"
    reference.mkdir()
    ArchiveStore(reference / "agent").save(new)
    clean = snapshot(reference / "agent")
    outcomes = {"before": set(), "after": set()}
    n = 0
    while True:
        n += 1
        work = tmp_path / f"n{n}"
        shutil.copytree(template, work)
        folder = work / "agent"
        fs = CountingFS(fail_at=n)
        store = ArchiveStore(folder, fs=fs)
        try:
            result = store.write(new.state)
        except ArchiveWriteError:
            assert fs.failed is not None
            outcomes["before"].add(fs.failed)
            assert snapshot(folder) == old_snapshot, f"call {n} ({fs.failed})"
        else:
            if fs.failed is None:
                assert snapshot(folder) == clean
                break
            outcomes["after"].add(fs.failed)
            assert result.problems, f"call {n} ({fs.failed}) was not reported"
            assert (folder / "conversation.json").read_bytes() == clean["conversation.json"]
            assert ArchiveStore(folder).load().state == new.state
        # Either way, the next successful save leaves exactly the clean archive.
        ArchiveStore(folder).write(new.state)
        assert snapshot(folder) == clean, f"call {n} ({fs.failed}) left a stray file"
        shutil.rmtree(work)
    return n, outcomes


def test_update_fails_at_every_call(tmp_path):
    old, new = _old_and_new()
    n, outcomes = _run_every_n(
        tmp_path, lambda template: ArchiveStore(template / "agent").save(old), new
    )
    assert n > 14  # the removals after the commit are not made durable (A9: the next save cleans)
    assert {"open_write", "write", "fsync", "fsync_file", "close", "rename", "fsync_dir"} <= (
        outcomes["before"]
    )
    assert {"fsync_dir", "unlink"} <= outcomes["after"]


def test_first_save_fails_at_every_call(tmp_path):
    _, new = _old_and_new()
    n, outcomes = _run_every_n(tmp_path, lambda template: None, new)
    assert {"mkdir", "write", "fsync", "fsync_file", "rename"} <= outcomes["before"]
    assert outcomes["after"] == {"fsync_dir"}


def test_delete_failing_before_commit_keeps_everything_and_after_is_reported(tmp_path):
    old, _ = _old_and_new()
    template = tmp_path / "template"
    template.mkdir()
    ArchiveStore(template / "agent").save(old)
    before = snapshot(template / "agent")
    n = 0
    seen_after = False
    while True:
        n += 1
        work = tmp_path / f"n{n}"
        shutil.copytree(template, work)
        fs = CountingFS(fail_at=n)
        store = ArchiveStore(work / "agent", fs=fs, keep_conversation=False)
        conv = Conversation(old.state)
        try:
            result = store.save(conv)
        except ArchiveWriteError:
            assert snapshot(work / "agent") == before
            continue
        if fs.failed is None:
            assert not (work / "agent").exists()
            break
        seen_after = True
        assert result.problems
        assert not (work / "agent" / "conversation.json").exists()
        store2 = ArchiveStore(work / "agent", keep_conversation=False)
        assert store2.load().state.is_empty
        store2.save(conv)
        assert not (work / "agent").exists()
    assert seen_after


@pytest.mark.parametrize("errno_name", ["ENOSPC", "EIO", "EACCES"])
def test_typed_error_names_folder_and_cause(tmp_path, errno_name):
    import errno

    class Failing(CountingFS):
        def _tick(self, name):
            self.calls.append(name)
            if name == "fsync":
                raise OSError(getattr(errno, errno_name), errno_name)

    old, new = _old_and_new()
    ArchiveStore(tmp_path / "agent").save(old)
    before = snapshot(tmp_path / "agent")
    with pytest.raises(ArchiveWriteError) as info:
        ArchiveStore(tmp_path / "agent", fs=Failing()).save(new)
    assert info.value.location == str(tmp_path / "agent")
    assert errno_name in info.value.message
    assert snapshot(tmp_path / "agent") == before
    assert (tmp_path / "agent" / "conversation.json").read_bytes() == encode(
        old.state, kept_images=None
    )


class _InterruptFS(CountingFS):
    """A KeyboardInterrupt just before (or just after) the mutating call numbered ``at``."""

    def __init__(self, at: int, *, after: bool) -> None:
        super().__init__()
        self.at, self.after, self.hit = at, after, False

    def _tick(self, name: str) -> None:
        self.calls.append(name)
        if len(self.calls) == self.at and not self.after:
            self.hit = True
            raise KeyboardInterrupt

    def __getattribute__(self, name: str) -> Any:
        attr = super().__getattribute__(name)
        if name not in MUTATING or not object.__getattribute__(self, "after"):
            return attr

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            result = attr(*args, **kwargs)
            if len(self.calls) == self.at:
                self.hit = True
                raise KeyboardInterrupt  # the call took effect
            return result

        return wrapped


@pytest.mark.parametrize("after", [False, True])
@pytest.mark.parametrize("big", [False, True])
def test_a_save_interrupted_at_every_call_leaves_an_archive_the_next_save_continues(
    tmp_path, after, big
):
    # Before and after each mutating call (with a file hashed in a thread when ``big``): the
    # disk holds whole images for what it names, the next save of the same conversation is
    # written (no ArchiveConflictError), and a reopen gives that conversation.
    at = 0
    while True:
        at += 1
        folder = tmp_path / f"{after}-{big}-{at}" / "agent"
        folder.parent.mkdir()
        store = ArchiveStore(folder)
        conv = store.open()
        conv.end_turn(messages=turn(1, image=png(b"a" * 50)), provider="a", model="m")
        store.save(conv)
        result = b"z" * (1 << 20) if big else None
        conv.end_turn(
            messages=turn(2, image=png(b"b" * 50), result=result), provider="a", model="m"
        )
        store.fs = fs = _InterruptFS(at, after=after)
        try:
            store.save(conv)
        except KeyboardInterrupt:
            pass
        store.fs = CountingFS()
        assert images_intact(folder, (folder / "conversation.json").read_bytes()), at
        conv.end_turn(messages=turn(3), provider="a", model="m")
        assert store.save(conv).action == "written", at
        assert ArchiveStore(folder).load().state == conv.state, at
        if not fs.hit:
            break
    assert at > 8
