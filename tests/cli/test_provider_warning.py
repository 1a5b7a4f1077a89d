"""A ``--provider`` that contradicts the body's shape is a warning (issue 11).

``body``, ``import`` and ``audit`` print one line on stderr naming the file and both shapes, and
still do what was asked: the same stdout and exit code as without the contradiction check.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from llmcore import jsonbytes
from llmcore.audit import wire_conflict, wire_shape
from llmcore.cli import app

CORPUS = Path(__file__).parents[1] / "corpus"

ANTHROPIC_BODY = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 64,
    "system": "Be brief.",
    "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
}
GEMINI_BODY = {"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]}


def _invoke(*args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), input=stdin)
    return result.exit_code, result.stdout, result.stderr


def _write(path: Path, value: object) -> Path:
    path.write_bytes(jsonbytes.dumps(value))
    return path


def test_import_warns_and_still_imports(tmp_path: Path):
    path = _write(tmp_path / "recorded.json", ANTHROPIC_BODY)
    code, out, err = _invoke("import", str(path), "-p", "openai-chat")
    assert code == 0
    assert err == (
        f"llmcore: warning: {path}: --provider openai-chat contradicts the body's shape "
        "(anthropic); imported as openai-chat\n"
    )
    assert json.loads(out)["model"] == "claude-sonnet-4-5"  # the request file was written
    code, _, err = _invoke("import", str(path), "-p", "anthropic")
    assert (code, err) == (0, "")


def test_import_names_stdin_and_the_gemini_shape():
    code, _, err = _invoke("import", "-", "-p", "anthropic", stdin=jsonbytes.dumps(GEMINI_BODY))
    assert err.splitlines()[0] == (
        "llmcore: warning: <stdin>: --provider anthropic contradicts the body's shape (gemini); "
        "imported as anthropic"
    )
    assert code == 2  # the importer then refuses the body, as it did before


def test_body_warns_when_extra_fields_give_the_body_another_shape(tmp_path: Path):
    request = {
        "model": "gpt-4.1",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
        "params": {"extra": {"top_k": 3}},
    }
    path = _write(tmp_path / "request.json", request)
    code, out, err = _invoke("body", str(path), "-p", "openai-chat")
    assert code == 0
    assert json.loads(out)["top_k"] == 3  # built as asked
    assert err == (
        f"llmcore: warning: {path}: --provider openai-chat contradicts the body's shape "
        "(anthropic); built as openai-chat\n"
    )
    plain = _write(tmp_path / "plain.json", {**request, "params": {}})
    for provider in ("openai-chat", "anthropic", "openrouter", "openai-responses"):
        code, _, err = _invoke("body", str(plain), "-p", provider)
        assert (code, err) == (0, ""), provider


def test_audit_warns_once_per_file_and_audits_as_asked(tmp_path: Path):
    path = tmp_path / "run.jsonl"
    second = {**ANTHROPIC_BODY, "messages": ANTHROPIC_BODY["messages"] * 3}
    path.write_bytes(jsonbytes.dumps(ANTHROPIC_BODY) + b"\n" + jsonbytes.dumps(second) + b"\n")
    code, out, err = _invoke("audit", str(path), "-p", "openai-chat", "--json")
    assert code == 0
    assert err == (
        f"llmcore: warning: {path}: --provider openai-chat contradicts the body's shape "
        "(anthropic); audited as openai-chat\n"
    )
    report = json.loads(out)
    assert [r["provider"] for r in report["records"]] == ["openai-chat", "openai-chat"]
    assert report["warnings"] == [err.removeprefix("llmcore: warning: ").rstrip("\n")]
    code, _, err = _invoke("audit", str(path), "-p", "anthropic")
    assert (code, err) == (0, "")


@pytest.mark.parametrize("provider", ["anthropic", "openai-chat", "openai-responses"])
def test_corpus_bodies_never_contradict_their_own_provider(provider: str):
    cases = sorted((CORPUS / provider).glob("*.json"))
    assert len(cases) > 50
    for case in cases:
        value = json.loads(case.read_bytes())
        raw = value.get("request_raw")
        body = raw.encode() if isinstance(raw, str) else jsonbytes.dumps(value["request"])
        assert wire_conflict(body, provider, name="x", done="audited") is None, case
        assert wire_shape(body) in (None, provider), case


def test_an_ambiguous_body_is_no_contradiction():
    """Plain text messages fit Anthropic's and Chat Completions' shapes alike."""
    body = jsonbytes.dumps({"model": "m", "messages": [{"role": "user", "content": "Hi"}]})
    assert wire_shape(body) is None
    for provider in ("anthropic", "openai-chat"):
        assert wire_conflict(body, provider, name="x", done="built") is None
    assert wire_shape(b"not json") is None


def test_body_naming_a_gemini_cache_says_what_it_leaves_out(tmp_path: Path):
    request = {
        "model": "gemini-2.5-flash",
        "system": [{"type": "text", "text": "Be brief."}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
        "params": {"extra": {"cachedContent": "cachedContents/abc"}},
    }
    path = _write(tmp_path / "req.json", request)
    code, out, err = _invoke("body", str(path), "-p", "gemini")
    assert code == 0
    assert json.loads(out) == {**GEMINI_BODY, "cachedContent": "cachedContents/abc"}
    assert err == (
        f"llmcore: warning: {path}: $.params.extra.cachedContent: the request names a cache, so"
        " the body leaves out its system prompt (systemInstruction) (the cache holds them;"
        " Gemini refuses them beside a cachedContent)\n"
    )
