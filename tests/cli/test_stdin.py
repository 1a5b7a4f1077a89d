"""``-`` as standard input for ``llmcore body``, ``import`` and ``audit`` (issue 11)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CORPUS = Path(__file__).parents[1] / "corpus"
CASSETTES = Path(__file__).parents[2] / "cassettes"


def _run(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-c", "from llmcore.cli import main; main()", *args],
        input=stdin,
        capture_output=True,
        check=False,
    )


def test_import_piped_into_body_matches_body_of_the_file(tmp_path: Path) -> None:
    case = CORPUS / "anthropic" / "0001.json"
    imported = _run("import", str(case), "-p", "anthropic")
    assert imported.returncode == 0, imported.stderr
    request = tmp_path / "request.json"
    request.write_bytes(imported.stdout)

    piped = _run("body", "-", "-p", "openai-chat", stdin=imported.stdout)
    from_file = _run("body", str(request), "-p", "openai-chat")

    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == from_file.stdout
    assert _run("import", "-", "-p", "anthropic", stdin=case.read_bytes()).stdout == imported.stdout


@pytest.mark.parametrize(
    "command", [["body", "-", "-p", "openai-chat"], ["import", "-", "-p", "anthropic"]]
)
def test_bad_json_on_stdin_is_one_line_naming_stdin(command: list[str]) -> None:
    done = _run(*command, stdin=b"{bad")
    assert done.returncode == 2
    assert done.stdout == b""
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("llmcore: <stdin>: not valid JSON")


def test_bad_request_on_stdin_names_the_json_path() -> None:
    done = _run("body", "-", "-p", "anthropic", stdin=b'{"model": ""}')
    assert done.returncode == 2
    assert done.stderr.decode() == "llmcore: <stdin>: $.model: needs a non-empty string\n"


def test_audit_reads_a_cassette_from_stdin() -> None:
    cassette = CASSETTES / "anthropic-tool-turn.yaml"
    piped = _run("audit", "-", "--json", stdin=cassette.read_bytes())
    named = _run("audit", str(cassette), "--json")
    assert piped.returncode == named.returncode == 0, piped.stderr
    assert piped.stdout == named.stdout.replace(str(cassette).encode(), b"<stdin>")


def test_audit_reads_jsonl_from_stdin() -> None:
    jsonl = _run("import", str(CORPUS / "anthropic" / "0001.json"), "-p", "anthropic")
    body = _run("body", "-", "-p", "anthropic", stdin=jsonl.stdout).stdout
    done = _run("audit", "-", stdin=body + b"\n\n" + body + b"\n")
    assert done.returncode == 0, done.stderr
    assert b"2 requests in 1 conversation: new 1, retry 1" in done.stdout  # the same body twice


def test_audit_bad_jsonl_on_stdin_is_one_line() -> None:
    done = _run("audit", "-", stdin=b"{bad\n")
    assert done.returncode == 2
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("llmcore: <stdin>:1: ")
