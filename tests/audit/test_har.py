"""HAR files are read like cassettes (SPEC V1; issue 21 item 4)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from llmcore.audit import AuditInputError, audit_paths
from llmcore.cli.audit import audit_command

SYSTEM = "Rules. " * 50


def _entry(system: str, turns: int, cached: int, *, b64: bool = False) -> dict:
    messages = [{"role": "user", "content": "q"}]
    for n in range(turns):
        messages += [
            {"role": "assistant", "content": f"a{n}"},
            {"role": "user", "content": f"q{n}"},
        ]
    answer = json.dumps(
        {
            "id": f"msg_{turns}",
            "usage": {
                "input_tokens": 5,
                "cache_read_input_tokens": cached,
                "cache_creation_input_tokens": 0,
            },
        }
    )
    content = {"mimeType": "application/json", "text": answer}
    if b64:
        content = {
            "mimeType": "application/json",
            "encoding": "base64",
            "text": base64.b64encode(answer.encode()).decode(),
        }
    return {
        "startedDateTime": f"2026-01-01T00:00:0{turns}.000Z",
        "request": {
            "method": "POST",
            "url": "https://api.anthropic.com/v1/messages?beta=true",
            "headers": [{"name": "x-api-key", "value": "sk-ant-x"}],
            "postData": {
                "mimeType": "application/json",
                "text": json.dumps(
                    {
                        "model": "claude-sonnet-4-6",
                        "max_tokens": 5,
                        "system": system,
                        "messages": messages,
                    }
                ),
            },
        },
        "response": {"status": 200, "content": content},
    }


def _har(path: Path, entries: list[dict]) -> Path:
    other = {
        "request": {"method": "GET", "url": "https://api.anthropic.com/v1/models", "headers": []},
        "response": {"status": 200, "content": {}},
    }
    path.write_text(json.dumps({"log": {"version": "1.2", "entries": [other, *entries]}}))
    return path


def test_a_har_file_is_one_scope_with_its_usage_and_times(tmp_path: Path) -> None:
    path = _har(
        tmp_path / "run.har",
        [_entry(SYSTEM, 0, 0), _entry(SYSTEM, 1, 900, b64=True), _entry(SYSTEM + "!", 2, 0)],
    )
    report = audit_paths([path])
    assert [(r.verdict, r.path) for r in report.requests] == [
        ("new", None),
        ("stable", None),
        ("break", "system"),
    ]
    assert [r.usage.cache_read_tokens for r in report.requests if r.usage] == [0, 900, 0]
    assert report.requests[2].source == f"{path}: log.entries[3]"
    assert report.skipped == (
        f"{path}: log.entries[0]: not a request to a model endpoint (GET https://api.anthropic.com/v1/models)",
    )


def test_a_folder_of_har_files_is_audited_not_skipped(tmp_path: Path) -> None:
    # Before: .har files in a folder were passed over without a word.
    _har(tmp_path / "a.har", [_entry(SYSTEM, 0, 0), _entry(SYSTEM, 1, 0)])
    _har(tmp_path / "b.har", [_entry(SYSTEM, 0, 0)])
    report = audit_paths([tmp_path])
    assert [(r.file, r.verdict) for r in report.requests] == [
        (str(tmp_path / "a.har"), "new"),
        (str(tmp_path / "a.har"), "stable"),
        (str(tmp_path / "b.har"), "new"),
    ]
    assert report.conversations == 2  # one scope per file


def test_a_har_file_without_entries_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.har"
    bad.write_text('{"log": {}}')
    with pytest.raises(AuditInputError, match="log.entries"):
        audit_paths([bad])
    assert audit_command([bad], None, False) == 2
    assert capsys.readouterr().err.count("\n") == 1
