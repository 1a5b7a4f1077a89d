from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from llmcore import jsonbytes
from llmcore.archive import ArchiveStore, Conversation, encode
from llmcore.cli.verify import register, report, verify_archive, verify_command
from llmcore.providers import PROVIDER_NAMES

from .helpers import conversation, snapshot


@pytest.fixture
def archive(tmp_path):
    folder = tmp_path / "agent"
    ArchiveStore(folder).save(Conversation(conversation(3)))
    return folder


def test_verify_prints_ok_for_an_archive_saved_by_llmcore(archive, capsys):
    before = snapshot(archive)
    assert verify_command(archive, None, None) == 0
    out = capsys.readouterr()
    assert out.out.startswith("OK: ") and "(anthropic, claude-opus-5-5)" in out.out
    assert out.err == ""
    assert snapshot(archive) == before


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_verify_every_provider(archive, provider, capsys):
    assert verify_command(archive, None, provider) == 0
    assert f"({provider}, claude-opus-5-5)" in capsys.readouterr().out


def test_verify_with_a_request_file_appends_its_messages(archive, tmp_path, capsys):
    request = tmp_path / "request.json"
    request.write_text(
        json.dumps(
            {
                "model": "claude-sonnet-4-5",
                "system": "You design posters.",
                "tools": [
                    {
                        "name": "batch_design",
                        "description": "Edit",
                        "inputSchema": {"type": "object"},
                    }
                ],
                "messages": [{"role": "user", "content": [{"type": "text", "text": "Next step"}]}],
                "params": {"maxTokens": 1000, "cacheTtl": "1h"},
            }
        )
    )
    assert verify_command(archive, request, "anthropic") == 0
    assert "(anthropic, claude-sonnet-4-5)" in capsys.readouterr().out
    result = verify_archive(archive, request, "anthropic")
    body = json.loads(result.before)
    assert body["messages"][-1]["content"][0]["text"] == "Next step"
    assert body["system"][0]["text"] == "You design posters."


def _respaced_arguments(state, **kwargs):
    """A deliberately non-canonical writer: re-dumps tool arguments with spaces."""
    data = json.loads(encode(state, **kwargs))
    for message in data["history"]:
        for block in message["content"]:
            if block["type"] == "toolCall":
                block["arguments"] = json.dumps(json.loads(block["arguments"]))
    return jsonbytes.dumps_sorted(data, indent=2) + b"\n"


def test_verify_shows_first_differing_byte_when_the_writer_is_not_canonical(archive, capsys):
    result = verify_archive(archive, encoder=_respaced_arguments)
    assert not result.identical
    expected = result.before.index(b'{"operations":"[]"}') + len(b'{"operations":')
    assert result.first_difference() == expected
    assert report(result) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"DIFFERS at byte {expected} (anthropic")
    assert "before: " in out and "after:  " in out
    assert '{"operations": "[]"}' in out


def test_verify_reports_a_copy_that_does_not_read_back(archive, capsys):
    result = verify_archive(archive, encoder=lambda state, **kwargs: b"{not json")
    assert report(result) == 1
    assert "could not be read back" in capsys.readouterr().out


@pytest.mark.parametrize("content", [b'{"formatVersion": 2}', b"{broken"])
def test_verify_refuses_unreadable_or_newer_archive_without_touching_it(archive, content, capsys):
    (archive / "conversation.json").write_bytes(content)
    before = snapshot(archive)
    assert verify_command(archive, None, None) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("llmcore: cannot verify: ")
    assert snapshot(archive) == before


def test_verify_refuses_missing_archive_and_unknown_provider(tmp_path, archive, capsys):
    assert verify_command(tmp_path / "nothing", None, None) == 2
    assert "nothing: no such folder" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert verify_command(tmp_path / "empty", None, None) == 2
    assert "no conversation.json" in capsys.readouterr().err
    assert verify_command(archive, None, "nobody") == 2
    assert "unknown provider" in capsys.readouterr().err


def test_verify_typer_command(archive):
    app = typer.Typer()
    register(app)

    @app.command("other")
    def other() -> None:  # a second command keeps typer in sub-command mode
        pass

    runner = CliRunner()
    ok = runner.invoke(app, ["verify", str(archive), "--provider", "openai-chat"])
    assert ok.exit_code == 0, ok.output
    assert "OK: " in ok.output
    (archive / "conversation.json").write_bytes(b'{"formatVersion": 3}')
    bad = runner.invoke(app, ["verify", str(archive)])
    assert bad.exit_code == 2
