"""The auditor finds no break in llmcore's own bodies (issue 5: "none on llmcore's own bodies").

Bodies come from the provider modules over generated agent conversations (text, images, tool
calls with raw argument bytes in any key order, tool results and errors, non-ASCII); the auditor
checks them without any knowledge of those modules (SPEC V4).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore import jsonbytes
from llmcore.audit import Verdict, audit_bodies
from llmcore.messages import Image, Message, Text, ToolCall, ToolResult
from llmcore.providers import PROVIDER_NAMES, get_provider
from llmcore.request import Params, Request, Tool

MODELS = {
    "anthropic": "claude-sonnet-4-5",
    "openai-chat": "gpt-4.1",
    "openai-responses": "gpt-5",
    "openrouter": "anthropic/claude-sonnet-4.5",
    "gemini": "gemini-2.5-flash",
    "bedrock-converse": "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
}
TEXT = st.text(alphabet='abc xyz éü✓"\\\n', min_size=1, max_size=16)
PNG = b"\x89PNG\r\n\x1a\n" + bytes(24)
TOOL = Tool.from_schema(
    "lookup", "Look something up.", {"type": "object", "properties": {"q": {"type": "string"}}}
)


@st.composite
def _arguments(draw) -> bytes:
    keys = draw(st.lists(st.sampled_from(["q", "limit", "path", "é"]), unique=True, max_size=3))
    return jsonbytes.dumps({k: draw(TEXT) for k in keys})


@st.composite
def _turns(draw) -> list[list[Message]]:
    """Turns: each is what one request appends (a user message, or a tool call and its result)."""
    turns: list[list[Message]] = [[Message(role="user", content=(Text(text=draw(TEXT)),))]]
    for n in range(draw(st.integers(1, 5))):
        if draw(st.booleans()):
            call = ToolCall(id=f"call_{n}", name="lookup", arguments=draw(_arguments()))
            result = ToolResult(
                call_id=call.id,
                tool_name="lookup",
                content=draw(TEXT).encode(),
                is_error=draw(st.booleans()),
            )
            turns.append(
                [
                    Message(role="assistant", content=(call,)),
                    Message(role="tool", content=(result,)),
                ]
            )
        else:
            content: tuple = (Text(text=draw(TEXT)),)
            if draw(st.booleans()):
                content = (Image(data=PNG, mime_type="image/png"), *content)
            turns.append(
                [
                    Message(role="assistant", content=(Text(text=draw(TEXT)),)),
                    Message(role="user", content=content),
                ]
            )
    return turns


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
@settings(max_examples=60)
@given(turns=_turns(), mode=st.sampled_from(["breakpoints", "automatic", "off"]))
def test_llmcore_bodies_keep_p4(provider: str, turns: list[list[Message]], mode: str) -> None:
    builder = get_provider(provider)
    history: list[Message] = []
    bodies = []
    for turn in turns:
        history.extend(turn)
        request = Request(
            model=MODELS[provider],
            system=("You are terse.",),
            tools=(TOOL,),
            messages=tuple(history),
            params=Params(max_tokens=256, cache_mode=mode),
        )
        bodies.append(builder.build_body(request))
    report = audit_bodies(bodies, provider=provider)
    # Anthropic keys its messages cache on whether any image is present (cache-key model): the
    # request that sends the conversation's first image is a parameter break, the rest stable.
    images = [any(isinstance(b, Image) for m in t for b in m.content) for t in turns]
    first = images.index(True) if provider == "anthropic" and True in images[1:] else -1
    expected = [Verdict.NEW] + [
        Verdict.BREAK if i == first else Verdict.STABLE for i in range(1, len(bodies))
    ]
    assert [r.verdict for r in report.requests] == expected, [r.detail for r in report.requests]
    assert all(r.parameter == "first image" for r in report.requests if r.verdict is Verdict.BREAK)
    assert report.conversations == 1
