"""P4 verdicts: planted breaks are found at the right byte and path; stable runs report none."""

from __future__ import annotations

import base64
from pathlib import Path

import yaml

from llmcore import jsonbytes
from llmcore.audit import AuditInput, Verdict, audit_bodies, audit_paths

from . import _bodies as b


def _growing(messages, *, cached=True, **kw) -> list[bytes]:
    """Bodies of a conversation sent after each user turn (odd prefix lengths)."""
    out = []
    for n in range(1, len(messages) + 1, 2):
        prefix = messages[:n]
        out.append(b.anthropic(b.with_last_cached(prefix) if cached else prefix, **kw))
    return out


def test_stable_session_with_moving_breakpoints_reports_no_break():
    bodies = _growing(b.session() + [b.user("Thanks!")])
    report = audit_bodies(bodies)
    assert [r.verdict for r in report.requests] == [Verdict.NEW] + [Verdict.STABLE] * 3
    assert report.stable and report.conversations == 1
    assert all(r.first_break_offset is None and r.lost_bytes == 0 for r in report.requests)
    assert [r.compared_with for r in report.requests] == [None, 0, 1, 2]


def test_reordered_tool_argument_key_is_found_with_path_and_offset(tmp_path: Path):
    msgs = b.session() + [b.user("Thanks!")]
    first = b.anthropic(b.with_last_cached(msgs[:5]))
    msgs2 = list(msgs)
    msgs2[1] = b.tool_use("toolu_1", "read_file", '{"limit":200,"path":"README.md"}')
    second = b.anthropic(b.with_last_cached(msgs2))
    path = tmp_path / "run.jsonl"
    path.write_bytes(first + b"\n" + second + b"\n")
    report = audit_paths([path])
    rec = report.requests[1]
    assert rec.verdict is Verdict.BREAK
    assert rec.path == "messages[1].content[0].input"
    assert rec.first_break_offset == second.index(b'{"limit":200') + 2
    assert second[rec.first_break_offset : rec.first_break_offset + 5] == b"limit"
    assert rec.source == f"{path}:2"
    # lost: messages[1..4] of the first request, breakpoints removed (normalized bytes)
    lost = sum(len(jsonbytes.dumps(m)) for m in msgs[1:5])
    assert rec.lost_bytes == lost
    assert rec.lost_tokens > 0


def test_changed_system_prompt_is_a_break_in_system():
    msgs = b.session()
    first = b.anthropic(msgs[:3], system="You are terse.")
    second = b.anthropic(msgs[:5], system="You are verbose.")
    rec = audit_bodies([first, second]).requests[1]
    assert rec.verdict is Verdict.BREAK
    assert rec.path == "system[0].text"
    assert rec.first_break_offset == second.index(b"verbose")
    assert "system[0] differs" in (rec.detail or "")


def test_reencoded_image_is_a_break_at_its_data():
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(200))).decode()
    reencoded = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(100)) + bytes(100)).decode()
    msgs = [b.user("hi"), b.assistant("hello"), b.image_message(png), b.assistant("A PNG.")]
    first = b.anthropic(msgs[:3])
    msgs2 = msgs[:2] + [b.image_message(reencoded)] + msgs[3:] + [b.user("thanks")]
    second = b.anthropic(msgs2)
    rec = audit_bodies([first, second]).requests[1]
    assert rec.verdict is Verdict.BREAK
    assert rec.path == "messages[2].content[0].source.data"
    k = next(i for i, (x, y) in enumerate(zip(png, reencoded, strict=True)) if x != y)
    assert rec.first_break_offset == second.index(reencoded.encode()) + k


def test_key_order_change_inside_a_message_is_a_break_at_that_message():
    first = b.chat(
        [
            {"role": "system", "content": "S"},
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "b"},
            {"role": "user", "content": "c"},
        ]
    )
    second = b.chat(
        [
            {"role": "system", "content": "S"},
            {"role": "user", "content": "a"},
            {"content": "b", "role": "assistant"},
            {"role": "user", "content": "c"},
            {"role": "assistant", "content": "d"},
            {"role": "user", "content": "e"},
        ]
    )
    rec = audit_bodies([first, second]).requests[1]
    assert rec.provider == "openai-chat"
    assert rec.verdict is Verdict.BREAK
    assert rec.path == "messages[2]"
    assert rec.first_break_offset == second.index(b'{"content":"b"') + 2


def test_offsets_are_bytes_after_non_ascii_text():
    msgs = [b.user("héllo wörld ✓✓✓"), b.assistant("ünïcode"), b.user("x")]
    first = b.anthropic(msgs)
    msgs2 = [msgs[0], b.assistant("ünïcodE"), b.user("x"), b.assistant("y"), b.user("z")]
    second = b.anthropic(msgs2)
    rec = audit_bodies([first, second]).requests[1]
    assert rec.first_break_offset == second.index("ünïcodE".encode()) + len("ünïcod".encode())
    assert rec.path == "messages[1].content[0].text"


def test_removed_message_and_added_tool_are_breaks():
    msgs = b.session()
    first = b.anthropic(msgs[:5])
    shorter = b.anthropic(msgs[:3])
    report = audit_bodies([first, shorter])
    rec = report.requests[1]
    # issue 11: a history cut short is a shorter rerun, not a break; the place is unchanged
    assert rec.verdict is Verdict.SHORTER_RERUN and rec.path == "messages[3]"
    assert rec.first_break_offset == len(shorter) - 2  # the messages array's closing bracket
    gap = b.anthropic([*msgs[:2], *msgs[3:5]])  # a message removed from the middle
    rec_gap = audit_bodies([first, gap]).requests[1]
    assert rec_gap.verdict is Verdict.BREAK and rec_gap.path == "messages[2].role"
    with_tool = b.anthropic(msgs[:5], tools=b.TOOLS)
    rec2 = audit_bodies([first, with_tool]).requests[1]
    assert (
        rec2.verdict is Verdict.BREAK
        and rec2.path == "tools[0]"
        and rec2.detail == "tools[0] added"
    )
    assert rec2.first_break_offset == with_tool.index(b'[{"name":"read_file"') + 1


def _cassette(path: Path, bodies: list[bytes], *, wrap: bool = False, times=None) -> Path:
    interactions = []
    for i, body in enumerate(bodies):
        text = body.decode("utf-8")
        inter = {
            "request": {
                "body": {"string": text} if wrap else text,
                "headers": {"content-type": ["application/json"]},
                "method": "POST",
                "uri": "https://api.anthropic.com/v1/messages",
            },
            "response": {"status": {"code": 200, "message": "OK"}, "body": {"string": "{}"}},
        }
        if times is not None:
            inter["recorded_at"] = times[i]
        interactions.append(inter)
    path.write_text(
        yaml.safe_dump({"interactions": interactions, "version": 1}, allow_unicode=True)
    )
    return path


def test_breaks_planted_in_raw_body_cassettes(tmp_path: Path):
    msgs = b.session() + [b.user("Thanks!")]
    first = b.anthropic(b.with_last_cached(msgs[:5]))
    msgs2 = list(msgs)
    msgs2[1] = b.tool_use("toolu_1", "read_file", '{"limit":200,"path":"README.md"}')
    second = b.anthropic(b.with_last_cached(msgs2))
    for wrap in (False, True):
        path = _cassette(tmp_path / f"c{wrap}.yaml", [first, second], wrap=wrap)
        report = audit_paths([path])
        rec = report.requests[1]
        assert rec.verdict is Verdict.BREAK
        assert rec.path == "messages[1].content[0].input"
        assert rec.first_break_offset == second.index(b'{"limit"') + 2
        assert rec.source == f"{path}: interactions[1]"


def test_cassette_skips_non_model_interactions(tmp_path: Path):
    body = b.anthropic([b.user("hi")])
    doc = {
        "interactions": [
            {
                "request": {
                    "body": None,
                    "method": "GET",
                    "uri": "https://api.anthropic.com/v1/models",
                }
            },
            {
                "request": {
                    "body": body.decode(),
                    "method": "POST",
                    "uri": "https://api.anthropic.com/v1/messages",
                }
            },
        ]
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(doc))
    report = audit_paths([path])
    assert len(report.requests) == 1
    assert report.skipped == (
        f"{path}: interactions[0]: not a request to a model endpoint "
        "(GET https://api.anthropic.com/v1/models)",
    )


def test_folder_is_read_in_name_order(tmp_path: Path):
    msgs = b.session()
    (tmp_path / "b.jsonl").write_bytes(b.anthropic(msgs[:3]) + b"\n")
    (tmp_path / "a.jsonl").write_bytes(b.anthropic(msgs[:1]) + b"\n")
    (tmp_path / "notes.txt").write_text("not an input")
    report = audit_paths([tmp_path])
    assert [r.source for r in report.requests] == [
        f"{tmp_path / 'a.jsonl'}:1",
        f"{tmp_path / 'b.jsonl'}:1",
    ]
    assert [r.verdict for r in report.requests] == [Verdict.NEW, Verdict.STABLE]
    assert report.skipped == ()  # a file of another kind is not an input, nor a skipped one


def test_corpus_case_prefers_request_raw(tmp_path: Path):
    raw = '{"model": "claude-3-opus", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}'
    case = {"source": "x", "request": jsonbytes.loads(raw), "request_raw": raw, "response": None}
    path = tmp_path / "0001.json"
    path.write_text(__import__("json").dumps(case))
    report = audit_paths([path])
    assert report.requests[0].provider == "anthropic"
    # the string content item "hi": 1 token + 5 for the block, counted from the raw body
    assert report.requests[0].total_tokens == 6


def test_audit_input_sources_and_plain_bytes_mix():
    body = b.anthropic([b.user("hi")])
    report = audit_bodies([AuditInput(body=body, source="x:1"), body])
    assert [r.source for r in report.requests] == ["x:1", "<input>[1]"]
    assert report.requests[1].verdict is Verdict.RETRY  # the same bytes twice: a retry
