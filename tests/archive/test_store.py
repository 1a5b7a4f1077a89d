from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from llmcore.archive import ArchiveStore, Conversation, ConversationState, Item, encode
from llmcore.archive.fs import MUTATING, FileSystem
from llmcore.facts import Section
from llmcore.messages import Message
from llmcore.usage import Cost, Usage

from .helpers import FIXTURE, CountingFS, conversation, png, snapshot, turn


def _store(tmp_path, **kwargs):
    fs = CountingFS()
    return ArchiveStore(tmp_path / "agent", fs=fs, **kwargs), fs


def _unreadable_folder(tmp_path, content=b'{"formatVersion": 2, "future": true}'):
    folder = tmp_path / "agent"
    (folder / "images").mkdir(parents=True)
    (folder / "conversation.json").write_bytes(content)
    (folder / "images" / "keep.bin").write_bytes(b"old image")
    (folder / "notes.txt").write_bytes(b"foreign")
    return folder


def test_no_folder_opens_empty_without_notice(tmp_path):
    store, fs = _store(tmp_path)
    conv = store.open()
    assert conv.state == ConversationState()
    assert conv.notices == ()
    (tmp_path / "agent").mkdir()
    assert store.open().notices == ()
    assert fs.calls == []


@pytest.mark.parametrize(
    "content",
    [b"{broken", b'{"formatVersion": 2}', b'{"formatVersion": 1, "newKey": 1}', b"\xff"],
)
def test_unreadable_opens_with_one_notice_and_is_kept_through_saves(tmp_path, content):
    folder = _unreadable_folder(tmp_path, content)
    before = snapshot(folder)
    store, fs = _store(tmp_path)
    edits = []
    conv = store.open(on_edited=lambda: edits.append(1))
    assert len(conv.notices) == 1
    assert "could not be read" in conv.notices[0].message
    assert "conversation.json" in conv.notices[0].reason
    assert conv.state == ConversationState()
    assert edits == [] and not conv.edited
    conv.rate("x", "good")
    conv.set_queued(["later"])
    assert store.save(conv).action == "kept_unreadable"
    assert snapshot(folder) == before
    assert fs.calls == []
    # A turn runs: conversation.json is replaced by format 1; files llmcore did not create
    # (notes.txt, images/keep.bin) stay byte for byte.
    conv.end_turn(messages=turn(0), provider="anthropic", model="m")
    assert store.save(conv).action == "written"
    after = snapshot(folder)
    assert sorted(after) == ["conversation.json", "images/", "images/keep.bin", "notes.txt"]
    assert after["notes.txt"] == b"foreign" and after["images/keep.bin"] == b"old image"
    assert store.load().state == conv.state


def test_unreadable_deleted_when_new_conversation_confirmed(tmp_path):
    folder = _unreadable_folder(tmp_path)
    store, _ = _store(tmp_path)
    conv = store.open()
    conv.new_conversation()
    assert conv.notices == ()
    result = store.save(conv)
    assert result.action == "deleted"
    # Only what llmcore wrote goes; the foreign files keep the folder (SaveResult.kept).
    assert result.kept == ("images/keep.bin", "notes.txt")
    assert sorted(snapshot(folder)) == ["images/", "images/keep.bin", "notes.txt"]
    assert store.save(conv).action == "nothing"


def test_empty_conversation_writes_no_folder(tmp_path):
    store, fs = _store(tmp_path)
    conv = Conversation()
    assert store.save(conv).action == "nothing"
    assert not (tmp_path / "agent").exists()
    assert fs.calls == []


def test_template_never_gets_a_folder(tmp_path):
    store, fs = _store(tmp_path, template=True)
    conv = Conversation(conversation(2))
    assert store.save(conv).action == "nothing"
    assert not (tmp_path / "agent").exists()
    assert fs.calls == []


def test_save_then_reopen_equals_and_unchanged_save_makes_no_write(tmp_path):
    store, fs = _store(tmp_path)
    state = conversation(6)
    conv = Conversation(state)
    first = store.save(conv)
    assert first.action == "written"
    assert first.bytes_written > 0
    assert "rename" in fs.calls and "fsync_dir" in fs.calls
    fs.calls.clear()
    assert store.save(conv).action == "unchanged"
    assert fs.calls == []
    # A fresh store (a new process) also writes nothing.
    fresh, fresh_fs = _store(tmp_path)
    reopened = fresh.open()
    assert reopened.state == state
    assert fresh.save(reopened).action == "unchanged"
    assert fresh_fs.calls == []


def test_save_after_one_turn_writes_only_the_new_image_and_the_document(tmp_path):
    store, fs = _store(tmp_path)
    conv = Conversation(conversation(4))
    store.save(conv)
    fs.calls.clear()
    conv.end_turn(messages=turn(99, image=b"\x89PNG\r\n\x1a\nnew"), provider="anthropic", model="m")
    result = store.save(conv)
    size = len((tmp_path / "agent" / "conversation.json").read_bytes())
    assert result.bytes_written == size + len(b"\x89PNG\r\n\x1a\nnew")
    assert fs.calls.count("rename") == 2


def test_unreferenced_images_and_leftovers_removed_on_save(tmp_path):
    store, _ = _store(tmp_path)
    conv = Conversation(conversation(3))
    store.save(conv)
    folder = tmp_path / "agent"
    (folder / ".conversation.json.1-abcd.tmp").write_bytes(b"partial")
    (folder / "images" / f".{'ab' * 32}.png.1-abcd.tmp").write_bytes(b"partial")
    conv.new_conversation()
    conv.end_turn(messages=turn(7, image=b"\x89PNG\r\n\x1a\nonly"), provider="p", model="m")
    store.save(conv)
    assert sorted(snapshot(folder)) == sorted(
        ["conversation.json", "images/", "images/" + next(iter((folder / "images").iterdir())).name]
    )
    assert len(list((folder / "images").iterdir())) == 1


def test_leftovers_alone_make_a_save_clean_up(tmp_path):
    store, fs = _store(tmp_path)
    conv = Conversation(conversation(2))
    store.save(conv)
    stray = tmp_path / "agent" / ".conversation.json.9-ffff.tmp"
    stray.write_bytes(b"x")
    fs.calls.clear()
    result = store.save(conv)
    assert result.action == "written"
    assert not stray.exists()
    fs.calls.clear()
    assert store.save(conv).action == "unchanged" and fs.calls == []


def test_damaged_image_file_is_rewritten(tmp_path):
    store, _ = _store(tmp_path)
    conv = Conversation(conversation(2))
    store.save(conv)
    image = next((tmp_path / "agent" / "images").iterdir())
    good = image.read_bytes()
    image.write_bytes(b"garbage!" + good[8:])
    ArchiveStore(tmp_path / "agent").save(conv)
    assert image.read_bytes() == good


def test_keep_conversation_off_deletes_folder_and_restores_nothing(tmp_path):
    keep = {"on": True}
    store = ArchiveStore(tmp_path / "agent", keep_conversation=lambda: keep["on"])
    edits = []
    conv = store.open(on_edited=lambda: edits.append(1))
    conv.end_turn(messages=turn(0), provider="p", model="m")
    assert edits == [1]
    store.save(conv)
    keep["on"] = False
    conv.rate("a0", "good")
    assert edits == [1]  # changes do not mark the document edited while off
    assert store.open().state == ConversationState()
    assert store.save(conv).action == "deleted"
    assert not (tmp_path / "agent").exists()
    keep["on"] = True  # read at every save
    assert store.save(conv).action == "written"


def test_keep_conversation_off_deletes_even_an_unreadable_folder(tmp_path):
    folder = _unreadable_folder(tmp_path)
    store = ArchiveStore(folder, keep_conversation=True)
    conv = store.open()
    assert conv.keeps_unreadable
    store_off = ArchiveStore(folder, keep_conversation=False)
    result = store_off.save(conv)
    assert result.action == "deleted"
    assert not (folder / "conversation.json").exists()
    assert result.kept == ("images/keep.bin", "notes.txt")
    (folder / "notes.txt").unlink()
    (folder / "images" / "keep.bin").unlink()
    (folder / "conversation.json").write_bytes(b"{broken")
    assert store_off.save(conv).action == "deleted"
    assert not folder.exists()


def test_every_change_marks_edited_and_restoring_does_not(tmp_path):
    store = ArchiveStore(tmp_path / "agent")
    Conversation(conversation(3))
    store.save(Conversation(conversation(3)))
    edits = []
    conv = store.open(on_edited=lambda: edits.append(1))
    assert edits == [] and not conv.edited
    item = Item.make(id="q", type="questions", questions=["a?"])
    changes = [
        lambda: conv.end_turn(
            messages=turn(5),
            provider="p",
            model="m",
            items=[item],
            rounds=[(Usage(input=5), Cost(kind="reported", dollars=0.1))],
        ),
        lambda: conv.rate("q", "bad", ["wrong"]),
        lambda: conv.set_card("skill", "q", {"state": "accepted"}),
        lambda: conv.set_card("lintRule", "q", "dismissed"),
        lambda: conv.set_card("approval", "q", True),
        lambda: conv.resolve_card("q"),
        lambda: conv.set_queued(["next"]),
        lambda: conv.set_unsent(["back"]),
        lambda: conv.compact(
            summary=Message.user("# Conversation so far\n..."),
            keep_from=8,
            notice=Item.make(id="n", type="notice", text="compacted"),
            kept_turn_starts=[1, 5],
        ),
        lambda: conv.new_conversation(),
    ]
    for index, change in enumerate(changes, start=1):
        change()
        assert len(edits) == index
    assert conv.edited


def test_state_changes_are_saved(tmp_path):
    store = ArchiveStore(tmp_path / "agent")
    conv = Conversation(conversation(2))
    conv.set_card("skill", "u0", {"state": "accepted", "n": [1, 2]})
    conv.rate("a1", "good", ["fast"])
    conv.resolve_card("u0")
    conv.set_queued(["one", "two"])
    conv.end_turn(
        messages=turn(2),
        provider="openai-chat",
        model="gpt",
        rounds=[(Usage(input=3, output=1), Cost(kind="reported", dollars=0.5))],
    )
    store.save(conv)
    back = store.load().state
    assert back == conv.state
    doc = json.loads((tmp_path / "agent" / "conversation.json").read_bytes())
    assert doc["skillCards"] == {"u0": {"n": [1, 2], "state": "accepted"}}
    assert doc["provider"] == "openai-chat"
    assert doc["estimatedCost"] == {"dollars": 1.0, "kind": "estimated"}


def test_fixture_folder_opens_and_resaves_to_fixed_point(tmp_path):
    folder = tmp_path / "agent"
    folder.mkdir()
    shutil.copy(FIXTURE, folder / "conversation.json")
    store = ArchiveStore(folder)
    conv = store.open()
    # Its one notice: two images are omitted (one imageOmitted block, one image with no file).
    assert [n.message[:45] for n in conv.notices] == [
        "2 of the saved conversation's images were omi"
    ]
    conv.set_unsent(["x"])
    conv.set_unsent([])
    store.save(conv)
    once = (folder / "conversation.json").read_bytes()
    assert once == encode(store.load().state)
    assert ArchiveStore(folder).save(ArchiveStore(folder).open()).action == "unchanged"


def test_turn_facts_persist_so_reopened_turn_sends_the_same_sections(tmp_path):
    store = ArchiveStore(tmp_path / "agent")
    conv = Conversation()
    sections = [
        Section(name="This turn", text="# This turn\nA"),
        Section(name="Design", text="# Design\nX"),
    ]
    plan = conv.plan_turn(sections)
    assert [s.name for s in plan.send] == ["This turn", "Design"]
    conv.end_turn(messages=turn(0), provider="p", model="m", sent_facts=plan.facts)
    store.save(conv)
    following = [
        Section(name="This turn", text="# This turn\nB"),
        Section(name="Design", text="# Design\nX"),
    ]
    live = conv.plan_turn(following)
    reopened = store.open().plan_turn(following)
    assert live == reopened
    assert [s.name for s in live.send] == ["This turn"]


@pytest.mark.parametrize("turns", [2, 120])
def test_a_saves_version_is_the_sha256_of_the_file_it_wrote(tmp_path, turns):
    # 120 turns of 8 KiB tool results make a file over 1 MiB, hashed while it is written
    import hashlib

    state = conversation(turns, image_every=0)
    big = ConversationState(
        provider=state.provider,
        model=state.model,
        history=tuple(
            m for index in range(turns) for m in turn(index, result=b'"' + b"x" * 8192 + b'"')
        ),
    )
    store = ArchiveStore(tmp_path / "agent")
    result = store.write(big)
    data = (tmp_path / "agent" / "conversation.json").read_bytes()
    assert (len(data) >= 1 << 20) == (turns == 120)
    assert result.action == "written"
    assert result.version == hashlib.sha256(data).hexdigest()
    again = store.write(big)
    assert (again.action, again.version) == ("unchanged", result.version)


def test_a_new_image_is_durable_before_the_commit_and_shares_the_files_fsync(tmp_path):
    # SPEC A9: images first. The image is renamed into place with its write-back started,
    # conversation.json's temporary file is fsynced, then the image and images/ (a journaling
    # file system committed them with the file), and only then is the file renamed.
    calls: list[tuple[str, str]] = []

    class Recording(FileSystem):
        def __getattribute__(self, name: str) -> Any:
            attr = super().__getattribute__(name)
            if name not in MUTATING and name != "start_writeback":
                return attr

            def call(*args: Any) -> Any:
                where = args[-1] if isinstance(args[-1], Path) else args[0]
                calls.append((name, where.name if isinstance(where, Path) else "fd"))
                return attr(*args)

            return call

    store = ArchiveStore(tmp_path / "agent")
    conv = Conversation(conversation(2))
    store.save(conv)
    conv.end_turn(messages=turn(9, image=png(b"new image")), provider="a", model="m")
    store.fs = Recording()
    store.save(conv)
    names = [name for name, _ in calls]
    image = next(where for name, where in calls if name == "fsync_file")
    assert image.endswith(".png") and names.count("fsync_file") == 1
    assert "fsync" in names and names.count("fsync") == 1  # conversation.json's only
    commit = calls.index(("rename", "conversation.json"))
    assert names.index("start_writeback") < names.index("fsync") < names.index("fsync_file")
    assert names.index("fsync_file") < calls.index(("fsync_dir", "images")) < commit
    assert calls.index(("rename", image)) < names.index("fsync")  # one commit carries both
