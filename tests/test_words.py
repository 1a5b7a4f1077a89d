"""The one plural rule of every message that counts something (``1 token``, ``2 tokens``)."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from llmcore._words import plural
from llmcore.audit import AuditReport, audit_bodies
from llmcore.cli._audit_report import _summary
from llmcore.cli.compact import _preview
from llmcore.compaction import CompactionPlan


def test_one_is_singular_and_every_other_count_plural() -> None:
    assert plural(1, "token") == "1 token"
    assert plural(0, "token") == "0 tokens"
    assert plural(2, "byte") == "2 bytes"
    assert plural(1_024, "input token") == "1,024 input tokens"
    assert plural(3, "entry", "entries") == "3 entries"


@given(st.integers(min_value=0, max_value=10**12), st.sampled_from(["token", "request", "turn"]))
def test_the_count_is_written_with_separators_and_the_noun_agrees(count: int, noun: str) -> None:
    text = plural(count, noun)
    assert text.startswith(f"{count:,} ")
    assert text.endswith(noun if count == 1 else noun + "s")


def test_the_audit_summary_says_1_token_not_1_tokens() -> None:
    body = (
        b'{"model":"claude-sonnet-4-6","max_tokens":5,"messages":[{"role":"user","content":"a"}]}'
    )
    (record,) = audit_bodies([body]).requests
    one = dataclasses.replace(record, total_tokens=1, max_cacheable_tokens=0, lost_tokens=1)
    lines = _summary(AuditReport(requests=(one,), conversations=1))
    assert lines[0].startswith("1 request in 1 conversation: ")
    assert lines[2] == "theoretical maximum hit rate: 0.0% (0 of 1 token, estimated)"
    assert "1 tokens" not in "\n".join(lines)


def test_the_compaction_preview_counts_agree() -> None:
    plan = CompactionPlan(
        turns=3, summarized_messages=1, model="m", input_tokens=1, input_source="last_request",
        dollars=None, refusal=None, keep_from=1,
    )  # fmt: skip
    text = _preview(plan, "anthropic")
    assert text.startswith("3 turns: 1 would be summarized (1 message) and the last 2 kept.")
    assert "~1 input token (the last request's input)" in text
