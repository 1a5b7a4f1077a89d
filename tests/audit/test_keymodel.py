"""The cache-key model's verdicts (issue 19, findings 1 and 2; SPEC V1, V5).

Finding 1: a change of a field the provider keys a cache level on is a break of kind
``parameter`` naming the field, its loss counted from the level it discards, exit 1. Finding 2: a
byte difference the provider cannot see (JSON escape forms, whitespace between JSON tokens, an
Anthropic string content and one text block) is stable with a note, while the differences the
provider does see (an arguments string, tool_use input key order) stay breaks.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from llmcore import jsonbytes
from llmcore.audit import AuditInput, Verdict, audit_bodies, audit_paths, estimate
from llmcore.audit.keymodel import ESCAPES, IMAGES, MODELS, TEXT_BLOCK, WHITESPACE
from llmcore.cli.audit import EXIT_BREAK, audit_command

from . import _bodies as b

REAL = Path(__file__).resolve().parents[1] / "real_traffic"
TOOLS = [{"name": "t", "description": "d" * 400, "input_schema": {"type": "object"}}]
FIRST = [b.user("q" * 400)]
LONGER = [*FIRST, b.assistant("a"), b.user("next")]


def _anthropic(messages: list[dict[str, Any]], **extra: Any) -> bytes:
    return b.anthropic(messages, tools=TOOLS, extra=extra)


def _keyed(*bodies: bytes) -> list[AuditInput]:
    """One conversation by its key (grouping never decides it)."""
    return [AuditInput(body=x, source=f"r{i}", conversation_key="c") for i, x in enumerate(bodies)]


def _second(*bodies: bytes) -> Any:
    return audit_bodies(_keyed(*bodies)).requests[1]


def _tokens_of(value: Any) -> int:
    """The auditor's own estimate of one prefix item (llmcore.audit.estimate)."""
    return estimate.item_tokens(value, estimate.family_of("anthropic", "claude-sonnet-4-5"))


# --- finding 1: parameters -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "after", "parameter"),
    [
        ({}, {"tool_choice": {"type": "any"}}, "tool_choice"),
        ({"tool_choice": {"type": "auto"}}, {"tool_choice": {"type": "any"}}, "tool_choice.type"),
        ({}, {"thinking": {"type": "enabled", "budget_tokens": 2048}}, "thinking"),
        (
            {"thinking": {"type": "enabled", "budget_tokens": 2048}},
            {"thinking": {"type": "enabled", "budget_tokens": 4096}},
            "thinking.budget_tokens",
        ),
    ],
)
def test_an_anthropic_messages_level_parameter_change_is_a_parameter_break(
    before, after, parameter
):
    rec = _second(_anthropic(FIRST, **before), _anthropic(LONGER, **after))
    assert (rec.verdict, rec.kind, rec.parameter) == (Verdict.BREAK, "parameter", parameter)
    assert rec.path == parameter and rec.divergence == "messages"
    # Tools and system stay cached; the earlier request's messages level is what is lost.
    assert rec.lost_tokens == _tokens_of(FIRST[0]["content"][0])
    assert rec.detail.startswith(f"parameter {parameter} changed from ")


def test_a_thinking_key_order_is_no_change():
    one = {"thinking": {"type": "enabled", "budget_tokens": 2048}}
    two = {"thinking": {"budget_tokens": 2048, "type": "enabled"}}
    assert _second(_anthropic(FIRST, **one), _anthropic(LONGER, **two)).verdict is Verdict.STABLE


def test_a_model_swap_discards_every_level():
    first = _anthropic(FIRST)
    rec = _second(first, b.anthropic(LONGER, tools=TOOLS, model="claude-opus-4-1"))
    assert (rec.verdict, rec.kind, rec.parameter, rec.path) == (
        Verdict.BREAK,
        "parameter",
        "model",
        "model",
    )
    assert rec.lost_tokens == audit_bodies([first]).requests[0].total_tokens
    assert rec.first_break_offset == first.index(b'"claude')


def test_the_first_image_is_named():
    image = b.image_message("AAAA")
    rec = _second(_anthropic(FIRST), _anthropic([*FIRST, b.assistant("a"), image]))
    assert (rec.kind, rec.parameter, rec.path) == ("parameter", IMAGES, "messages[2].content[0]")


def test_a_byte_break_before_the_parameters_level_wins():
    first = _anthropic(FIRST)
    second = b.anthropic(
        LONGER, tools=TOOLS, system="Other.", extra={"tool_choice": {"type": "any"}}
    )
    rec = _second(first, second)
    assert (rec.verdict, rec.kind, rec.divergence) == (Verdict.BREAK, "prefix", "system")


def test_chat_response_format_and_responses_text_format():
    schema = {"type": "json_schema", "json_schema": {"name": "r", "schema": {"type": "object"}}}
    msgs = [{"role": "user", "content": "hi"}]
    longer = [*msgs, {"role": "assistant", "content": "yo"}, {"role": "user", "content": "more"}]
    chat_first = jsonbytes.dumps({"model": "gpt-4.1", "messages": msgs})
    chat_second = jsonbytes.dumps(
        {"model": "gpt-4.1", "messages": longer, "response_format": schema}
    )
    rec = _second(chat_first, chat_second)
    assert (rec.kind, rec.parameter, rec.divergence) == ("parameter", "response_format", "messages")
    items = [{"role": "user", "content": "hi"}]
    first = jsonbytes.loads(b.responses(items))
    first["text"] = {"format": {"type": "json_object"}, "verbosity": "low"}
    second = jsonbytes.loads(b.responses([*items, {"role": "user", "content": "more"}]))
    second["text"] = {"verbosity": "low"}
    rec = _second(jsonbytes.dumps(first), jsonbytes.dumps(second))
    assert (rec.kind, rec.parameter, rec.divergence) == ("parameter", "text.format", "system")
    assert "to absent" in rec.detail
    # Responses' instructions sit after the schema: their tokens are lost too.
    assert rec.lost_tokens == audit_bodies([jsonbytes.dumps(first)]).requests[0].total_tokens


def test_a_parameter_break_exits_1_and_names_the_field(tmp_path: Path):
    path = tmp_path / "run.jsonl"
    lines = [_anthropic(FIRST), _anthropic(LONGER, tool_choice={"type": "any"})]
    path.write_bytes(b"\n".join(lines) + b"\n")
    out, err = io.StringIO(), io.StringIO()
    assert audit_command([path], None, False, out=out, err=err) == EXIT_BREAK
    text = " ".join(out.getvalue().split())  # the summary wraps where the temp path ends
    assert "break (parameter tool_choice): parameter tool_choice changed" in text
    out = io.StringIO()
    assert audit_command([path], None, True, out=out, err=err) == EXIT_BREAK
    record = json.loads(out.getvalue())["records"][1]
    assert (record["kind"], record["parameter"]) == ("parameter", "tool_choice")


def test_every_rule_of_the_model_has_a_source():
    for model in MODELS.values():
        rules = [model.order, *(k.source for k in model.keyed)]
        rules += [e.source for e in model.invisible] + [v.source for v in model.visible]
        for source in rules:
            assert source.where.startswith(("https://", "tests/real_traffic/")), source
            assert len(source.quote) > 30 and source.read == "2026-12-02"


# --- finding 2: differences the provider cannot see ------------------------------------------


def test_anthropic_string_content_and_one_text_block_are_one_prompt():
    """Claude Code's resumed prompt: a one-block list with cache_control, then the string."""
    block = [
        {"role": "user", "content": [{"type": "text", "text": "hello", "cache_control": b.CC}]}
    ]
    plain = [{"role": "user", "content": "hello"}, b.assistant("hi"), b.user("next")]
    rec = _second(b.anthropic(block), b.anthropic(plain))
    assert rec.verdict is Verdict.STABLE
    assert rec.notes == (
        f"{TEXT_BLOCK} at messages[0]: not a change to the provider (cache-key model)",
    )


def test_an_ensure_ascii_re_dump_is_stable_with_a_note_in_every_shape():
    user = {"role": "user", "content": [{"type": "text", "text": "20 °C"}]}
    bodies = {
        "anthropic": [user],
        "openai-chat": [{"role": "user", "content": "20 °C"}],
        "openai-responses": None,
    }
    for shape, msgs in bodies.items():
        if shape == "openai-responses":
            raw = {"model": "gpt-5", "input": [{"role": "user", "content": "20 °C"}]}
        else:
            raw = {
                "model": "claude-sonnet-4-5" if shape == "anthropic" else "gpt-4.1",
                "messages": msgs,
            }
        first = json.dumps(raw, ensure_ascii=False, separators=(",", ":")).encode()
        key = "input" if shape == "openai-responses" else "messages"
        longer = {**raw, key: [*raw[key], {"role": "assistant", "content": "ok"}]}
        second = json.dumps(longer, ensure_ascii=True, separators=(",", ":")).encode()
        assert b"\\u00b0" in second
        rec = _second(first, second)
        assert rec.verdict is Verdict.STABLE, (shape, rec.detail)
        assert rec.notes == (
            f"{ESCAPES} at {key}[0]: not a change to the provider (cache-key model)",
        )


def test_whitespace_between_tokens_is_stable_and_inside_an_arguments_string_is_not():
    call = {
        "role": "assistant",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}}
        ],
    }
    msgs = [
        {"role": "user", "content": "go"},
        call,
        {"role": "tool", "tool_call_id": "c1", "content": "r"},
    ]
    first = json.dumps({"model": "gpt-4.1", "messages": msgs}, separators=(",", ":")).encode()
    spaced = json.dumps(
        {"model": "gpt-4.1", "messages": [*msgs, {"role": "user", "content": "more"}]}, indent=2
    ).encode()
    rec = _second(first, spaced)
    assert rec.verdict is Verdict.STABLE
    assert rec.notes[0].startswith(f"{WHITESPACE} at messages[0], messages[1], messages[2]")
    edited = json.loads(spaced)
    edited["messages"][1]["tool_calls"][0]["function"]["arguments"] = '{"a": 1}'
    rec = _second(first, jsonbytes.dumps(edited))
    assert (rec.verdict, rec.path) == (
        Verdict.BREAK,
        "messages[1].tool_calls[0].function.arguments",
    )


def test_tool_use_input_key_order_stays_a_break():
    first = b.anthropic(
        [b.user("go"), b.tool_use("t1", "f", '{"a":1,"b":2}'), b.tool_result("t1", "r")]
    )
    second = b.anthropic(
        [
            b.user("go"),
            b.tool_use("t1", "f", '{"b":2,"a":1}'),
            b.tool_result("t1", "r"),
            b.user("x"),
        ]
    )
    rec = _second(first, second)
    assert (rec.verdict, rec.kind, rec.path) == (
        Verdict.BREAK,
        "prefix",
        "messages[1].content[0].input",
    )


def test_openrouter_recorded_text_shorthand_is_stable_with_its_note():
    """Recorded usage: the whole earlier prompt read from the cache across the string form."""
    name = "pydantic-ai/tests/models/openrouter/cassettes/test_cache/test_openrouter_cache_all_settings_real_api.yaml"
    report = audit_paths([REAL / name])
    second = report.requests[1]
    assert second.verdict is Verdict.STABLE
    assert second.usage is not None and second.usage.cache_read_tokens > 0
    assert second.notes == (
        f"{TEXT_BLOCK} at messages[1]: not a change to the provider (cache-key model)",
    )


def test_a_recorded_converse_tool_choice_change_is_a_parameter_break_of_the_messages_level():
    """pydantic-ai's recording: the read stays 2,752 tokens (tools and system) across the change."""
    name = "pydantic-ai/tests/models/bedrock/cassettes/test_cache/test_bedrock_single_tool_choice_preserves_cache[anthropic].yaml"
    rec = audit_paths([REAL / name]).requests[1]
    assert (rec.verdict, rec.kind, rec.parameter) == (
        Verdict.BREAK,
        "parameter",
        "toolConfig.toolChoice",
    )
    assert rec.usage is not None and rec.usage.cache_read_tokens == 2752
    assert rec.max_cacheable_tokens < rec.total_tokens


def test_prefix_breaks_leave_out_parameter_breaks():
    """``llmcore bench`` counts P4 breaks of llmcore's own bodies: a first image is not one."""
    image = b.image_message("AAAA")
    edited = [b.user("other"), b.assistant("a"), image]
    report = audit_bodies(
        _keyed(_anthropic(FIRST), _anthropic([*FIRST, b.assistant("a"), image]), _anthropic(edited))
    )
    assert [r.kind for r in report.requests] == [None, "parameter", "prefix"]
    assert (report.breaks, report.prefix_breaks) == (2, 1)
