"""``llmcore audit``: table, --json, exit 0 stable / 1 break / 2 bad input with one line."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from llmcore.cli.audit import EXIT_BREAK, EXIT_INPUT, EXIT_STABLE, audit_command, register

from . import _bodies as b


def _run(paths, provider=None, as_json=False):
    out, err = io.StringIO(), io.StringIO()
    code = audit_command(paths, provider, as_json, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def stable_file(tmp_path: Path) -> Path:
    msgs = b.session()
    path = tmp_path / "stable.jsonl"
    path.write_bytes(
        b"\n".join(b.anthropic(b.with_last_cached(msgs[:n])) for n in (1, 3, 5)) + b"\n"
    )
    return path


@pytest.fixture
def broken_file(tmp_path: Path) -> Path:
    msgs = b.session()
    first = b.anthropic(msgs[:3], system="You are terse.")
    second = b.anthropic(msgs[:5], system="You are verbose.")
    path = tmp_path / "broken.jsonl"
    path.write_bytes(first + b"\n" + second + b"\n")
    return path


def test_stable_exits_0_with_a_table(stable_file: Path):
    code, out, err = _run([stable_file])
    assert code == EXIT_STABLE and err == ""
    assert "stable" in out and "new" in out
    assert "3 requests in 1 conversation: new 1, stable 2" in out


def test_break_exits_1_and_names_byte_and_path(broken_file: Path):
    code, out, _ = _run([broken_file])
    assert code == EXIT_BREAK
    second = broken_file.read_bytes().split(b"\n")[1]
    assert f"{second.index(b'verbose')} system[0].text" in out
    assert "system[0] differs" in out


def test_json_output(broken_file: Path):
    code, out, _ = _run([broken_file], as_json=True)
    assert code == EXIT_BREAK
    doc = json.loads(out)
    assert doc["stable"] is False and doc["counts"]["break"] == 1
    rec = doc["records"][1]
    assert rec["verdict"] == "break" and rec["path"] == "system[0].text"
    assert rec["source"] == f"{broken_file}:2"
    assert set(rec) >= {"first_break_offset", "lost_bytes", "lost_tokens", "max_cacheable_tokens"}


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        (
            "bad.jsonl",
            b'{"model":"x","messages":[]}\n{"model": oops}\n',
            "bad.jsonl:2: request body is not valid JSON",
        ),
        (
            "bad2.jsonl",
            b"[1,2]\n",
            "bad2.jsonl:1: request body is not valid JSON: the body is not a JSON object",
        ),
        ("bad3.jsonl", b'{"model":"x","text":"hi"}\n', "bad3.jsonl:1: not a Messages"),
        ("bad.yaml", b"interactions:\n  - request: [\n", "bad.yaml:3: not a valid YAML cassette"),
        ("nolist.yaml", b"version: 1\n", "nolist.yaml: a cassette needs an 'interactions' list"),
        ("other.json", b'{"hello": 1}', "other.json: neither a corpus case"),
        ("bad.json", b"{", "bad.json: not valid JSON"),
        (
            "latin.jsonl",
            b'{"messages":["\xe9"]}\n',
            "latin.jsonl:1: request body is not UTF-8 (byte 14)",
        ),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path: Path, name: str, content: bytes, expected: str):
    path = tmp_path / name
    path.write_bytes(content)
    code, out, err = _run([path])
    assert code == EXIT_INPUT and out == ""
    assert err.count("\n") == 1
    assert err.startswith(f"llmcore: {tmp_path}/{expected}"), err


def test_missing_path_and_unknown_provider(tmp_path: Path, stable_file: Path):
    code, _, err = _run([tmp_path / "nope.jsonl"])
    assert (code, err) == (
        EXIT_INPUT,
        f"llmcore: {tmp_path / 'nope.jsonl'}: no such file or folder\n",
    )
    code, _, err = _run([stable_file], provider="cohere")
    assert (
        code == EXIT_INPUT
        and err.startswith("llmcore: unknown provider 'cohere'")
        and err.count("\n") == 1
    )


def test_typer_registration(broken_file: Path, stable_file: Path):
    app = typer.Typer()
    register(app)

    @app.callback()
    def _root() -> None:
        """Root."""

    runner = CliRunner()
    assert runner.invoke(app, ["audit", str(stable_file)]).exit_code == 0
    result = runner.invoke(app, ["audit", "--json", "--provider", "anthropic", str(broken_file)])
    assert result.exit_code == 1 and json.loads(result.stdout)["counts"]["break"] == 1
    assert "--provider" in runner.invoke(app, ["audit", "--help"]).stdout
