"""Regressions from a tester's bad folders: odd paths, symlinks, foreign files (SPEC A8–A12).

llmcore removes only what it created; opening never raises; a save that cannot be made raises
ArchiveWriteError and leaves everything as it was.
"""

from __future__ import annotations

import os

import pytest

from llmcore.archive import ArchiveStore, Conversation, ConversationState
from llmcore.errors import ArchiveWriteError

from .helpers import CountingFS, conversation, snapshot, turn

LONG = "x" * 300
"""A path component longer than NAME_MAX (255): ENAMETOOLONG."""


def _saved(folder):
    ArchiveStore(folder).save(Conversation(conversation(2)))
    return snapshot(folder)


# -------------------------------------------------------------------- odd paths (item 2)


@pytest.mark.parametrize("kind", ["too_long", "symlink_loop"])
def test_load_of_an_unusable_path_is_one_notice_not_an_oserror(tmp_path, kind):
    if kind == "too_long":
        folder = tmp_path / LONG / "agent"
    else:
        os.symlink("loop", tmp_path / "loop")
        folder = tmp_path / "loop" / "agent"
    store = ArchiveStore(folder)
    loaded = store.load()
    assert loaded.state == ConversationState()
    assert loaded.notice is not None
    expected = "File name too long" if kind == "too_long" else "Too many levels of symbolic links"
    assert expected in loaded.notice.reason
    conv = store.open()
    assert len(conv.notices) == 1 and conv.keeps_unreadable
    assert store.save(conv).action == "kept_unreadable"


@pytest.mark.parametrize("folder", [LONG, f"{LONG}/agent"])
def test_write_with_a_name_too_long_raises_archive_write_error(tmp_path, folder):
    store = ArchiveStore(tmp_path / folder)
    with pytest.raises(ArchiveWriteError) as info:
        store.write(conversation(2))
    assert "File name too long" in str(info.value)
    assert "previous archive is unchanged" in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_delete_with_a_name_too_long_raises_archive_write_error(tmp_path):
    store = ArchiveStore(tmp_path / LONG, keep_conversation=False)
    with pytest.raises(ArchiveWriteError, match="File name too long"):
        store.save(Conversation(conversation(1)))


# ----------------------------------------------------------------- symlinks (item 3)


def test_symlinked_archive_folder_is_refused_by_load_save_and_delete(tmp_path):
    real = tmp_path / "real"
    before = _saved(real)
    link = tmp_path / "agent"
    os.symlink(real, link)
    store = ArchiveStore(link)
    loaded = store.load()
    assert loaded.state == ConversationState()
    assert loaded.notice is not None
    assert loaded.notice.reason == (
        f"{link}: the archive folder is a symbolic link; llmcore does not follow links"
    )
    conv = store.open()
    assert conv.keeps_unreadable and len(conv.notices) == 1
    assert store.save(conv).action == "kept_unreadable"
    conv.end_turn(messages=turn(9), provider="anthropic", model="m")
    with pytest.raises(ArchiveWriteError) as info:
        store.save(conv)
    assert str(info.value) == (
        f"{link}: the archive folder is a symbolic link; llmcore does not follow links; "
        "nothing was saved and nothing was changed"
    )
    off = ArchiveStore(link, keep_conversation=False).save(conv)
    assert off.action == "nothing"
    assert off.problems == (
        f"{link}: the archive folder is a symbolic link; llmcore does not follow links; "
        "not deleted",
    )
    assert os.path.islink(link) and snapshot(real) == before


def test_a_file_in_place_of_the_folder_is_refused(tmp_path):
    folder = tmp_path / "agent"
    folder.write_bytes(b"mine")
    store = ArchiveStore(folder)
    conv = store.open()
    assert "not a folder" in conv.notices[0].reason
    with pytest.raises(ArchiveWriteError, match="not a folder"):
        store.write(conversation(1))
    assert folder.read_bytes() == b"mine"


def test_symlinked_conversation_json_is_named_and_never_read(tmp_path):
    folder = tmp_path / "agent"
    folder.mkdir()
    target = tmp_path / "elsewhere.json"
    target.write_bytes(b"secret")
    os.symlink(target, folder / "conversation.json")
    loaded = ArchiveStore(folder).load()
    assert loaded.notice is not None
    assert "conversation.json is a symbolic link" in loaded.notice.reason


def test_symlinked_images_folder_reads_omitted_and_is_not_written_into(tmp_path):
    folder = tmp_path / "agent"
    _saved(folder)
    (folder / "images").rename(tmp_path / "outside")
    os.symlink(tmp_path / "outside", folder / "images")
    state = ArchiveStore(folder).load().state
    assert state.history and not any(
        type(block).__name__ == "Image" for m in state.history for block in m.content
    )
    with pytest.raises(ArchiveWriteError, match="images is a symbolic link"):
        ArchiveStore(folder).write(conversation(2))
    assert os.path.islink(folder / "images")


def test_conversation_json_that_is_a_folder_is_refused_not_deleted(tmp_path):
    folder = tmp_path / "agent"
    (folder / "conversation.json").mkdir(parents=True)
    (folder / "conversation.json" / "mine.txt").write_bytes(b"keep")
    store = ArchiveStore(folder)
    conv = store.open()
    assert len(conv.notices) == 1
    conv.end_turn(messages=turn(0), provider="anthropic", model="m")
    with pytest.raises(ArchiveWriteError, match="conversation.json is a folder"):
        store.save(conv)
    assert snapshot(folder) == {"conversation.json/": b"", "conversation.json/mine.txt": b"keep"}


# ------------------------------------------------------- foreign files are kept (item 4)


def _foreign(folder):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "README.txt").write_bytes(b"my notes")
    (folder / "sub" / "deep").mkdir(parents=True)
    (folder / "sub" / "deep" / "file.bin").write_bytes(b"\x00\x01")
    (folder / ".hidden").write_bytes(b"h")
    (folder / "images").mkdir(exist_ok=True)
    (folder / "images" / "photo.png").write_bytes(b"not an llmcore name")
    (folder / "images" / ("AB" * 32 + ".png")).write_bytes(b"uppercase: not llmcore's")
    (folder / "images" / ("ab" * 32 + ".png")).mkdir()  # a folder with an image's name
    (folder / ".conversation.json.tmp").write_bytes(b"not the temp pattern")


FOREIGN = {
    "README.txt": b"my notes",
    "sub/": b"",
    "sub/deep/": b"",
    "sub/deep/file.bin": b"\x00\x01",
    ".hidden": b"h",
    "images/photo.png": b"not an llmcore name",
    "images/" + "AB" * 32 + ".png": b"uppercase: not llmcore's",
    "images/" + "ab" * 32 + ".png/": b"",
    ".conversation.json.tmp": b"not the temp pattern",
}


def test_save_into_a_folder_of_foreign_files_without_conversation_json_keeps_them(tmp_path):
    folder = tmp_path / "agent"
    _foreign(folder)
    store = ArchiveStore(folder)
    assert store.load().notice is None
    conv = Conversation(conversation(2))
    assert store.save(conv).action == "written"
    after = snapshot(folder)
    for name, data in FOREIGN.items():
        assert after[name] == data, name
    assert "conversation.json" in after
    fs = CountingFS()
    assert ArchiveStore(folder, fs=fs).save(conv).action == "unchanged"
    assert fs.calls == []  # foreign files are no leftovers: nothing to clean


def test_save_removes_only_llmcore_temporaries_and_unreferenced_images(tmp_path):
    folder = tmp_path / "agent"
    _saved(folder)
    _foreign(folder)
    stale = folder / "images" / ("cd" * 32 + ".jpg")
    stale.write_bytes(b"an image no longer referenced")
    temp = folder / "images" / f".{'cd' * 32}.webp.12-0badf00d.tmp"
    temp.write_bytes(b"partial")
    doc_temp = folder / ".conversation.json.12-0badf00d.tmp"
    doc_temp.write_bytes(b"partial")
    store = ArchiveStore(folder)
    conv = Conversation(conversation(3))
    assert store.save(conv).action == "written"
    assert not stale.exists() and not temp.exists() and not doc_temp.exists()
    after = snapshot(folder)
    for name, data in FOREIGN.items():
        assert after[name] == data, name


@pytest.mark.parametrize("how", ["keep_off", "new_conversation"])
def test_deleting_the_archive_keeps_foreign_files_and_reports_them(tmp_path, how):
    folder = tmp_path / "agent"
    _saved(folder)
    _foreign(folder)
    store = ArchiveStore(folder, keep_conversation=how != "keep_off")
    conv = store.open()
    if how == "new_conversation":
        conv.new_conversation()
    result = store.save(conv)
    assert result.action == "deleted" and result.problems == ()
    assert result.kept == (
        ".conversation.json.tmp",
        ".hidden",
        "README.txt",
        "images/" + "AB" * 32 + ".png",
        "images/" + "ab" * 32 + ".png",
        "images/photo.png",
        "sub",
    )
    assert snapshot(folder) == {"images/": b"", **FOREIGN}


def test_deleting_an_archive_of_only_llmcore_files_removes_the_folder(tmp_path):
    folder = tmp_path / "agent"
    _saved(folder)
    (folder / ".conversation.json.1-abc.tmp").write_bytes(b"partial")
    result = ArchiveStore(folder, keep_conversation=False).save(Conversation())
    assert result.action == "deleted" and result.kept == ()
    assert not folder.exists()
