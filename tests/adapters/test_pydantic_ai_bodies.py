"""pydantic-ai's own messages → llmcore history → pydantic-ai: the body it sends is unchanged.

The messages hold what pydantic-ai itself produces and llmcore normalizes on the way (``dict``
and ``None`` tool arguments, a non-string tool return, a ``retried`` outcome, an image). Each
model (Anthropic, OpenAI Chat) sends its next request through a mock transport that records the
body and answers 400, so no request leaves the process and none is retried.
"""

from __future__ import annotations

import asyncio

import httpx2
import pytest
from pydantic_ai import Agent
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import (
    BinaryContent,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider

from llmcore.adapters import pydantic_ai as adapter

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 4
MESSAGES = [
    ModelRequest(
        parts=[
            SystemPromptPart(content="Be brief."),
            UserPromptPart(content=["look", BinaryContent(data=PNG, media_type="image/png")]),
        ]
    ),
    ModelResponse(
        parts=[
            TextPart(content="Checking."),
            ToolCallPart(tool_name="get_weather", args='{ "city" :"Paris"}', tool_call_id="t1"),
            ToolCallPart(
                tool_name="get_weather", args={"city": "Oslo", "n": 1.5}, tool_call_id="t2"
            ),
            ToolCallPart(tool_name="now", args=None, tool_call_id="t3"),
        ]
    ),
    ModelRequest(
        parts=[
            ToolReturnPart(tool_name="get_weather", content="sunny", tool_call_id="t1"),
            ToolReturnPart(
                tool_name="get_weather", content="no station", tool_call_id="t2", outcome="retried"
            ),
            ToolReturnPart(tool_name="now", content={"h": 12, "zone": "é"}, tool_call_id="t3"),
        ]
    ),
    ModelResponse(parts=[TextPart(content="Done.")]),
]


def _model(form: str, client: httpx2.AsyncClient):
    if form == "anthropic":
        return AnthropicModel(
            "claude-sonnet-4-6", provider=AnthropicProvider(api_key="test", http_client=client)
        )
    return OpenAIChatModel(
        "gpt-5.4-mini", provider=OpenAIProvider(api_key="test", http_client=client)
    )


async def _next_body(form: str, history: list) -> bytes:
    sent: list[bytes] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(request.read())
        return httpx2.Response(
            400,
            json={
                "type": "error",
                "error": {"type": "invalid_request_error", "message": "recorded"},
            },
        )

    async with httpx2.AsyncClient(transport=httpx2.MockTransport(handler)) as client:
        agent = Agent(_model(form, client))

        @agent.tool_plain
        def get_weather(city: str) -> str:
            return city

        @agent.tool_plain
        def now() -> dict[str, int]:
            return {}

        with pytest.raises(ModelHTTPError):
            await agent.run("Next?", message_history=history)
    assert len(sent) == 1
    return sent[0]


@pytest.mark.parametrize("form", ["anthropic", "openai-chat"])
def test_the_next_body_is_unchanged_by_a_round_trip_through_history(form):
    read = adapter.to_history(MESSAGES)
    restored = adapter.from_history(read.messages, system=read.system).messages
    before = asyncio.run(_next_body(form, MESSAGES))
    after = asyncio.run(_next_body(form, restored))
    assert after == before
    for expected in (b'"t1"', b'"t2"', b'"t3"', b"iVBORw0KGgoAAAAA", b"no station", b"Be brief."):
        assert expected in before, expected
