"""S6: session ids are checked before any path is built; manifest paths never leave the workspace."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore.errors import SessionIdError
from llmcore.session import ProjectPaths, check_session_id, safe_relative
from llmcore.session.drift import build_manifest, detect_drift, file_sha256
from llmcore.session.paths import config_root, project_dir_name
from tests.examples import examples

ID = re.compile(r"^[a-f0-9]{12}$")


@pytest.mark.full_count
@settings(max_examples=examples(full=500, sample=150))
@given(st.text(max_size=30) | st.from_regex(r"[a-f0-9]{12}", fullmatch=True))
def test_any_string_not_matching_the_id_regex_is_refused_before_a_path_is_built(value):
    paths = ProjectPaths(sessions=Path("/nonexistent/sessions"))
    if ID.match(value) and len(value) == 12 and "\n" not in value:
        assert paths.session_file(value) == Path(f"/nonexistent/sessions/{value}.json")
        return
    with pytest.raises(SessionIdError):
        paths.session_file(value)
    with pytest.raises(SessionIdError):
        paths.checkpoints_dir(value)


@pytest.mark.parametrize(
    "value", ["../../etc/x", "A1B2C3D4E5F6", "a1b2c3d4e5f", "a1b2c3d4e5f6\n", None, 12]
)
def test_crafted_ids_are_refused_with_a_clear_message(value):
    with pytest.raises(SessionIdError, match="must be 12 lowercase hex digits"):
        check_session_id(value)


def test_project_dir_is_sanitized_name_and_hash8(tmp_path):
    folder = tmp_path / "my proj;ect"
    folder.mkdir()
    name = project_dir_name(folder)
    assert re.fullmatch(r"my_proj_ect_[0-9a-f]{8}", name)
    other = tmp_path / "b" / "my proj;ect"
    other.mkdir(parents=True)
    assert project_dir_name(other) != name  # same name, other path: other project


def test_config_root_is_platformdirs_or_the_override(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert config_root("agent") == tmp_path / "xdg" / "agent"
    assert config_root("agent", tmp_path / "o") == tmp_path / "o" / "agent"
    with pytest.raises(SessionIdError):
        config_root("../up")


@pytest.mark.full_count
@settings(max_examples=examples(full=2000, sample=150))
@given(st.lists(st.sampled_from(["a", "..", ".", "/", "b", "\\", "C:", "\x00"]), max_size=6))
def test_safe_relative_never_keeps_dotdot_or_absolute(parts):
    path = "".join(p if p in ("/",) else p + "/" for p in parts).rstrip("/")
    result = safe_relative(path)
    if result is not None:
        assert not result.is_absolute() and ".." not in result.parts
        assert "\\" not in str(result) and "\x00" not in str(result)


@pytest.fixture
def jail(tmp_path):
    return _make_jail(tmp_path)


@settings(max_examples=200)
@given(
    st.lists(
        st.sampled_from(
            [
                "..",
                ".",
                "outside",
                "secret.txt",
                "link.txt",
                "linkdir",
                "sub",
                "deep.txt",
                "inside.txt",
                "",
            ]
        ),
        min_size=1,
        max_size=5,
    ),
    st.booleans(),
)
def test_manifest_paths_never_read_outside_the_workspace(jail_factory, parts, absolute):
    ws = jail_factory
    path = ("/" if absolute else "") + "/".join(parts)
    digest = file_sha256(ws, path)
    if digest is not None:  # only the one regular file inside, reached without a symlink
        assert safe_relative(path) is not None
        assert Path(ws, str(safe_relative(path))).resolve() == (ws / "inside.txt").resolve()
    assert set(build_manifest(ws, [path])) <= {"inside.txt"}


@pytest.fixture(scope="module")
def jail_factory(tmp_path_factory):
    base = tmp_path_factory.mktemp("jail")
    return _make_jail(base)


def _make_jail(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside")
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "inside.txt").write_text("inside")
    os.symlink(outside / "secret.txt", ws / "link.txt")
    os.symlink(outside, ws / "linkdir")
    os.symlink(outside / "secret.txt", ws / "sub" / "deep.txt")
    return ws


def test_dotdot_and_absolute_manifest_entries_are_skipped_and_symlinks_read_as_deleted(jail):
    manifest = {
        "../outside/secret.txt": "0" * 64,
        "/etc/passwd": "0" * 64,
        "link.txt": "0" * 64,
        "linkdir/secret.txt": "0" * 64,
    }
    drift = detect_drift(jail, manifest)
    assert drift.skipped == ("../outside/secret.txt", "/etc/passwd")
    assert drift.deleted == ("link.txt", "linkdir/secret.txt")
    assert drift.unchanged == 0 and drift.modified == ()
