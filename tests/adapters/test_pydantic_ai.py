"""pydantic-ai ModelMessage lists ↔ llmcore history."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic_ai.messages import (
    BinaryContent,
    CachePoint,
    CompactionPart,
    ImageUrl,
    ModelRequest,
    ModelResponse,
    NativeToolCallPart,
    RetryFeedbackPart,
    RetryInfo,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from llmcore.adapters.pydantic_ai import from_history, to_history
from llmcore.errors import RequestFileError, UnsupportedContentError
from llmcore.messages import Image, Message, Text, ToolCall, ToolResult
from tests.adapters.helpers import check_refused

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 4


def _agent_run() -> list:
    return [
        ModelRequest(
            parts=[
                SystemPromptPart(content="Be brief."),
                UserPromptPart(content=["look", BinaryContent(data=PNG, media_type="image/png")]),
            ]
        ),
        ModelResponse(
            parts=[
                ThinkingPart(content="plan", signature="c2ln", provider_name="anthropic"),
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
                    tool_name="get_weather",
                    content="no station",
                    tool_call_id="t2",
                    outcome="retried",
                ),
                ToolReturnPart(tool_name="now", content={"h": 12}, tool_call_id="t3"),
                UserPromptPart(content="thanks"),
            ]
        ),
    ]


def test_an_agent_run_reads_into_history_with_thinking_dropped():
    result = to_history(_agent_run())
    assert result.system == ("Be brief.",)
    assert result.messages == (
        Message.user("look", Image(data=PNG, mime_type="image/png")),
        Message.assistant(
            "Checking.",
            ToolCall(id="t1", name="get_weather", arguments=b'{ "city" :"Paris"}'),
            ToolCall(id="t2", name="get_weather", arguments=b'{"city":"Oslo","n":1.5}'),
            ToolCall(id="t3", name="now", arguments=b""),
        ),
        Message.tool(
            ToolResult(call_id="t1", tool_name="get_weather", content=b"sunny"),
            ToolResult(call_id="t2", tool_name="get_weather", content=b"no station", is_error=True),
            ToolResult(call_id="t3", tool_name="now", content=b'{"h":12}'),
        ),
        Message.user("thanks"),
    )
    assert result.notes == (
        "messages[1].parts[0]: dropped a thinking part (provider-only data, M4)",
    )


def test_history_writes_one_request_per_run_of_user_and_tool_messages():
    history = to_history(_agent_run()).messages
    converted = from_history(history, system=("Be brief.",))
    kinds = [[type(p).__name__ for p in m.parts] for m in converted.messages]
    assert kinds == [
        ["SystemPromptPart", "UserPromptPart"],
        ["TextPart", "ToolCallPart", "ToolCallPart", "ToolCallPart"],
        ["ToolReturnPart", "ToolReturnPart", "ToolReturnPart", "UserPromptPart"],
    ]
    call = converted.messages[1].parts[1]
    assert call.args == '{ "city" :"Paris"}' and call.tool_call_id == "t1"
    error = converted.messages[2].parts[1]
    assert (error.outcome, error.content) == ("failed", "no station")
    assert to_history(converted.messages).messages == history


def test_denied_results_are_ordinary_and_retry_feedback_becomes_user_text():
    messages = [
        ModelRequest(parts=[UserPromptPart(content="go")]),
        ModelResponse(parts=[ToolCallPart(tool_name="rm", args="{}", tool_call_id="c")]),
        ModelRequest(
            parts=[
                ToolReturnPart(
                    tool_name="rm", content="denied by user", tool_call_id="c", outcome="denied"
                )
            ]
        ),
        ModelResponse(parts=[TextPart(content="ok")]),
        ModelRequest(
            parts=[
                RetryFeedbackPart(content="answer in French", retry=RetryInfo(cause="model_retry"))
            ]
        ),
    ]
    result = to_history(messages)
    assert result.messages[2] == Message.tool(
        ToolResult(call_id="c", tool_name="rm", content=b"denied by user")
    )
    feedback = result.messages[4].content[0]
    assert isinstance(feedback, Text) and "answer in French" in feedback.text
    assert result.notes == ("messages[4].parts[0]: retry feedback sent as user text",)


def test_data_url_images_and_cache_points():
    prompt = UserPromptPart(
        content=["a", ImageUrl(url="data:image/png;base64,iVBORw0KGgoAAAAA"), CachePoint()]
    )
    result = to_history([ModelRequest(parts=[prompt])])
    assert result.messages == (Message.user("a", Image(data=PNG, mime_type="image/png")),)
    assert result.notes == (
        "messages[0].parts[0].content[2]: dropped a CachePoint (llmcore places its own breakpoints)",
    )


def test_native_tool_parts_are_dropped_with_a_note():
    response = ModelResponse(
        parts=[
            NativeToolCallPart(tool_name="web_search", args={}, tool_call_id="s"),
            TextPart(content="found"),
        ]
    )
    result = to_history([ModelRequest(parts=[UserPromptPart(content="q")]), response])
    assert result.messages[1] == Message.assistant("found")
    assert result.notes == (
        "messages[1].parts[0]: dropped a builtin-tool-call part (provider-only data, M4)",
    )


@pytest.mark.parametrize(
    ("messages", "error", "location"),
    [
        (
            [
                ModelRequest(
                    parts=[UserPromptPart(content=[ImageUrl(url="https://example.com/a.png")])]
                )
            ],
            UnsupportedContentError,
            "messages[0].parts[0].content[0]",
        ),
        (
            [
                ModelRequest(
                    parts=[
                        UserPromptPart(
                            content=[BinaryContent(data=b"%PDF", media_type="application/pdf")]
                        )
                    ]
                )
            ],
            UnsupportedContentError,
            "messages[0].parts[0].content[0]",
        ),
        (
            [
                ModelRequest(parts=[UserPromptPart(content="q")]),
                ModelResponse(parts=[TextPart(content="a"), CompactionPart(content="summary")]),
            ],
            UnsupportedContentError,
            "messages[1].parts[1]",
        ),
        (
            [ModelRequest(parts=[UserPromptPart(content="q")]), {"role": "user"}],
            RequestFileError,
            "messages[1]",
        ),
        (
            [
                ModelRequest(
                    parts=[UserPromptPart(content=[ImageUrl(url="data:image/png;base64,@@")])]
                )
            ],
            RequestFileError,
            "messages[0].parts[0].content[0].url",
        ),
    ],
)
def test_bad_input_raises_a_typed_error_naming_the_index_and_part(messages, error, location):
    check_refused(to_history, messages, error, location)


def test_a_refused_part_is_named_by_its_kind():
    with pytest.raises(UnsupportedContentError) as caught:
        to_history([ModelResponse(parts=[CompactionPart(content="s")])])
    assert caught.value.feature == "compaction"


_HIDDEN = """
import sys
sys.modules["pydantic_ai"] = None
import llmcore, llmcore.adapters
assert "pydantic_ai" not in [m.split(".")[0] for m in sys.modules if sys.modules[m] is not None]
try:
    import llmcore.adapters.pydantic_ai
except llmcore.adapters.MissingDependencyError as exc:
    print(exc)
"""


def test_without_pydantic_ai_importing_the_adapter_raises_a_typed_error():
    done = subprocess.run(
        [sys.executable, "-c", _HIDDEN], capture_output=True, text=True, check=True
    )
    assert (
        done.stdout.strip()
        == "the pydantic-ai adapter needs pydantic-ai: pip install 'llmcore[pydantic-ai]'"
    )


def test_importing_llmcore_does_not_import_pydantic_ai():
    code = "import sys, llmcore, llmcore.adapters; print('pydantic_ai' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


@pytest.mark.filterwarnings("ignore:`RetryPromptPart` is deprecated")
def test_a_hand_built_legacy_retry_prompt_is_an_error_result():
    from pydantic_ai.messages import RetryPromptPart

    messages = [
        ModelRequest(parts=[UserPromptPart(content="go")]),
        ModelResponse(parts=[ToolCallPart(tool_name="f", args='{"n": "x"}', tool_call_id="c")]),
        ModelRequest(
            parts=[RetryPromptPart(content="n must be a number", tool_name="f", tool_call_id="c")]
        ),
    ]
    result = to_history(messages)
    assert result.messages[2] == Message.tool(
        ToolResult(call_id="c", tool_name="f", content=b"n must be a number", is_error=True)
    )
    assert result.notes == (
        "messages[2].parts[0]: a deprecated RetryPromptPart read as an error result",
    )


def test_written_messages_survive_pydantic_ais_own_serialization():
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    history = to_history(_agent_run()).messages
    written = from_history(history, system=("Be brief.",)).messages
    reloaded = ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(written))
    assert to_history(reloaded).messages == history
