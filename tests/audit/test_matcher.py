"""The V3 body matcher: P4 normalization, first difference with offset, path and snippets."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import vcr
import yaml
from vcr.errors import CannotOverwriteExistingCassetteException
from vcr.matchers import get_matchers_results
from vcr.request import Request

from llmcore.audit import body_matcher, first_difference, normalize_body

from . import _bodies as b

URI = "https://api.anthropic.com/v1/messages"


def _req(body: bytes) -> Request:
    return Request("POST", URI, body, {"content-type": "application/json"})


def test_moving_breakpoints_match():
    msgs = b.session()
    recorded = b.anthropic(b.with_last_cached(msgs[:5]))
    without = b.anthropic(msgs[:5])
    assert first_difference(recorded, without) is None
    body_matcher(_req(without), _req(recorded))  # no AssertionError
    assert normalize_body(recorded) == without


def test_key_order_difference_is_reported_with_offset_path_and_snippets():
    msgs = b.session()
    recorded = b.anthropic(msgs[:3])
    msgs[1] = b.tool_use("toolu_1", "read_file", '{"limit":200,"path":"README.md"}')
    sent = b.anthropic(msgs[:3])
    diff = first_difference(sent, recorded)
    assert diff is not None
    assert diff.path == "messages[1].content[0].input"
    assert diff.offset_a == diff.offset_b == sent.index(b'{"limit"') + 2
    with pytest.raises(AssertionError) as err:
        body_matcher(_req(sent), _req(recorded))
    message = str(err.value)
    assert f"byte {diff.offset_a} of the sent body" in message
    assert "messages[1].content[0].input" in message
    assert '{"limit":200,' in message and '{"path":"README.md","limit"' in message


def test_offsets_differ_when_a_breakpoint_precedes_the_difference():
    recorded = b.anthropic([b.user("hello", cache=True), b.assistant("ok"), b.user("x")])
    sent = b.anthropic([b.user("hello"), b.assistant("OK"), b.user("x")])
    diff = first_difference(sent, recorded)
    assert diff is not None and diff.path == "messages[1].content[0].text"
    assert diff.offset_a == sent.index(b'"OK"') + 1
    assert diff.offset_b == recorded.index(b'"ok"') + 1
    assert diff.offset_b - diff.offset_a == len(b',"cache_control":{"type":"ephemeral"}')


def test_non_json_bodies_compare_raw():
    diff = first_difference(b"abcdef", b"abcXef")
    assert diff is not None and diff.offset_a == 3 and diff.path == ""
    assert first_difference(b"same", b"same") is None


def test_vcr_reports_the_matcher_message():
    recorded = b.anthropic([b.user("a"), b.assistant("b"), b.user("c")])
    sent = recorded.replace(b'"text":"b"', b'"text":"B"')
    ok, failures = get_matchers_results(_req(sent), _req(recorded), [body_matcher])
    assert ok == []
    assert "messages[1].content[0].text" in str(failures[0][1])


def test_replay_through_vcr_with_the_matcher(tmp_path: Path):
    recorded = b.anthropic([b.user("hello", cache=True)])
    cassette = tmp_path / "c.yaml"
    cassette.write_text(
        yaml.safe_dump(
            {
                "version": 1,
                "interactions": [
                    {
                        "request": {
                            "body": recorded.decode(),
                            "headers": {},
                            "method": "POST",
                            "uri": URI,
                        },
                        "response": {
                            "status": {"code": 200, "message": "OK"},
                            "headers": {"content-type": ["application/json"]},
                            "body": {"string": '{"ok":true}'},
                        },
                    }
                ],
            }
        )
    )
    my_vcr = vcr.VCR(record_mode="none", match_on=["method", "uri", "p4_body"])
    my_vcr.register_matcher("p4_body", body_matcher)
    with my_vcr.use_cassette(str(cassette)):
        response = httpx.post(URI, content=b.anthropic([b.user("hello")]))
        assert response.json() == {"ok": True}
    with (
        my_vcr.use_cassette(str(cassette)),
        pytest.raises(CannotOverwriteExistingCassetteException) as err,
    ):
        httpx.post(URI, content=b.anthropic([b.user("hellO")]))
    assert "messages[0].content[0].text" in str(err.value)
