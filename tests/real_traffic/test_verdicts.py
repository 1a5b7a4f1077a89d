"""Other projects' recorded traffic: every verdict pinned, and every difference explained (V1).

``expected.json`` holds, for each vendored cassette, llmcore's verdict on each request (for a
break, the JSON path of its first differing byte) beside the verdict of pydantic-ai's own
cache-prefix classifier on the same request (derived from ``pydantic_ai_verdicts.json``), and a
``reason`` on every request where the two differ. The whole folder is audited in one run, the
way a CI job runs ``llmcore audit DIR``.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from llmcore.audit import AuditReport, Verdict, audit_paths

FOLDER = Path(__file__).resolve().parent
SOURCES = ("pydantic-ai", "llm", "llm-gemini", "llm-anthropic")
NON_HTTP = (
    "pydantic-ai/tests/realtime/cassettes/test_openai_ws_sideband/test_webrtc_sideband_text_turn.yaml",
    "pydantic-ai/tests/realtime/cassettes/test_google_ws/test_text_in_audio_out_turn.yaml",
    "pydantic-ai/tests/models/xai/cassettes/test_thinking/test_xai_unified_thinking.xai.yaml",
)
_INTERACTION = re.compile(r"^interactions\[(\d+)\]: (.*)$", re.S)


def _relative(path: str) -> str:
    return Path(path).resolve().relative_to(FOLDER).as_posix()


def _split_skip(entry: str, files: dict[str, str]) -> tuple[str, str]:
    """``/abs/file.yaml: reason`` -> (``file.yaml`` relative to the folder, ``reason``)."""
    owner = max((f for f in files if entry.startswith(f + ":")), key=len)
    return files[owner], entry[len(owner) + 1 :].strip()


def _llmcore_cell(record: Any) -> str:
    if record.verdict is Verdict.BREAK:
        return f"break at {record.path}"
    return str(record.verdict)


def llmcore_rows(report: AuditReport) -> dict[str, dict[str, Any]]:
    """Per cassette: the file-level skip reason (or ``None``) and a cell per interaction."""
    files = {str(p): p.relative_to(FOLDER).as_posix() for p in FOLDER.rglob("*.yaml")}
    out: dict[str, dict[str, Any]] = defaultdict(lambda: {"skipped": None, "rows": {}})
    for record in report.requests:
        out[_relative(record.file)]["rows"][str(record.position)] = _llmcore_cell(record)
    for entry in report.skipped:
        if not any(entry.startswith(f + ":") for f in files):
            continue  # README, LICENSE, JSON: not cassettes
        name, reason = _split_skip(entry, files)
        if match := _INTERACTION.match(reason):
            out[name]["rows"].setdefault(match[1], f"skipped: {match[2]}")
        else:
            out[name]["skipped"] = reason
    return dict(out)


def _pydantic_ai_cell(pair: dict[str, Any], exempt: str | None) -> str:
    cell = pair["classification"]
    if pair["deferred_tools_violation"]:
        cell = "deferred-tools violation"
    if pair["violation"] and exempt:
        cell += f" [exempt: {exempt}]"
    return cell


def _reference() -> dict[str, Any]:
    """pydantic-ai's classifier output per cassette (``pydantic_ai_verdicts.json``)."""
    doc = json.loads((FOLDER / "pydantic_ai_verdicts.json").read_text(encoding="utf-8"))
    cassettes: dict[str, Any] = doc["cassettes"]
    return cassettes


def pydantic_ai_rows() -> dict[str, dict[str, str]]:
    """Per cassette and interaction: pydantic-ai's verdict, from its recorded pair verdicts."""
    out: dict[str, dict[str, str]] = {}
    for name, cassette in _reference().items():
        cells: dict[str, str] = {}
        for request in cassette["requests"]:
            if request["classified"]:
                cells[str(request["interaction"])] = "first"
            elif request["why_not"] != "not a POST":
                cells[str(request["interaction"])] = f"not read: {request['why_not']}"
        for pair in cassette["pairs"]:
            cell = _pydantic_ai_cell(pair, cassette["exempt_reason"])
            cells[str(pair["later_interaction"])] = cell
        out[name] = cells
    return out


def _category(cell: str) -> str:
    """Map either side's cell to new / kept / break / unread / rejected (the shared vocabulary)."""
    word = cell.split(" ", 1)[0].rstrip(":")
    if word in ("new", "first", "new-conversation", "different-conversation"):
        return "new"
    if word in ("skipped", "not"):
        return "unread"
    if word == "rejected":  # the recorded server rejected it: listed, never a baseline
        return "rejected"
    if word == "break" or word.endswith("-divergent") or word in ("shrunk", "deferred-tools"):
        return "break"
    return "kept"  # stable, retry, extension, identical and llmcore's allowed kinds


def agree(ours: str, theirs: str) -> bool:
    """Whether llmcore's cell and pydantic-ai's cell say the same thing about a request."""
    return _category(ours) == _category(theirs)


@pytest.fixture(scope="module")
def report() -> AuditReport:
    return audit_paths([FOLDER])


@pytest.fixture(scope="module")
def expected() -> dict[str, Any]:
    doc = json.loads((FOLDER / "expected.json").read_text(encoding="utf-8"))
    cassettes: dict[str, Any] = doc["cassettes"]
    return cassettes


def test_every_vendored_cassette_is_pinned(expected):
    vendored = {
        p.relative_to(FOLDER).as_posix() for s in SOURCES for p in (FOLDER / s).rglob("*.yaml")
    }
    assert set(expected) == vendored
    assert len(vendored) == 135


def test_every_llmcore_verdict_holds(report, expected):
    ours = llmcore_rows(report)
    for name, entry in expected.items():
        got = ours.get(name, {"skipped": None, "rows": {}})
        assert got["skipped"] == entry.get("skipped"), name
        pinned = {
            str(r["interaction"]): r["llmcore"]
            for r in entry["requests"]
            if r["llmcore"] != "skipped"
        }
        assert got["rows"] == pinned, name


def test_pydantic_ai_column_is_its_recorded_verdict(expected):
    theirs = pydantic_ai_rows()
    for name, entry in expected.items():
        pinned = {
            str(r["interaction"]): r["pydantic_ai"]
            for r in entry["requests"]
            if r["pydantic_ai"] != "not read"
        }
        assert theirs.get(name, {}) == pinned, name


def test_every_difference_has_a_reason_and_only_differences_do(expected):
    differing = 0
    for name, entry in expected.items():
        for row in entry["requests"]:
            if agree(row["llmcore"], row["pydantic_ai"]):
                assert "reason" not in row, (name, row)
            else:
                differing += 1
                reason = row.get("reason")
                assert isinstance(reason, str) and len(reason) > 20, (name, row)
                assert reason != "TODO", (name, row)
    assert differing > 0


def test_one_run_over_the_folder_groups_nothing_across_files(report):
    files_of: dict[int, set[str]] = defaultdict(set)
    for record in report.requests:
        if record.conversation >= 0:  # -1: a rejected request no conversation holds
            files_of[record.conversation].add(record.file)
    assert len(files_of) == report.conversations
    assert all(len(files) == 1 for files in files_of.values())


def test_websocket_and_protobuf_cassettes_are_skipped_with_a_reason(report, expected):
    audited = {_relative(r.file) for r in report.requests}
    for name in NON_HTTP:
        assert name not in audited
        reason = llmcore_rows(report)[name]["skipped"]
        assert reason and reason == expected[name]["skipped"], name


@pytest.mark.parametrize(
    "name",
    sorted(name for name, c in _reference().items() if c["exempt_reason"] and c["violations"]),
)
def test_every_pair_pydantic_ai_exempts_is_a_break_or_explained(name, expected):
    """The prefix moves pydantic-ai exempts are real: llmcore reports each, or says why not."""
    rows = [r for r in expected[name]["requests"] if "[exempt:" in r["pydantic_ai"]]
    assert rows
    for row in rows:
        assert row["llmcore"].startswith("break at ") or row.get("reason"), row
