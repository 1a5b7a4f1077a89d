"""Rejected requests and the JSONL envelope (issue 19, findings 5 and 6; SPEC V1).

Finding 5: a request the recorded server rejected (status ≥ 400) or never answered is listed and
never the baseline of the next one. Finding 6: an envelope line is read by its own fields
(``body``, ``conversation``, ``status``, ``usage``, ``time``), never as a Responses body, and a
line with ``body`` beside anything else is refused naming ``file:line``.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from llmcore.audit import AuditInputError, RecordedUsage, Verdict, audit_paths
from llmcore.cli.audit import EXIT_BREAK, EXIT_INPUT, EXIT_STABLE, audit_command

from . import _bodies as b
from . import _cassettes as cas

REAL = Path(__file__).resolve().parents[1] / "real_traffic"
TOOL = {"name": "lookup", "description": "Look up.", "input_schema": {"type": "object"}}


def _run(path: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = audit_command([path], None, False, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def _answered(body: bytes, code: int) -> dict[str, Any]:
    out = cas.interaction(body, response='{"type":"error"}')
    out["response"]["status"] = {"code": code, "message": "x"}
    return out


# --- finding 5 -------------------------------------------------------------------------------


def test_a_rejected_request_is_listed_and_never_a_baseline(tmp_path: Path):
    msgs = b.session()
    ok = b.anthropic(msgs[:1])
    rejected = b.anthropic(msgs[:3], tools=[TOOL])  # the server refused the tool: 400
    retried = b.anthropic(msgs[:3])  # the client drops it and goes on
    path = cas.write(
        tmp_path / "c.yaml",
        [_answered(ok, 200), _answered(rejected, 400), _answered(retried, 200)],
    )
    report = audit_paths([path])
    assert [r.verdict for r in report.requests] == [Verdict.NEW, Verdict.REJECTED, Verdict.STABLE]
    assert report.requests[2].compared_with == 0
    assert report.stable and [r.index for r in report.rejected] == [1]
    assert report.requests[1].detail == (
        "the recorded response has status 400; never a baseline for the next request"
    )
    assert report.requests[1].max_cacheable_tokens == 0
    code, out, _ = _run(path)
    assert code == EXIT_STABLE
    assert "request 1 (" in out and "rejected: the recorded response has status 400" in out


def test_a_rejected_first_request_leaves_the_next_one_new(tmp_path: Path):
    """The false ``tools[0] added`` break: the only earlier request was a 400."""
    msgs = b.session()
    path = cas.write(
        tmp_path / "c.yaml",
        [
            _answered(b.anthropic(msgs[:1]), 400),
            _answered(b.anthropic(msgs[:3], tools=[TOOL]), 200),
        ],
    )
    report = audit_paths([path])
    assert [r.verdict for r in report.requests] == [Verdict.REJECTED, Verdict.NEW]
    assert report.breaks == 0


def test_response_null_is_no_response(tmp_path: Path):
    msgs = b.session()
    second = cas.interaction(b.anthropic(msgs[:3], tools=[TOOL]))
    second["response"] = None
    path = cas.write(tmp_path / "c.yaml", [_answered(b.anthropic(msgs[:1]), 200), second])
    rec = audit_paths([path]).requests[1]
    assert (rec.verdict, rec.detail) == (
        Verdict.REJECTED,
        "no response was recorded; never a baseline for the next request",
    )


def test_a_recorded_400_in_real_traffic_is_no_baseline():
    """pydantic-ai's Groq cassette: the first request got a 400 (tool_use_failed)."""
    name = "pydantic-ai/tests/models/cassettes/test_groq/test_tool_use_failed_error.yaml"
    report = audit_paths([REAL / name])
    assert [r.verdict for r in report.requests] == [Verdict.REJECTED, Verdict.NEW, Verdict.STABLE]
    assert report.requests[2].compared_with == 1


# --- finding 6 -------------------------------------------------------------------------------


def _envelopes(tmp_path: Path, lines: list[dict[str, Any]]) -> Path:
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def _two_turns(system: str) -> tuple[dict[str, Any], dict[str, Any]]:
    msgs = b.session()
    first = json.loads(b.anthropic(msgs[:1]))
    second = json.loads(b.anthropic(msgs[:3], system=system))
    return first, second


@pytest.mark.parametrize("extra", [{}, {"status": 200}, {"status": 200, "time": 1.0e9}])
def test_envelope_fields_never_hide_a_break(tmp_path: Path, extra: dict[str, Any]):
    first, second = _two_turns("You are verbose.")
    lines = [
        {"conversation": "c1", "body": first, **extra},
        {"conversation": "c1", "body": second, **extra},
    ]
    path = _envelopes(tmp_path, lines)
    report = audit_paths([path])
    assert [r.verdict for r in report.requests] == [Verdict.NEW, Verdict.BREAK]
    assert report.requests[1].divergence == "system"
    assert {r.provider for r in report.requests} == {"anthropic"}
    assert _run(path)[0] == EXIT_BREAK


def test_envelope_usage_time_and_status(tmp_path: Path):
    first, second = _two_turns("You are terse.")
    usage = {"input_tokens": 5, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 7}
    lines = [
        {"body": first, "status": 200, "time": "2026-01-01T00:00:00Z", "usage": usage},
        {"body": second, "status": None, "time": 1767225601},
        {"body": second, "status": 529},
    ]
    report = audit_paths([_envelopes(tmp_path, lines)])
    one, two, three = report.requests
    assert one.usage == RecordedUsage(input_tokens=112, cache_read_tokens=100, cache_write_tokens=7)
    assert (two.verdict, three.verdict) == (Verdict.REJECTED, Verdict.REJECTED)
    assert three.detail.startswith("the recorded response has status 529")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            {"body": {"model": "m", "messages": []}, "model": "m"},
            "ambiguous line: 'body' beside 'model'",
        ),
        ({"body": {"messages": []}, "status": "200"}, "envelope 'status' is a str"),
        ({"body": {"messages": []}, "usage": {"tokens": 3}}, "envelope 'usage' is not a usage"),
        ({"body": {"messages": []}, "time": "yesterday"}, "recorded_at 'yesterday' is not"),
    ],
)
def test_a_bad_envelope_line_is_refused_naming_file_and_line(tmp_path: Path, line, message):
    first, _ = _two_turns("x")
    path = _envelopes(tmp_path, [{"body": first}, line])
    with pytest.raises(AuditInputError) as caught:
        audit_paths([path])
    assert caught.value.location.startswith(f"{path}:2")
    assert message in caught.value.message
    code, out, err = _run(path)
    assert code == EXIT_INPUT and out == "" and len(err.strip().splitlines()) == 1
    assert f"{path}:2" in err


def test_a_responses_body_with_a_conversation_key_is_still_a_body(tmp_path: Path):
    body = {
        "model": "gpt-5",
        "conversation": "conv_1",
        "input": [{"role": "user", "content": "hi"}],
    }
    report = audit_paths([_envelopes(tmp_path, [body])])
    assert report.requests[0].provider == "openai-responses"
