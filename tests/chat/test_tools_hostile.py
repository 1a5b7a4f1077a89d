"""The workspace tools against hostile files and arguments (issue 18 items 1, 2, 3, 8).

Every call returns a result (an error result for what is refused) and never raises, never
blocks, never reads a file whole before checking its size, and never reads or writes a file
outside the workspace through a hard link.
"""

from __future__ import annotations

import os
import stat
import tracemalloc
from pathlib import Path

import pytest

from llmcore.chat import WorkspaceTools
from llmcore.chat.tools import MAX_DEPTH, MAX_READ
from llmcore.runner import ToolOutput
from tests.special_files import (
    finishes,
    make_deep_tree,
    make_fifo,
    make_null_device,
    make_sparse,
    remove_deep_tree,
    unix_socket,
)

SECRET = b"outside secret\n"


@pytest.fixture
def tools(tmp_path: Path) -> WorkspaceTools:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_bytes(b"a\n")
    (tmp_path / "secret.txt").write_bytes(SECRET)
    return WorkspaceTools(ws)


def _call(tools: WorkspaceTools, name: str, fifos: tuple[Path, ...] = (), **args) -> ToolOutput:
    out = finishes(lambda: tools.call(name, args), fifos=fifos)
    assert isinstance(out, ToolOutput)
    return out


# --- item 1: bounded reads ---------------------------------------------------------------------


@pytest.mark.parametrize("tool", ["read_file", "view_image"])
def test_a_file_over_the_limit_is_refused_by_its_size_before_it_is_read(tools, tool):
    make_sparse(tools.workspace / "big.bin", 64 * 1024 * 1024)
    tracemalloc.start()
    try:
        out = _call(tools, tool, path="big.bin")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out.is_error
    assert out.content == (
        "refused: big.bin: it is 67,108,864 bytes, over the 1,048,576-byte limit"
    )
    assert peak < 1 << 20  # the old code read all 64 MiB first
    assert "big.bin" not in tools.touched


def test_a_file_at_the_limit_is_read(tools):
    (tools.workspace / "edge.txt").write_bytes(b"x" * MAX_READ)
    out = _call(tools, "read_file", path="edge.txt")
    assert not out.is_error and out.content == b"x" * MAX_READ


# --- item 2: FIFOs, sockets, devices -----------------------------------------------------------


def test_write_file_onto_a_fifo_is_refused_and_does_not_block(tools):
    fifo = make_fifo(tools.workspace / "pipe")
    # A reader holds the FIFO open, so the old code's open for writing returned and wrote into
    # it (without a reader it blocked forever, until the turn was killed).
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        out = _call(tools, "write_file", fifos=(fifo,), path="pipe", content="data")
        assert out.is_error
        assert out.content == (
            "refused: pipe: it is a FIFO (named pipe); write_file replaces only regular files"
        )
        assert os.read(reader, 10) == b""  # nothing was written into it (no writer: EOF)
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    out = _call(tools, "write_file", fifos=(fifo,), path="pipe", content="data")  # no reader
    assert out.is_error


def test_read_and_view_refuse_a_fifo_a_socket_and_a_device(tools):
    ws = tools.workspace
    fifo = make_fifo(ws / "pipe")
    has_device = make_null_device(ws / "null")
    with unix_socket(ws / "sock"):
        for tool in ("read_file", "view_image"):
            for name, kind in (("pipe", "a FIFO"), ("sock", "a socket"), ("null", "a character")):
                if name == "null" and not has_device:
                    continue
                out = _call(tools, tool, fifos=(fifo,), path=name)
                assert out.is_error and f"refused: {name}: it is {kind}" in str(out.content)
                out = _call(tools, "write_file", fifos=(fifo,), path=name, content="x")
                assert out.is_error and f"it is {kind}" in str(out.content)
        listing = _call(tools, "list_files").content
    assert listing == "a.txt\t2\n"


# --- item 3: hard links ------------------------------------------------------------------------


def test_a_hard_link_to_an_outside_file_is_neither_read_nor_written_through(tools):
    secret = tools.workspace.parent / "secret.txt"
    os.link(secret, tools.workspace / "link.txt")
    for tool in ("read_file", "view_image"):
        out = _call(tools, tool, path="link.txt")
        assert out.is_error
        assert out.content.startswith("refused: link.txt: it has 2 hard links")
        assert SECRET not in str(out.content).encode()
    out = _call(tools, "write_file", path="link.txt", content="mine")
    assert not out.is_error
    assert secret.read_bytes() == SECRET  # the old code wrote through the link
    link = tools.workspace / "link.txt"
    assert link.read_bytes() == b"mine" and os.lstat(link).st_nlink == 1
    assert os.lstat(secret).st_nlink == 1
    assert _call(tools, "read_file", path="link.txt").content == b"mine"


def test_write_file_replaces_by_rename_and_keeps_the_mode(tools):
    target = tools.workspace / "a.txt"
    os.chmod(target, 0o640)
    before = os.lstat(target).st_ino
    out = _call(tools, "write_file", path="a.txt", content="new")
    assert out.content == "wrote 3 bytes to a.txt"
    info = os.lstat(target)
    assert info.st_ino != before and stat.S_IMODE(info.st_mode) == 0o640
    assert sorted(os.listdir(tools.workspace)) == ["a.txt"]  # no temporary file left


def test_write_file_onto_a_folder_or_symlink_is_refused(tools):
    (tools.workspace / "dir").mkdir()
    (tools.workspace / "sl").symlink_to(tools.workspace.parent / "secret.txt")
    assert "it is a folder" in _call(tools, "write_file", path="dir", content="x").content
    assert "symbolic link" in _call(tools, "write_file", path="sl", content="x").content
    assert (tools.workspace.parent / "secret.txt").read_bytes() == SECRET
    assert sorted(os.listdir(tools.workspace)) == ["a.txt", "dir", "sl"]


# --- item 8: edge cases are error results ------------------------------------------------------


def test_write_file_with_a_lone_surrogate_is_an_error_result(tools):
    out = _call(tools, "write_file", path="s.txt", content="ok\ud800")
    assert out.is_error
    assert out.content == (
        "cannot write s.txt: the content is not valid text (surrogates not allowed at character 2)"
    )
    assert not (tools.workspace / "s.txt").exists()


def test_a_1200_level_tree_is_listed_to_the_depth_limit_on_every_call(tools):
    make_deep_tree(tools.workspace, 1200)
    try:
        for _ in range(3):  # the old code raised RecursionError on this call and every later one
            out = _call(tools, "list_files")
            assert not out.is_error
            lines = out.content.splitlines()
            assert lines == ["a.txt\t2", f"(1 folders deeper than {MAX_DEPTH} levels not listed)"]
        (tools.workspace / "d" / "x.txt").write_bytes(b"xyz")
        assert "d/x.txt\t3" in _call(tools, "list_files").content
    finally:
        remove_deep_tree(tools.workspace)


def test_a_shallow_deep_file_is_listed_with_its_path(tools):
    make_deep_tree(tools.workspace, MAX_DEPTH)
    try:
        lines = _call(tools, "list_files").content.splitlines()
        assert lines == ["a.txt\t2", "d/" * MAX_DEPTH + "bottom.txt\t0"]
    finally:
        remove_deep_tree(tools.workspace)


def test_a_name_that_is_not_utf8_is_listed_escaped(tools):
    os.close(os.open(os.fsencode(tools.workspace) + b"/caf\xe9.txt", os.O_CREAT | os.O_WRONLY))
    listing = _call(tools, "list_files").content
    assert listing == "a.txt\t2\ncaf\\xe9.txt\t0\n"
    listing.encode("utf-8")  # no surrogate reaches the model


@pytest.mark.parametrize(
    "arguments",
    [
        {"path": "\ud800"},
        {"path": "x" * 5000},
        {"path": "/".join(["d"] * 3000)},
        {"path": "/".join(["d"] * (MAX_DEPTH + 1)) + "/f"},
        {"path": "a.txt/inner"},
        {"path": 5},
        {"path": None},
        {"path": ["a.txt"]},
        {},
    ],
)
@pytest.mark.parametrize("tool", ["read_file", "view_image", "write_file"])
def test_hostile_arguments_are_error_results(tools, tool, arguments):
    out = _call(tools, tool, **arguments, **({"content": "x"} if tool == "write_file" else {}))
    assert out.is_error
    str(out.content).encode("utf-8")
    assert sorted(os.listdir(tools.workspace)) == ["a.txt"]


@pytest.mark.parametrize("arguments", [[], "x", None, 3])
def test_arguments_that_are_not_an_object_are_an_error_result(tools, arguments):
    for tool in ("list_files", "read_file", "write_file", "view_image"):
        out = finishes(lambda tool=tool: tools.call(tool, arguments))
        assert out.is_error and "must be a JSON object" in out.content
