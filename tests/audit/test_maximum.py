"""Theoretical maximum cacheable prefix (SPEC V1) with token numbers worked out by hand.

Token rule (llmcore.tokens): each prefix item counts ceil(compact bytes / 4) tokens.
"""

from __future__ import annotations

import base64
from pathlib import Path

import yaml

from llmcore.audit import audit_bodies, audit_paths, minimum_tokens

from . import _bodies as b

BIG = "S" * 4400  # a system prompt: as a string item '"SSS…"' it is 4402 bytes = 1101 tokens


def _anthropic_pair(model: str) -> list[bytes]:
    # items: system (string) 4402 B -> 1101; "hello" -> '"hello"' 7 B -> 2;
    # "hi there" -> 10 B -> 3; "more" -> 6 B -> 2
    m1 = [{"role": "user", "content": "hello"}]
    m2 = [*m1, {"role": "assistant", "content": "hi there"}, {"role": "user", "content": "more"}]
    return [
        b.anthropic(m1, system=None, model=model, extra={"system": BIG}),
        b.anthropic(m2, system=None, model=model, extra={"system": BIG}),
    ]


def test_anthropic_whole_items_above_the_minimum():
    report = audit_bodies(_anthropic_pair("claude-sonnet-4-5"))
    assert [r.total_tokens for r in report.requests] == [1103, 1108]
    assert [r.max_cacheable_tokens for r in report.requests] == [0, 1103]
    assert report.theoretical_hit_rate == 1103 / (1103 + 1108)


def test_anthropic_nothing_below_the_model_minimum():
    assert minimum_tokens("claude-opus-4-5-20251101", True) == 4096
    assert minimum_tokens("claude-3-5-haiku-20241022", True) == 2048
    assert minimum_tokens("claude-sonnet-4-20250514", True) == 1024
    assert minimum_tokens("anthropic/claude-haiku-4-5", True) == 4096
    report = audit_bodies(_anthropic_pair("claude-opus-4-5"))
    assert [r.max_cacheable_tokens for r in report.requests] == [0, 0]


def test_anthropic_blocks_count_one_by_one_and_images_count_1600():
    png = base64.b64encode(bytes(300)).decode()  # 400 base64 characters, cut out of the count
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}
    # the image block's compact JSON without its 400 payload characters:
    # {"type":"image","source":{"type":"base64","media_type":"image/png","data":""}} = 79 B -> 20
    body = b.anthropic(
        [{"role": "user", "content": [image, {"type": "text", "text": "x"}]}], system=None
    )
    # text block {"type":"text","text":"x"} = 25 B -> 7 tokens
    assert audit_bodies([body]).requests[0].total_tokens == 1600 + 20 + 7


def test_openai_floors_to_128_steps_and_counts_the_partial_item():
    system = {
        "role": "system",
        "content": BIG,
    }  # {"role":"system","content":""} 30 B + 4400 -> 1108
    hello = {"role": "user", "content": "hello"}  # 33 B -> 9
    first = b.chat([system, hello])
    second = b.chat(
        [system, hello, {"role": "assistant", "content": "hey"}, {"role": "user", "content": "go"}]
    )
    report = audit_bodies([first, second])
    assert report.requests[0].total_tokens == 1117
    # shared 1108 + 9 = 1117 -> 1024 + 128*0
    assert report.requests[1].max_cacheable_tokens == 1024


def test_openai_partial_item_match():
    system = {"role": "system", "content": BIG}  # 1108 tokens
    a = {"role": "user", "content": "A" * 1000 + "X"}
    c = {"role": "user", "content": "A" * 1000 + "Y"}
    report = audit_bodies([b.chat([system, a]), b.chat([system, c])])
    # common bytes of the user items: '{"role":"user","content":"' (26) + 1000 -> 256 tokens;
    # 1108 + 256 = 1364 -> 1024 + 128*2 = 1280
    assert report.requests[1].max_cacheable_tokens == 1280
    assert (
        report.requests[1].verdict == "new"
    )  # a different first history message: new conversation


def test_other_model_or_provider_shares_nothing():
    pair = _anthropic_pair("claude-sonnet-4-5")
    other = _anthropic_pair("claude-sonnet-4-0")[1]
    report = audit_bodies([pair[0], other])
    assert report.requests[1].max_cacheable_tokens == 0


def _timed_cassette(path: Path, bodies: list[bytes], times: list[str]) -> Path:
    interactions = [
        {
            "request": {
                "body": body.decode(),
                "method": "POST",
                "uri": "https://api.anthropic.com/v1/messages",
            },
            "response": {"status": {"code": 200}},
            "recorded_at": when,
        }
        for body, when in zip(bodies, times, strict=True)
    ]
    path.write_text(yaml.safe_dump({"interactions": interactions}))
    return path


def test_ttl_applies_only_with_timestamps(tmp_path: Path):
    pair = _anthropic_pair("claude-sonnet-4-5")
    near = _timed_cassette(
        tmp_path / "near.yaml", pair, ["2026-01-01T10:00:00Z", "2026-01-01T10:04:59Z"]
    )
    far = _timed_cassette(
        tmp_path / "far.yaml", pair, ["2026-01-01T10:00:00Z", "2026-01-01T10:05:01Z"]
    )
    assert audit_paths([near]).requests[1].max_cacheable_tokens == 1103
    assert audit_paths([far]).requests[1].max_cacheable_tokens == 0
    jsonl = tmp_path / "untimed.jsonl"
    jsonl.write_bytes(b"\n".join(pair))
    assert audit_paths([jsonl]).requests[1].max_cacheable_tokens == 1103


def test_ttl_one_hour_and_refresh_on_hit(tmp_path: Path):
    cc = {"type": "ephemeral", "ttl": "1h"}
    m1 = [{"role": "user", "content": [{"type": "text", "text": "hello", "cache_control": cc}]}]
    body = b.anthropic(m1, system=None, extra={"system": BIG})
    path = _timed_cassette(
        tmp_path / "h.yaml", [body, body], ["2026-01-01T10:00:00Z", "2026-01-01T10:50:00Z"]
    )
    assert audit_paths([path]).requests[1].max_cacheable_tokens > 0
    pair = _anthropic_pair("claude-sonnet-4-5")
    times = ["2026-01-01T10:00:00Z", "2026-01-01T10:04:00Z", "2026-01-01T10:08:00Z"]
    refreshed = _timed_cassette(tmp_path / "r.yaml", [pair[0], pair[0], pair[1]], times)
    assert [r.max_cacheable_tokens for r in audit_paths([refreshed]).requests] == [0, 1103, 1103]
