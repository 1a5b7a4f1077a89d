"""A FIFO, device, socket or huge file in an archive folder never blocks (issue 18 items 1-2).

A FIFO named ``conversation.json`` hung ``ArchiveStore.open``, ``save`` and ``llmcore verify``
(so a CI job verifying a folder it does not control could hang); a character device there gave
an untyped ``MemoryError``. Now each is a notice (open), a typed error (save) or one line and
exit 2 (verify) naming the path, and a file over :data:`llmcore.safeio.MAX_FILE` is refused by
its size before any byte of it is read.
"""

from __future__ import annotations

import os
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from llmcore.archive import ArchiveStore, Conversation
from llmcore.archive.fs import FileSystem
from llmcore.archive.images import image_file_name
from llmcore.cli import app
from llmcore.errors import ArchiveWriteError
from llmcore.safeio import MAX_FILE
from tests.special_files import finishes, make_fifo, make_null_device, make_sparse, unix_socket

from .helpers import conversation, snapshot, turn

KINDS = ("fifo", "device", "socket")
WORDS = {"fifo": "a FIFO (named pipe)", "device": "a character device", "socket": "a socket"}


@pytest.fixture(params=KINDS)
def placed(request, tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """An archive folder whose ``conversation.json`` is a FIFO, a device or a socket."""
    folder = tmp_path / "archive"
    folder.mkdir()
    target = folder / "conversation.json"
    if request.param == "fifo":
        make_fifo(target)
    elif request.param == "device":
        if not make_null_device(target):
            pytest.skip("this user may not create device nodes")
    else:
        with unix_socket(target):
            yield folder, request.param
        return
    yield folder, request.param


def test_open_gives_a_notice_naming_the_path_and_the_kind(placed):
    folder, kind = placed
    store = ArchiveStore(folder)
    fifo = (folder / "conversation.json",)
    opened = finishes(store.open, fifos=fifo)
    assert opened.state.is_empty
    (notice,) = opened.notices
    assert notice.reason == (
        f"{folder / 'conversation.json'}: cannot read the archive (it is {WORDS[kind]}, "
        "not a regular file)"
    )
    assert finishes(lambda: store.save(opened), fifos=fifo).action == "kept_unreadable"


def test_a_save_over_it_is_a_typed_error_and_leaves_it(placed):
    folder, kind = placed
    store = ArchiveStore(folder)
    fresh = Conversation(conversation(2, image_every=0))
    with pytest.raises(ArchiveWriteError) as err:
        finishes(lambda: store.save(fresh), fifos=(folder / "conversation.json",))
    assert f"conversation.json is {WORDS[kind]} llmcore did not create" in str(err.value)
    assert err.value.location == str(folder)
    assert not (folder / "conversation.json").is_file()


def test_verify_is_one_line_and_exit_2(placed):
    folder, kind = placed
    result = finishes(
        lambda: CliRunner().invoke(app, ["verify", str(folder)]),
        fifos=(folder / "conversation.json",),
    )
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stderr == (
        f"llmcore: cannot verify: {folder / 'conversation.json'}: cannot read the archive "
        f"(it is {WORDS[kind]}, not a regular file)\n"
    )


def _peak(call):
    tracemalloc.start()
    try:
        return finishes(call), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_conversation_json_over_the_limit_is_refused_without_being_read(tmp_path):
    folder = tmp_path / "archive"
    folder.mkdir()
    make_sparse(folder / "conversation.json", MAX_FILE + 1)
    loaded, peak = _peak(ArchiveStore(folder).load)
    assert loaded.notice is not None
    assert loaded.notice.reason.endswith(
        "conversation.json: cannot read the archive (it is 67,108,865 bytes, over the "
        "67,108,864-byte limit)"
    )
    assert peak < 2 << 20  # the old code read all of it first
    result = CliRunner().invoke(app, ["verify", str(folder)])
    assert result.exit_code == 2 and "over the 67,108,864-byte limit" in result.stderr


def test_an_image_file_over_the_limit_is_unread_not_read(tmp_path):
    folder = tmp_path / "archive"
    state = conversation(2, image_every=1)
    ArchiveStore(folder).write(state)
    names = sorted(os.listdir(folder / "images"))
    assert names
    first = folder / "images" / names[0]
    first.unlink()
    make_sparse(first, MAX_FILE + 1)
    loaded, peak = _peak(ArchiveStore(folder).load)
    assert loaded.image_notice is not None
    assert f"{first}: it is 67,108,865 bytes, over the" in loaded.image_notice.reason
    assert peak < 2 << 20
    assert names[0] in {image_file_name(i.sha256, i.mime_type) for i in _images(state)}


def _images(state):
    from llmcore.messages import Image

    return [part for m in state.history for part in m.content if isinstance(part, Image)]


def test_a_save_over_the_read_limit_is_refused_and_the_archive_stands(tmp_path):
    # A save used to write a conversation.json no open could read back: the next open was an
    # empty conversation with a notice and every later save an ArchiveWriteError.
    class Small(FileSystem):
        read_limit = 64 * 1024

    folder = tmp_path / "agent"
    store = ArchiveStore(folder, fs=Small())
    conv = store.open()
    conv.end_turn(messages=turn(1), provider="a", model="m")
    store.save(conv)
    before = snapshot(folder)
    conv.end_turn(messages=turn(2, result=b"y" * (64 * 1024)), provider="a", model="m")
    with pytest.raises(ArchiveWriteError, match=r"over the 65,536 bytes an open reads") as err:
        store.save(conv)
    assert err.value.location == str(folder)
    assert snapshot(folder) == before
    assert len(ArchiveStore(folder, fs=Small()).load().state.history) == 4
