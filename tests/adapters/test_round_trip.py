"""History → framework form → history is the identity, for each adapter (hypothesis).

What a form cannot hold is the documented exception (``tests.adapters.helpers.held``): bytes
that are not UTF-8 in a ``str``, omitted images, and in the Chat form consecutive tool
messages; each of the first two must be said in the notes.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from llmcore.adapters import anthropic, openai_chat, pydantic_ai
from tests.adapters.helpers import check_round_trip, histories
from tests.examples import examples

CASES = {
    "openai-chat": (
        openai_chat.from_history,
        lambda c: openai_chat.to_history(c.messages),
        True,
        True,
    ),
    "anthropic": (
        anthropic.from_history,
        lambda c: anthropic.to_history(c.messages, system=c.system),
        False,
        False,
    ),
    "pydantic-ai": (
        pydantic_ai.from_history,
        lambda c: pydantic_ai.to_history(c.messages),
        True,
        False,
    ),
}


@pytest.mark.full_count
@pytest.mark.parametrize("form", sorted(CASES))
@settings(max_examples=examples(full=200, sample=60))
@given(drawn=histories())
def test_history_to_framework_form_and_back_is_the_identity(form, drawn):
    write, read, arguments_as_text, merge_tool_messages = CASES[form]
    check_round_trip(
        drawn,
        write,
        read,
        arguments_as_text=arguments_as_text,
        merge_tool_messages=merge_tool_messages,
    )
