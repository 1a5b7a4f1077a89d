"""Streamed text reaches the chat while the response arrives, on every wire format."""

from __future__ import annotations

import pytest

from llmcore.archive import Conversation
from llmcore.chat import Tapped, text_delta
from llmcore.emulator import Emulator, Reply, Script
from llmcore.providers import get_provider
from llmcore.providers._sse import SSEEvent
from llmcore.request import Params
from llmcore.runner import Runner
from llmcore.transport import HTTPTransport

ANSWER = "Streamed answer with several words, café — done."


@pytest.mark.parametrize("provider", ["anthropic", "openai-chat", "openai-responses"])
def test_text_deltas_add_up_to_the_answer(provider: str) -> None:
    seen: list[str] = []
    script = Script(replies=(Reply(text=ANSWER),), after_end=Reply(text="x"))
    with (
        Emulator(script=script) as emulator,
        HTTPTransport(
            base_urls={provider: emulator.base_url}, api_keys={provider: "emulator"}
        ) as transport,
    ):
        runner = Runner(
            provider=Tapped.of(get_provider(provider), seen.append),
            model="gpt-5.4-mini" if provider != "anthropic" else "claude-sonnet-4-6",
            transport=transport,
            params=Params(stream=True),
        )
        conversation = Conversation()
        runner.run_turn(conversation, "hi")
    assert "".join(seen) == ANSWER
    assert conversation.state.provider == provider


def test_other_events_show_nothing() -> None:
    assert text_delta(SSEEvent(event="message", data="[DONE]")) == ""
    tool = '{"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":"{"}}'
    assert text_delta(SSEEvent(event="content_block_delta", data=tool)) == ""
    chat = '{"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}'
    assert text_delta(SSEEvent(event="message", data=chat)) == ""
