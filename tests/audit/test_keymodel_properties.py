"""Property tests of the cache-key model (issue 19; SPEC V1, V5), in every wire shape.

In a generated conversation of any shape (requests carrying one conversation key, so the
grouping never decides it): any single planted change of a field the model says is keyed is a
break of kind ``parameter`` at that field; any change the model says the provider cannot see
(JSON escape forms, whitespace between tokens, a string content and one text block) or a moved
breakpoint is never a break.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore import jsonbytes
from llmcore.audit import AuditInput, Verdict, audit_bodies
from llmcore.audit.keymodel import ESCAPES, IMAGES, MODELS, TEXT_BLOCK, WHITESPACE

from . import _cassettes as cas
from . import _wire as w

SHAPES = sorted(MODELS)
TEXT = st.text(alphabet='abc xyz°é✓"\\\n', min_size=1, max_size=12)
CC = {"type": "ephemeral"}
MODEL = {
    "anthropic": "claude-sonnet-4-5",
    "openai-chat": "gpt-4.1",
    "openai-responses": "gpt-5",
    "openrouter": "anthropic/claude-sonnet-4.5",
    "gemini": "gemini-2.5-flash",
    "bedrock-converse": "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
}
OTHER = {shape: name + "-x" for shape, name in MODEL.items()}
URI = {
    **cas.URIS,
    "gemini": w.GEMINI_URI,
    "bedrock-converse": w.CONVERSE_URI,
}
IMAGE_BLOCK = {
    "anthropic": {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"},
    },
    "bedrock-converse": {"image": {"format": "png", "source": {"bytes": "AAAA"}}},
}
PLANTS: dict[str, tuple[Any, Any]] = {
    "tool_choice": ({"type": "auto"}, {"type": "any"}),
    "thinking": (
        {"type": "enabled", "budget_tokens": 1024},
        {"type": "enabled", "budget_tokens": 2048},
    ),
    "response_format": ({"type": "text"}, {"type": "json_object"}),
    "text.format": ({"type": "text"}, {"type": "json_object"}),
    "toolConfig.toolChoice": ({"auto": {}}, {"any": {}}),
    "additionalModelRequestFields.thinking": (
        {"type": "enabled", "budget_tokens": 1024},
        {"type": "enabled", "budget_tokens": 2048},
    ),
}


def _message(shape: str, role: str, text: str, *, string: bool = False) -> Any:
    """One history message; ``string``: Anthropic / OpenRouter content as a plain string."""
    if shape == "gemini":
        return {"role": "model" if role == "assistant" else "user", "parts": [{"text": text}]}
    if shape == "bedrock-converse":
        return {"role": role, "content": [{"text": text}]}
    if shape in ("openai-chat", "openai-responses") or string:
        return {"role": role, "content": text}
    return {"role": role, "content": [{"type": "text", "text": text}]}


def _body(shape: str, history: list[Any], params: dict[str, Any], model: str) -> dict[str, Any]:
    """A request body of ``shape``; ``params`` are dotted fields set on it."""
    system = "Be brief."
    if shape == "anthropic":
        body: dict[str, Any] = {
            "model": model,
            "max_tokens": 64,
            "system": [{"type": "text", "text": system}],
        }
        body["messages"] = history
    elif shape in ("openai-chat", "openrouter"):
        body = {"model": model, "messages": [{"role": "system", "content": system}, *history]}
    elif shape == "openai-responses":
        body = {"model": model, "instructions": system, "input": history}
    elif shape == "gemini":
        body = {"contents": history, "systemInstruction": {"parts": [{"text": system}]}}
    else:
        body = {"messages": history, "system": [{"text": system}]}
        body["toolConfig"] = {"tools": [w.tool_spec("lookup", "Look up.")]}
    for field, value in params.items():
        head, _, rest = field.partition(".")
        if rest:
            body.setdefault(head, {})[rest] = value
        else:
            body[head] = value
    return body


def _inputs(shape: str, bodies: list[bytes], models: list[str]) -> list[AuditInput]:
    out = []
    for i, (data, model) in enumerate(zip(bodies, models, strict=True)):
        uri = URI[shape].format(model=model) if "{model}" in URI[shape] else URI[shape]
        out.append(AuditInput(body=data, source=f"r{i}", uri=uri, conversation_key="c"))
    return out


@st.composite
def conversations(draw) -> tuple[str, list[tuple[str, str]], int]:
    """A shape, alternating (role, text) turns, and the first request's length."""
    shape = draw(st.sampled_from(SHAPES))
    n = draw(st.integers(2, 6))
    turns = [("user" if i % 2 == 0 else "assistant", draw(TEXT)) for i in range(n)]
    return shape, turns, draw(st.integers(1, n - 1))


def _rules(shape: str) -> list[str]:
    return [r.field for r in MODELS[shape].keyed if not r.models or r.models in MODEL[shape]]


@settings(max_examples=200, deadline=None)
@given(conversations(), st.data())
def test_a_planted_keyed_field_change_is_a_parameter_break_at_its_path(conv, data):
    shape, turns, k = conv
    field = data.draw(st.sampled_from(_rules(shape)))
    history = [_message(shape, role, text) for role, text in turns]
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    models = [MODEL[shape], MODEL[shape]]
    later = list(history)
    if field == "model":
        models[1] = OTHER[shape]
    elif field == IMAGES:
        later.append({"role": "user", "content": [IMAGE_BLOCK[shape], *history[0]["content"]]})
    else:
        was, now = PLANTS[field]
        if data.draw(st.booleans()):
            before[field] = was
        after[field] = now
    bodies = [
        jsonbytes.dumps(_body(shape, history[:k], before, models[0])),
        jsonbytes.dumps(_body(shape, later, after, models[1])),
    ]
    rec = audit_bodies(_inputs(shape, bodies, models)).requests[1]
    assert (rec.verdict, rec.kind) == (Verdict.BREAK, "parameter"), rec.detail
    assert rec.parameter == field or rec.parameter.startswith(field + "."), rec.parameter
    if field == IMAGES:
        assert rec.path == f"messages[{len(later) - 1}].content[0]"
    else:
        assert rec.path == rec.parameter
    assert rec.lost_tokens > 0


def _redumped(value: Any, how: str) -> jsonbytes.Raw:
    """``value``'s JSON as another text of the same value."""
    if how == ESCAPES:
        return jsonbytes.Raw(json.dumps(value, ensure_ascii=True, separators=(",", ":")))
    return jsonbytes.Raw(json.dumps(value, ensure_ascii=False, indent=1))


@settings(max_examples=200, deadline=None)
@given(conversations(), st.data())
def test_a_change_the_provider_cannot_see_is_never_a_break(conv, data):
    shape, turns, k = conv
    kinds = [ESCAPES, WHITESPACE, "breakpoint"]
    if shape in ("anthropic", "openrouter"):
        kinds.append(TEXT_BLOCK)
    how = data.draw(st.sampled_from(kinds))
    history = [_message(shape, role, text) for role, text in turns]
    first = [dict(m) for m in history[:k]]
    later: list[Any] = [dict(m) for m in history]
    i = data.draw(st.integers(0, k - 1))
    if how == TEXT_BLOCK:
        first[i] = _message(shape, turns[i][0], turns[i][1], string=True)
    elif how == "breakpoint":
        j = data.draw(st.integers(0, len(later) - 1))
        later[j] = _marked(shape, later[j])
        first[i] = _marked(shape, first[i])
    else:
        later[i] = _redumped(later[i], how)
    models = [MODEL[shape], MODEL[shape]]
    bodies = [jsonbytes.dumps(_body(shape, h, {}, MODEL[shape])) for h in (first, later)]
    rec = audit_bodies(_inputs(shape, bodies, models)).requests[1]
    assert rec.verdict is not Verdict.BREAK, (how, rec.detail)
    assert rec.verdict in (Verdict.STABLE, Verdict.RETRY), rec.detail
    if how == TEXT_BLOCK or (how in (ESCAPES, WHITESPACE) and _changed(history[i], how)):
        assert any(note.startswith(how) for note in rec.notes), (how, rec.notes)


def _changed(value: Any, how: str) -> bool:
    """Whether the re-dump is another text (ASCII text escapes the same either way)."""
    return _redumped(value, how).text != jsonbytes.dumps(value).decode()


def _marked(shape: str, message: Any) -> Any:
    """``message`` with a breakpoint on its last block (Converse: a cachePoint block)."""
    if shape == "gemini" or not isinstance(message.get("content"), list):
        return message
    blocks = [dict(x) for x in message["content"]]
    if shape == "bedrock-converse":
        return {**message, "content": [*blocks, w.POINT]}
    blocks[-1]["cache_control"] = CC
    return {**message, "content": blocks}
