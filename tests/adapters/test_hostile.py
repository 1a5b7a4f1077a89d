"""Malformed framework messages: any input gives a history or a typed error naming where.

The fuzz feeds the Chat and Anthropic readers arbitrary JSON-like values (and ``None``, numbers,
strings or mappings where the message list goes), and the pydantic-ai reader its message types
holding values of the wrong type. Each example below once escaped as a ``TypeError``.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai import messages as pm

from llmcore.adapters import anthropic, openai_chat, pydantic_ai
from llmcore.errors import LLMCoreError, RequestFileError
from tests.examples import examples

KEYS = st.sampled_from(
    ["role", "content", "type", "text", "tool_calls", "tool_call_id", "id", "function", "name"]
    + ["arguments", "input", "tool_use_id", "source", "data", "media_type", "thinking"]
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | st.binary(max_size=4)
    | st.sampled_from(["user", "assistant", "system", "tool", "text", "tool_use", "\ud800"])
    | st.sampled_from(["tool_result", "image", "image_url", "function", "base64", "thinking"])
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=5),
    max_leaves=20,
)
READERS = {"openai-chat": openai_chat.to_history, "anthropic": anthropic.to_history}


@pytest.mark.full_count
@pytest.mark.parametrize("name", sorted(READERS))
@settings(
    max_examples=examples(full=150, sample=40),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(value=st.lists(VALUES, max_size=4) | VALUES)
def test_any_message_list_gives_a_history_or_a_typed_error(name: str, value: Any) -> None:
    try:
        READERS[name](value)
    except LLMCoreError as exc:
        assert exc.location is None or exc.location.startswith(("$", "messages", "system"))


@pytest.mark.parametrize("name", sorted(READERS) + ["pydantic-ai"])
@pytest.mark.parametrize(("value", "found"), [(None, "None"), (5, "int"), ({}, "dict")])
def test_a_message_list_that_is_not_a_list_is_named(name: str, value: Any, found: str) -> None:
    read = READERS.get(name, pydantic_ai.to_history)
    with pytest.raises(RequestFileError) as exc:
        read(value)
    assert str(exc.value) == f"messages: expected a list, found {found}"


def test_an_anthropic_system_that_is_a_number_is_named() -> None:
    with pytest.raises(RequestFileError) as exc:
        anthropic.to_history([], system=5)  # type: ignore[arg-type]
    assert str(exc.value) == "system: expected a list, found int"


def _unchecked(cls: type[Any], **fields: Any) -> Any:
    """A pydantic-ai dataclass with ``fields`` set as given (no type check, as at run time)."""
    made = cls.__new__(cls)
    for key, value in fields.items():
        object.__setattr__(made, key, value)
    return made


@pytest.mark.parametrize(
    ("message", "where"),
    [
        (_unchecked(pm.ModelRequest, parts=None, instructions=None), "messages[0].parts"),
        (_unchecked(pm.ModelResponse, parts=7), "messages[0].parts"),
        (
            pm.ModelRequest(parts=[_unchecked(pm.UserPromptPart, content=None)]),
            "messages[0].parts[0].content",
        ),
        (
            pm.ModelRequest(parts=[_unchecked(pm.SystemPromptPart, content=3)]),
            "messages[0].parts[0].content",
        ),
    ],
)
def test_pydantic_ai_parts_of_the_wrong_type_are_named(message: Any, where: str) -> None:
    with pytest.raises(RequestFileError) as exc:
        pydantic_ai.to_history([message])
    assert exc.value.location == where
