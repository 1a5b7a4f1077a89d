"""``llmcore verify`` on a tester's bad archives: one line on stderr, exit 2, nothing touched."""

from __future__ import annotations

import json
import os

import pytest

from llmcore.archive import ArchiveStore, Conversation
from llmcore.cli.verify import verify_command
from tests.archive.helpers import conversation, snapshot


@pytest.fixture
def archive(tmp_path):
    folder = tmp_path / "agent"
    ArchiveStore(folder).save(Conversation(conversation(2)))
    return folder


def _one_line(capsys):
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and captured.err.startswith("llmcore: ")
    return captured.err.strip()


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("x" * 300, "File name too long"),
        ("loop/agent", "Too many levels of symbolic links"),
    ],
)
def test_verify_of_an_unusable_path_is_one_line(tmp_path, capsys, path, expected):
    os.symlink("loop", tmp_path / "loop")
    assert verify_command(tmp_path / path, None, None) == 2
    err = _one_line(capsys)
    assert err.startswith("llmcore: cannot verify: ") and expected in err


def test_verify_of_a_symlinked_archive_folder_names_the_link(tmp_path, archive, capsys):
    link = tmp_path / "link"
    os.symlink(archive, link)
    before = snapshot(archive)
    assert verify_command(link, None, None) == 2
    assert _one_line(capsys) == (
        f"llmcore: cannot verify: {link}: the archive folder is a symbolic link; "
        "llmcore does not follow links"
    )
    assert snapshot(archive) == before


def test_verify_of_an_archive_naming_an_unknown_provider_says_it_comes_from_the_archive(
    archive, capsys
):
    path = archive / "conversation.json"
    doc = json.loads(path.read_bytes())
    doc["provider"] = "acme-llm"
    path.write_text(json.dumps(doc))
    assert verify_command(archive, None, None) == 2
    err = _one_line(capsys)
    assert err.startswith(f"llmcore: {path}: $.provider: the archive names provider 'acme-llm'")
    assert "pass --provider (one of anthropic" in err
    # --provider overrides the archive's name
    assert verify_command(archive, None, "anthropic") == 0


def test_verify_of_an_archive_naming_no_provider_points_at_the_file(archive, capsys):
    path = archive / "conversation.json"
    doc = json.loads(path.read_bytes())
    doc["provider"] = ""
    path.write_text(json.dumps(doc))
    assert verify_command(archive, None, None) == 2
    assert _one_line(capsys) == (f"llmcore: {path}: the archive names no provider; pass --provider")
