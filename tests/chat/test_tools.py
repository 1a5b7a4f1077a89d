"""The chat's workspace tools stay inside the workspace (SPEC S6)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from llmcore.chat import WorkspaceTools, status_line
from llmcore.emulator import AGENT_TOOLS
from llmcore.usage import Cost, Usage


@pytest.fixture
def tools(tmp_path: Path) -> WorkspaceTools:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "a.py").write_bytes(b"print('a')\n")
    (ws / ".git").mkdir()
    (ws / ".git" / "HEAD").write_text("ref\n")
    (tmp_path / "secret.txt").write_text("outside\n")
    return WorkspaceTools(ws)


def test_the_tools_are_the_agent_scripts_four_in_order(tools: WorkspaceTools) -> None:
    assert [t.tool.name for t in tools.function_tools()] == [t.name for t in AGENT_TOOLS]


def test_list_read_write_round_trip(tools: WorkspaceTools) -> None:
    assert tools.call("list_files", {}).content == "src/a.py\t11\n"
    assert tools.call("read_file", {"path": "src/a.py"}).content == b"print('a')\n"
    out = tools.call("write_file", {"path": "notes/new/b.md", "content": "café"})
    assert out.content == "wrote 5 bytes to notes/new/b.md" and not out.is_error
    assert (tools.workspace / "notes/new/b.md").read_text("utf-8") == "café"
    assert tools.touched == {"src/a.py", "notes/new/b.md"}


@pytest.mark.parametrize("path", ["../secret.txt", "/etc/passwd", "src/../../secret.txt", ""])
def test_paths_leaving_the_workspace_are_refused(tools: WorkspaceTools, path: str) -> None:
    for name, extra in (("read_file", {}), ("write_file", {"content": "x"})):
        out = tools.call(name, {"path": path, **extra})
        assert out.is_error
    assert (tools.workspace.parent / "secret.txt").read_text() == "outside\n"


def test_symlinks_are_never_followed(tools: WorkspaceTools) -> None:
    ws = tools.workspace
    os.symlink(ws.parent / "secret.txt", ws / "link.txt")
    os.symlink(ws.parent, ws / "up")
    assert tools.call("read_file", {"path": "link.txt"}).is_error
    assert tools.call("read_file", {"path": "up/secret.txt"}).is_error
    assert tools.call("write_file", {"path": "link.txt", "content": "x"}).is_error
    assert tools.call("write_file", {"path": "up/secret.txt", "content": "x"}).is_error
    assert (ws.parent / "secret.txt").read_text() == "outside\n"
    assert "link.txt" not in tools.call("list_files", {}).content


def test_view_image_attaches_a_png_and_refuses_text(tools: WorkspaceTools) -> None:
    (tools.workspace / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 8)
    out = tools.call("view_image", {"path": "logo.png"})
    assert out.content == "attached logo.png (image/png, 16 bytes)"
    assert out.images[0].mime_type == "image/png"
    assert tools.call("view_image", {"path": "src/a.py"}).is_error


def test_bad_arguments_are_error_results(tools: WorkspaceTools) -> None:
    assert tools.call("read_file", {}).is_error
    assert tools.call("write_file", {"path": "x"}).is_error


def test_status_line_gives_tokens_hit_rate_and_cost() -> None:
    rounds = [
        (
            Usage(input=100, cache_read=300, cache_write=100, output=7),
            Cost(kind="estimated", dollars=0.01),
        ),
        (Usage(input=0, cache_read=500, output=3), Cost(kind="estimated", dollars=0.0025)),
    ]
    assert status_line(2, rounds) == (
        "turn 2 · 2 requests · input 100 · cache read 800 · cache write 100 · output 10 · "
        "hit rate 80.0% · $0.0125"
    )
