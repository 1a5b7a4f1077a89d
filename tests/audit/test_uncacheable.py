"""A break before anything was cacheable loses nothing, and the report says why (V1, V5).

Below the model's minimum cacheable prefix nothing is written (PROVIDER-RULES §1.3, §2.1), so
no cache hit was possible: the report shows no loss for such a break and names the minimum.
"""

from __future__ import annotations

import json

from llmcore.audit import Verdict, audit_bodies
from llmcore.cli._audit_report import _summary

SHORT = "You are terse."
LONG = "Keep every answer short and exact. " * 400  # well above 1,024 tokens


def _body(model: str, system: str, last: str) -> bytes:
    return json.dumps(
        {
            "model": model,
            "max_tokens": 100,
            "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": last}],
        }
    ).encode()


def test_a_break_under_the_minimum_loses_nothing_and_says_why() -> None:
    first = _body("claude-sonnet-4-5", SHORT, "hi")
    report = audit_bodies([first, _body("claude-sonnet-4-5", "You are verbose.", "hi")])
    new, broken = report.requests
    assert broken.verdict is Verdict.BREAK and broken.lost_bytes > 0
    assert broken.uncacheable == (
        f"nothing was cacheable: the previous request's prompt ({new.total_tokens} tokens, "
        "estimated) is under claude-sonnet-4-5's minimum cacheable prefix of 1,024 tokens, so "
        "no cache entry was written to lose"
    )
    assert (report.lost_bytes, report.lost_tokens) == (0, 0)
    assert report.to_dict()["records"][1]["uncacheable"] == broken.uncacheable
    lines = _summary(report)
    assert lines[1] == (
        "lost to breaks: none (no cache hit was possible: each prompt before a break is under "
        "its model's minimum cacheable prefix)"
    )
    assert f"  {broken.uncacheable}" in lines


def test_a_break_above_the_minimum_still_counts_its_loss() -> None:
    first = _body("claude-sonnet-4-5", LONG, "hi")
    report = audit_bodies([first, _body("claude-sonnet-4-5", LONG + "!", "hi")])
    broken = report.requests[1]
    assert broken.verdict is Verdict.BREAK and broken.uncacheable is None
    assert report.requests[0].total_tokens > 1024
    assert report.lost_tokens == broken.lost_tokens > 1024
    assert _summary(report)[1] == (
        f"lost to breaks: {broken.lost_bytes:,} bytes, {broken.lost_tokens:,} tokens (estimated)"
    )


def test_mixed_breaks_count_only_the_cacheable_ones() -> None:
    small = [_body("claude-sonnet-4-5", SHORT, "a"), _body("claude-sonnet-4-5", "Other.", "a")]
    large = [_body("claude-opus-4-5", LONG, "b"), _body("claude-opus-4-5", LONG + "?", "b")]
    report = audit_bodies([*small, *large])
    losing = [r for r in report.requests if r.verdict is Verdict.BREAK and not r.uncacheable]
    assert len(losing) == 1 and report.lost_tokens == losing[0].lost_tokens
    assert _summary(report)[1].endswith("; 1 break lost nothing (nothing was cacheable before it)")


def test_openai_prompts_under_1024_tokens_name_that_minimum() -> None:
    def chat(system: str) -> bytes:
        messages = [{"role": "system", "content": system}, {"role": "user", "content": "q"}]
        return json.dumps({"model": "gpt-5", "messages": messages}).encode()

    broken = audit_bodies([chat("One."), chat("Two.")]).requests[1]
    assert broken.verdict is Verdict.BREAK
    assert broken.uncacheable is not None
    assert "under gpt-5's minimum cacheable prefix of 1,024 tokens" in broken.uncacheable
