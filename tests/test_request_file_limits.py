"""Request files and standard input are read bounded (issue 18 item 1).

A request file (``llmcore body``, ``import``, ``verify --request``) over
:data:`llmcore.safeio.MAX_FILE` is refused by its size before any byte is read; standard input
is read to at most ``MAX_FILE + 1`` bytes. A symlink named on the command line is still followed.
"""

from __future__ import annotations

import tracemalloc

import pytest
from typer.testing import CliRunner

import llmcore.safeio
from llmcore.cli import app
from llmcore.errors import RequestFileError
from llmcore.requestfile import load_request_file
from tests.special_files import make_sparse

OK = '{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"q"}]}]}'


def test_a_request_file_over_the_limit_is_refused_before_it_is_read(tmp_path):
    path = make_sparse(tmp_path / "r.json", llmcore.safeio.MAX_FILE + 1)
    tracemalloc.start()
    try:
        with pytest.raises(RequestFileError) as err:
            load_request_file(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(err.value) == (
        f"{path}: cannot read the file (it is 67,108,865 bytes, over the 67,108,864-byte limit)"
    )
    assert peak < 1 << 20  # the old code read all 64 MiB, then failed to parse it


@pytest.mark.parametrize("command", ["body", "import"])
def test_the_command_line_says_so_in_one_line(tmp_path, command):
    path = make_sparse(tmp_path / "r.json", llmcore.safeio.MAX_FILE + 1)
    result = CliRunner().invoke(app, [command, str(path), "-p", "anthropic"])
    assert result.exit_code == 2
    assert result.stderr == (
        f"llmcore: {path}: cannot read the file (it is 67,108,865 bytes, over the "
        "67,108,864-byte limit)\n"
    )


def test_standard_input_is_cut_at_the_limit(monkeypatch):
    monkeypatch.setattr(llmcore.safeio, "MAX_FILE", len(OK) - 1)
    result = CliRunner().invoke(app, ["body", "-", "-p", "anthropic"], input=OK)
    assert result.exit_code == 2
    assert result.stderr == (
        f"llmcore: <stdin>: cannot read (it holds more than the {len(OK) - 1}-byte limit)\n"
    )
    monkeypatch.setattr(llmcore.safeio, "MAX_FILE", len(OK))
    assert CliRunner().invoke(app, ["body", "-", "-p", "anthropic"], input=OK).exit_code == 0


def test_a_symlinked_request_file_is_followed(tmp_path):
    (tmp_path / "real.json").write_text(OK)
    (tmp_path / "link.json").symlink_to(tmp_path / "real.json")
    assert load_request_file(tmp_path / "link.json").model == "m"
