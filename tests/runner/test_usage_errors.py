"""The runner's caller mistakes are typed errors, raised where they are made (issue 22).

Before: ``run_turn(conv, 123)`` raised ``AttributeError``, a non-callable ``FunctionTool`` was
accepted, ``Runner(provider="openai")`` failed only at the first turn, and ``run_turn`` with only
an async transport did not say to use ``arun_turn``.
"""

from __future__ import annotations

import asyncio

import pytest

from llmcore import Conversation, ConversationState, FunctionTool, Runner, Tool
from llmcore.errors import InvalidRequestError, UnknownProviderError, UserError
from llmcore.providers.base import ParsedResponse

TOOL = Tool.from_schema("f", "A tool.", {"type": "object"})


class _Async:
    async def send(self, provider: object, body: bytes, *, stream: bool = False) -> ParsedResponse:
        raise AssertionError("never sent")


class _Sync:
    def send(self, provider: object, body: bytes, *, stream: bool = False) -> ParsedResponse:
        raise AssertionError("never sent")


def _sync() -> _Sync:
    return _Sync()


@pytest.mark.parametrize("message", [123, None, b"bytes", ["a list"]])
def test_run_turn_refuses_a_message_that_is_not_text(message: object) -> None:
    runner = Runner(provider="anthropic", model="claude-sonnet-4-6", transport=_sync())
    with pytest.raises(InvalidRequestError, match="must be text or a user Message") as caught:
        runner.run_turn(Conversation(), message)  # type: ignore[arg-type]
    assert caught.value.location == "message"


def test_run_turn_refuses_a_conversation_of_another_type() -> None:
    runner = Runner(provider="anthropic", model="claude-sonnet-4-6", transport=_sync())
    with pytest.raises(InvalidRequestError, match="not dict") as caught:
        runner.run_turn({}, "hi")  # type: ignore[arg-type]
    assert caught.value.location == "conversation"


def test_function_tool_refuses_a_non_callable() -> None:
    with pytest.raises(InvalidRequestError, match="'f': the function must be callable, not str"):
        FunctionTool(tool=TOOL, function="not callable")  # type: ignore[arg-type]
    with pytest.raises(InvalidRequestError, match="needs a Tool, not dict"):
        FunctionTool(tool={"name": "f"}, function=print)  # type: ignore[arg-type]


def test_runner_refuses_a_plain_tool_in_tools() -> None:
    with pytest.raises(InvalidRequestError, match=r"tools\[0\] must be a FunctionTool.*wrap"):
        Runner(provider="anthropic", model="m", tools=[TOOL])  # type: ignore[list-item]


def test_runner_refuses_an_unknown_provider_at_construction() -> None:
    with pytest.raises(UnknownProviderError, match="did you mean openai-chat or openai-responses"):
        Runner(provider="openai", model="gpt-5.4-mini")
    runner = Runner(provider="anthropic", model="claude-sonnet-4-6")
    with pytest.raises(UnknownProviderError):
        runner.provider = "antropic"
    assert runner.provider == "anthropic"
    with pytest.raises(InvalidRequestError, match="provider name or instance, not int"):
        Runner(provider=3, model="m")  # type: ignore[arg-type]


def test_runner_refuses_an_empty_model() -> None:
    with pytest.raises(InvalidRequestError, match="model must be a non-empty string"):
        Runner(provider="anthropic", model="")


def test_runner_system_string_is_one_block() -> None:
    runner = Runner(provider="anthropic", model="m", system="You are terse.")
    assert runner.system == ("You are terse.",)


def test_run_turn_with_only_an_async_transport_says_arun_turn() -> None:
    runner = Runner(provider="anthropic", model="m", async_transport=_Async())  # type: ignore[arg-type]
    with pytest.raises(InvalidRequestError, match=r"use await runner\.arun_turn"):
        runner.run_turn(ConversationState(), "hi")


def test_arun_turn_with_only_a_sync_transport_says_run_turn() -> None:
    runner = Runner(provider="anthropic", model="m", transport=_sync())
    with pytest.raises(InvalidRequestError, match=r"use runner\.run_turn"):
        asyncio.run(runner.arun_turn(ConversationState(), "hi"))


def test_every_usage_error_is_a_user_error() -> None:
    assert issubclass(InvalidRequestError, UserError)
    assert issubclass(UnknownProviderError, UserError)
