"""Import errors name an object's missing or odd ``type`` in words, never as ``None``."""

from __future__ import annotations

import pytest

from llmcore.errors import UnsupportedContentError
from llmcore.providers import get_provider
from llmcore.providers._import_common import typed

TOOL = {"name": "read_file", "input_schema": {"type": "object"}}


@pytest.mark.parametrize(
    ("kind", "words"),
    [("custom", "custom tool"), (None, "tool with no 'type'"), (5, "tool with 'type' 5")],
)
def test_typed_names_the_type(kind, words):
    assert typed(kind, "tool") == words


def test_an_anthropic_tool_read_as_chat_names_the_missing_type():
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [TOOL]}
    with pytest.raises(UnsupportedContentError) as info:
        get_provider("openai-chat").import_body(body)
    assert str(info.value) == (
        "$.tools[0]: tool with no 'type' has no place in llmcore's model (four content cases; "
        "function tools with a name, description, schema and strict)"
    )
