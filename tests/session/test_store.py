"""S1/S6 storage: schema 3, atomic 0600/0700 writes, O_NOFOLLOW reads, pointers, conflicts."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from llmcore.errors import SessionConflictError, SessionIdError, SessionReadError
from llmcore.messages import Image, Message, ToolCall, ToolResult
from llmcore.session import ProjectPaths, SessionRecord, SessionStore, decode_record, encode_record
from llmcore.session.store import NO_FILE, atomic_write

from .conftest import FAKE_KEY

ID = "a1b2c3d4e5f6"


def _record(**fields) -> SessionRecord:
    base = {
        "session_id": ID,
        "created_at": "2026-03-30T10:15:00Z",
        "updated_at": "2026-03-31T14:22:00Z",
    }
    return SessionRecord(**{**base, **fields})


def _store(config: Path) -> SessionStore:
    return SessionStore(
        ProjectPaths(sessions=config / "app" / "projects" / "p_00000000" / "sessions")
    )


def test_fields_are_exactly_s1_schema_3_and_round_trip():
    record = _record(
        agent_spec_path="agent_spec.md",
        file_manifest=(("agent_spec.md", "ab" * 32),),
        summary="Did things.",
        decisions=("Chose REST",),
        recent_messages=(
            Message.user("hi"),
            Message.assistant(ToolCall(id="c1", name="read_file", arguments=b'{"path":"a"}')),
            Message.tool(
                ToolResult(call_id="c1", tool_name="read_file", content=b"\xff\x00", is_error=False)
            ),
        ),
        compacted_history_summary="Older work.",
        checkpoint_count=2,
        phase="code",
    )
    data = encode_record(record, environ={})
    obj = json.loads(data)
    assert sorted(obj) == sorted(
        [
            "schema_version",
            "session_id",
            "created_at",
            "updated_at",
            "agent_spec_path",
            "file_manifest",
            "summary",
            "decisions",
            "recent_messages",
            "compacted_history_summary",
            "checkpoint_count",
            "phase",
        ]
    )
    assert obj["schema_version"] == 3
    assert obj["recent_messages"][2]["content"][0]["contentBase64"] == "/wA="  # A3 block format
    assert decode_record(data) == record
    assert encode_record(decode_record(data), environ={}) == data


def test_images_are_stored_as_image_omitted():
    record = _record(
        recent_messages=(
            Message.user("look", Image(data=b"\x89PNG\r\n\x1a\n", mime_type="image/png")),
        )
    )
    obj = json.loads(encode_record(record, environ={}))
    assert obj["recent_messages"][0]["content"][1] == {
        "type": "imageOmitted",
        "mimeType": "image/png",
    }


def test_secrets_and_the_environment_key_are_scrubbed_from_everything_written(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    record = _record(
        summary=f"key {FAKE_KEY}", recent_messages=(Message.user("my token=abcdefgh123 ok"),)
    )
    text = encode_record(record).decode()
    assert FAKE_KEY not in text and "abcdefgh123" not in text


def test_save_is_atomic_with_0600_files_and_0700_folders(config):
    store = _store(config)
    base = store.save(_record(), NO_FILE)
    path = store.paths.session_file(ID)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.paths.sessions.stat().st_mode) == 0o700
    for folder in (store.paths.sessions.parent, store.paths.sessions.parent.parent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    store.write_pointer(4242, ID)
    assert stat.S_IMODE(store.paths.pointer_file(4242).stat().st_mode) == 0o600
    assert [p.name for p in store.paths.sessions.iterdir() if p.name.endswith(".tmp")] == []
    assert store.load(ID).base == base


def test_a_failed_write_leaves_the_old_file_and_no_temporary(config, monkeypatch):
    store = _store(config)
    store.save(_record(summary="old"), NO_FILE)
    before = store.paths.session_file(ID).read_bytes()

    def broken_fsync(fd):
        raise OSError(5, "I/O error")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError):
        atomic_write(store.paths.session_file(ID), b"new")
    assert store.paths.session_file(ID).read_bytes() == before
    assert [p.name for p in store.paths.sessions.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", "not valid JSON"),
        (b'{"schema_version": 4}', "newer than this version reads"),
        (b'{"schema_version": 2}', "cannot be read"),
        (b"[]", "not a JSON object"),
    ],
)
def test_corrupt_or_newer_files_are_refused_in_one_line_and_kept(config, content, message):
    store = _store(config)
    store.paths.sessions.mkdir(parents=True)
    path = store.paths.session_file(ID)
    path.write_bytes(content)
    with pytest.raises(SessionReadError, match=message) as info:
        store.load(ID)
    assert "\n" not in str(info.value)
    assert path.read_bytes() == content


def test_a_symlinked_session_file_is_not_followed(config, tmp_path):
    store = _store(config)
    store.paths.sessions.mkdir(parents=True)
    target = tmp_path / "elsewhere.json"
    target.write_bytes(encode_record(_record(), environ={}))
    os.symlink(target, store.paths.session_file(ID))
    with pytest.raises(SessionReadError):
        store.load(ID)


def test_pointers_are_one_per_pid_and_a_crafted_pointer_is_refused(config):
    store = _store(config)
    store.write_pointer(100, ID)
    store.write_pointer(200, "0123456789ab")
    assert store.pointer_pids() == [100, 200]
    assert store.read_pointer(100) == ID and store.read_pointer(200) == "0123456789ab"
    assert store.read_pointer(300) is None
    store.paths.pointer_file(300).write_text('{"session_id": "../../../etc/passwd"}')
    with pytest.raises(SessionIdError, match="must be 12 lowercase hex digits"):
        store.read_pointer(300)
    store.delete_pointer(100)
    assert store.pointer_pids() == [200, 300]


def test_a_conflicting_save_is_a_typed_error_and_the_other_save_is_kept(config):
    store = _store(config)
    base = store.save(_record(summary="first"), NO_FILE)
    mine, theirs = base, base
    theirs = store.save(_record(summary="theirs"), theirs)
    kept = store.paths.session_file(ID).read_bytes()
    with pytest.raises(SessionConflictError, match="its save is kept"):
        store.save(_record(summary="mine"), mine)
    assert store.paths.session_file(ID).read_bytes() == kept
    assert store.save(_record(summary="mine"), theirs)  # reloaded base: saves


_OTHER_PROCESS = """
import sys
from pathlib import Path
from llmcore.session import ProjectPaths, SessionRecord, SessionStore
store = SessionStore(ProjectPaths(sessions=Path(sys.argv[1])))
loaded = store.load(sys.argv[2])
record = SessionRecord(session_id=sys.argv[2], created_at=loaded.record.created_at,
                       updated_at="2026-04-01T00:00:00Z", summary="saved by the other process")
store.save(record, loaded.base)
store.write_pointer(int(sys.argv[3]), sys.argv[2])
"""


def test_two_processes_saving_one_session_never_lose_a_turn(config):
    store = _store(config)
    base = store.save(_record(summary="start"), NO_FILE)
    subprocess.run(
        [sys.executable, "-c", _OTHER_PROCESS, str(store.paths.sessions), ID, "777"],
        check=True,
        env={**os.environ, "ANTHROPIC_API_KEY": ""},
    )
    theirs = store.paths.session_file(ID).read_bytes()
    with pytest.raises(SessionConflictError):
        store.save(_record(summary="this process"), base)
    assert store.paths.session_file(ID).read_bytes() == theirs
    assert store.read_pointer(777) == ID
