"""Junk in the sessions folder never stops the agent (SPEC S2, S6): each junk file is one line,
is left as it is, and a new session starts (or the valid one is still offered)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmcore.errors import SessionReadError, SessionWriteError
from llmcore.session import ProjectPaths, SessionStore
from llmcore.session.startup import process_alive

from .test_session import Replies, Terminal, _turn

DEEP = b"[" * 100_000


@pytest.fixture
def terminal(workspace, config, clock, ids):
    return Terminal(workspace, config, clock, ids)


def _sessions(terminal: Terminal) -> Path:
    paths = ProjectPaths.for_workspace(terminal.workspace, app="agent", config=terminal.config)
    paths.sessions.mkdir(parents=True, exist_ok=True, mode=0o700)
    return paths.sessions


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("active_1180591620717411303424.json", b'{"session_id": "aaaaaaaaaaaa"}'),
        ("active_\u00b2.json", b'{"session_id": "aaaaaaaaaaaa"}'),
        ("active_007.json", b'{"session_id": "aaaaaaaaaaaa"}'),
        ("active_4198625.json", DEEP),
    ],
    ids=["25-digit pid", "superscript two", "leading zero", "nested 100000 deep"],
)
def test_a_junk_pointer_is_one_line_kept_and_a_new_session_starts(terminal, name, data):
    junk = _sessions(terminal) / name
    junk.write_bytes(data)
    session = terminal.start()
    assert len(terminal.said) == 1 and "\n" not in terminal.said[0]
    assert "Ignored" in terminal.said[0]
    assert session.resume_block == "" and junk.read_bytes() == data


def test_a_session_file_nested_100000_deep_is_one_line_and_a_new_session(terminal):
    sessions = _sessions(terminal)
    (sessions / "active_4198625.json").write_text('{"session_id": "aaaaaaaaaaaa"}')
    (sessions / "aaaaaaaaaaaa.json").write_bytes(DEEP)
    session = terminal.start()
    assert len(terminal.said) == 1 and "nested too deeply" in terminal.said[0]
    assert (
        session.session_id != "aaaaaaaaaaaa"
        and (sessions / "aaaaaaaaaaaa.json").read_bytes() == DEEP
    )


def test_a_pid_beyond_the_platform_is_not_running():
    assert process_alive(1180591620717411303424) is False


def test_a_symlinked_sessions_folder_is_refused_for_reads_as_for_writes(terminal, tmp_path):
    runner_session = terminal.start()
    runner = Replies()
    from llmcore.runner import Runner

    _turn(runner_session, Runner(provider="anthropic", model="m", transport=runner), "x")
    real = runner_session.store.paths.sessions
    moved = tmp_path / "moved-sessions"
    real.rename(moved)
    real.symlink_to(moved)
    before = {p.name: p.read_bytes() for p in moved.iterdir()}
    terminal.said.clear()
    session = terminal.start()
    assert terminal.said == [
        f"Ignored the saved sessions: {real}: refused: the folder is a symlink"
    ]
    assert session.resume_block == "" and session.session_id != runner_session.session_id
    with pytest.raises(SessionWriteError, match="refused: the folder is a symlink"):
        session.record_turn()
    with pytest.raises(SessionReadError, match="refused: the folder is a symlink"):
        session.store.load(runner_session.session_id)
    assert {p.name: p.read_bytes() for p in moved.iterdir()} == before


_NAMES = st.one_of(
    st.builds(lambda m: f"active_{m}.json", st.text(max_size=30)),
    st.builds(lambda n: f"active_{n}.json", st.integers(min_value=-(10**30), max_value=10**30)),
    st.text(min_size=1, max_size=40),
).filter(lambda n: "/" not in n and "\x00" not in n and n not in (".", "..") and len(n) < 200)
_CONTENTS = st.one_of(
    st.binary(max_size=200),
    st.builds(lambda k, c: c * k, st.integers(1, 60_000), st.sampled_from([b"[", b"{", b'{"a":'])),
    st.builds(lambda v: json.dumps({"session_id": v}).encode(), st.text(max_size=20)),
    st.just(b'{"session_id": "aaaaaaaaaaaa"}'),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(junk=st.dictionaries(_NAMES, _CONTENTS, min_size=1, max_size=4))
def test_any_junk_in_the_sessions_folder_is_one_line_and_never_stops_start_up(terminal, junk):
    from llmcore.runner import Runner

    sessions = _sessions(terminal)
    for path in sessions.iterdir():
        path.unlink() if not path.is_dir() or path.is_symlink() else None
    valid = terminal.start()
    _turn(valid, Runner(provider="anthropic", model="m", transport=Replies()), "kept")
    written = {}
    for name, data in junk.items():
        path = sessions / name
        if path.exists():
            continue
        try:
            path.write_bytes(data)
        except OSError:  # a name the file system refuses (too long in bytes)
            continue
        written[name] = data
    terminal.said.clear()
    session = terminal.start()  # never raises
    assert all("\n" not in line for line in terminal.said)
    assert session.resume_block and session.session_id == valid.session_id  # still offered
    for name, data in written.items():
        assert (sessions / name).read_bytes() == data


def test_llmcore_chat_over_every_junk_file_at_once_is_lines_and_a_new_session(tmp_path):
    (tmp_path / "ws").mkdir()
    paths = ProjectPaths.for_workspace(tmp_path / "ws", app="llmcore-chat", config=tmp_path / "cfg")
    paths.sessions.mkdir(parents=True, mode=0o700)
    pointer = b'{"session_id": "aaaaaaaaaaaa"}'
    for name, data in (
        ("active_1180591620717411303424.json", pointer),
        ("active_\u00b2.json", pointer),
        ("active_4198625.json", DEEP),
        ("active_4198626.json", pointer),
        ("aaaaaaaaaaaa.json", DEEP),
    ):
        (paths.sessions / name).write_bytes(data)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    args = [sys.executable, "-m", "llmcore", "chat", "--config-dir", str(tmp_path / "cfg")]
    args += ["--workspace", str(tmp_path / "ws")]
    done = subprocess.run(
        args, input="/checkpoint \u00b2\n/exit\n", capture_output=True, text=True, env=env,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    out = done.stdout
    assert "Ignored 2 files" in out and "that are not pointers" in out
    assert out.count("Ignored a saved session") == 2  # the deep pointer, the deep session file
    assert "New session" in out and "usage: /checkpoint [n]" in out


def test_pointer_scan_refuses_names_that_are_not_a_canonical_pid(config):
    store = SessionStore(ProjectPaths.for_workspace(Path("/x"), app="agent", config=config))
    store.paths.sessions.mkdir(parents=True)
    for name in ("active_12.json", "active_012.json", "active_\u0663.json", "active_2147483648.json",
                 "active_2147483647.json", "active_0.json", "note.txt"):  # fmt: skip
        (store.paths.sessions / name).write_text("{}")
    scan = store.pointer_scan()
    assert scan.pids == (12, 2147483647)
    assert scan.refused == ("active_0.json", "active_012.json", "active_2147483648.json",
                            "active_\u0663.json")  # fmt: skip
