"""Runner options: the ``stream`` shortcut, and Gemini's cachedContent warning over turns."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llmcore.archive import ConversationState
from llmcore.errors import FieldsNotSentWarning, InvalidRequestError
from llmcore.providers.base import ParsedResponse, Provider
from llmcore.request import Params
from llmcore.runner import FunctionTool, Runner

ANSWER = json.dumps(
    {
        "id": "msg_x",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 3, "output_tokens": 1},
    }
).encode()


class Recording:
    """A transport answering from a script of raw bodies; it records each send's keywords."""

    def __init__(self, *script: bytes) -> None:
        self.script = list(script)
        self.sends: list[dict[str, Any]] = []

    def send(self, provider: Provider, body: bytes, **keywords: Any) -> ParsedResponse:
        self.sends.append(keywords)
        return provider.parse_response(self.script.pop(0))


def _runner(transport: Any = None, **kw: Any) -> Runner:
    return Runner(provider="anthropic", model="claude-sonnet-4-5", transport=transport, **kw)


@pytest.mark.parametrize(
    ("params", "stream", "expected"),
    [
        (None, None, False),
        (None, True, True),
        (None, False, False),
        (Params(stream=True), None, True),
        (Params(stream=True), True, True),
        (Params(temperature=0.5), True, True),  # Params' default False gives way to stream=True
    ],
)
def test_stream_shortcut_sets_params_stream(
    params: Params | None, stream: bool | None, expected: bool
) -> None:
    transport = Recording(ANSWER)
    runner = _runner(transport, params=params, stream=stream)
    assert runner.params.stream is expected
    if params is not None:  # every other parameter is the caller's
        assert runner.params == dataclasses.replace(params, stream=expected)
    runner.run_turn(ConversationState(), "hi")
    assert transport.sends == [{"stream": expected}]


def test_stream_false_contradicting_params_stream_true_is_refused() -> None:
    with pytest.raises(InvalidRequestError) as caught:
        _runner(params=Params(stream=True), stream=False)
    assert caught.value.location == "stream"
    assert caught.value.message == "stream=False contradicts params.stream=True: give one of them"


@pytest.mark.parametrize("stream", [1, "yes", 0])
def test_stream_must_be_a_bool_or_none(stream: Any) -> None:
    with pytest.raises(InvalidRequestError, match="stream must be a bool or None, not "):
        _runner(stream=stream)


@given(
    params_stream=st.booleans(),
    stream=st.none() | st.booleans(),
    temperature=st.none() | st.floats(0, 1),
)
def test_stream_shortcut_precedence(
    params_stream: bool, stream: bool | None, temperature: float | None
) -> None:
    params = Params(stream=params_stream, temperature=temperature)
    if params_stream and stream is False:
        with pytest.raises(InvalidRequestError):
            _runner(params=params, stream=stream)
        return
    chosen = _runner(params=params, stream=stream).params
    assert chosen.stream is (params_stream if stream is None else stream)
    assert dataclasses.replace(chosen, stream=params_stream) == params


def _gemini(*parts: dict[str, Any]) -> bytes:
    candidate = {"content": {"role": "model", "parts": list(parts)}, "finishReason": "STOP"}
    usage = {"promptTokenCount": 3, "candidatesTokenCount": 1}
    return json.dumps({"candidates": [candidate], "usageMetadata": usage}).encode()


def test_a_gemini_cache_warns_once_per_conversation_over_turns() -> None:
    tool = FunctionTool.create("weather", "Weather", {"type": "object"}, lambda _: "sunny")
    call = {"functionCall": {"id": "c1", "name": "weather", "args": {}}}
    transport = Recording(_gemini(call), _gemini({"text": "Sunny."}), _gemini({"text": "Yes."}))
    extra = (("cachedContent", '"cachedContents/abc"'),)
    runner = Runner(
        provider="gemini",
        model="gemini-2.5-flash",
        transport=transport,
        system=["Be brief."],
        tools=[tool],
        params=Params(extra=extra),
    )
    with pytest.warns(FieldsNotSentWarning) as caught:
        first = runner.run_turn(ConversationState(), "Weather?")
        second = runner.run_turn(first.state, "Sure?")
    assert len(first.bodies) == 2 and len(second.bodies) == 1  # three requests, one warning
    assert [str(w.message) for w in caught] == [
        "params.extra.cachedContent: the request names a cache, so the body leaves out its"
        " system prompt (systemInstruction) and tools (tools) (the cache holds them; Gemini"
        " refuses them beside a cachedContent)"
    ]
    assert all(b"systemInstruction" not in body for body in first.bodies + second.bodies)
    assert transport.sends == [{"stream": False, "model": "gemini-2.5-flash"}] * 3
