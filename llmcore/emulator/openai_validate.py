"""What the emulator refuses in OpenAI Chat Completions and Responses bodies (PROVIDER-RULES §2).

Errors use OpenAI's shape ``{"error":{"message","type","param","code"}}``. Chat checks: unknown
top-level field (``Unrecognized request argument supplied: X``), missing ``model`` /
``messages``, an empty ``messages``, unknown roles and content part types, malformed tool calls
and tools, tool-call pairing both ways (§2.3), bad ``prompt_cache_retention``. Responses checks:
unknown parameter (``Unknown parameter: 'X'.``), missing ``model``, unknown item types and roles,
function-call pairing both ways (§2.3), a reasoning item without its following item (§2.4).
"""

from __future__ import annotations

from typing import Any, Final

from llmcore.emulator.errors import Rejection

__all__ = ["validate_chat", "validate_responses"]

CHAT_TOP_LEVEL: Final = frozenset(
    {
        "audio", "frequency_penalty", "function_call", "functions", "logit_bias", "logprobs",
        "max_completion_tokens", "max_tokens", "messages", "metadata", "modalities", "model",
        "moderation", "n", "parallel_tool_calls", "prediction", "presence_penalty",
        "prompt_cache_key", "prompt_cache_options", "prompt_cache_retention",
        "reasoning_effort", "response_format", "safety_identifier", "seed", "service_tier",
        "stop", "store", "stream", "stream_options", "temperature", "tool_choice", "tools",
        "top_logprobs", "top_p", "user", "verbosity", "web_search_options",
    }
)  # fmt: skip
"""Chat Completions top-level fields (openai 3.57 ``CompletionCreateParams``, plus ``stream``)."""

RESPONSES_TOP_LEVEL: Final = frozenset(
    {
        "access_programs", "background", "background_options", "client_metadata",
        "context_management",
        "conversation", "image", "include", "input", "instructions", "max_output_tokens",
        "max_tool_calls", "metadata", "model", "moderation", "parallel_tool_calls",
        "previous_response_id", "prompt", "prompt_cache_key", "prompt_cache_options",
        "prompt_cache_retention", "reasoning", "safety_identifier", "service_tier", "store",
        "stream", "stream_options", "temperature", "text", "tool_choice", "tools",
        "top_logprobs", "top_p", "truncation", "user",
    }
)  # fmt: skip
"""Responses top-level fields (openai 3.57 ``ResponseCreateParams``, plus ``stream``, plus
``client_metadata``: an object of strings the API accepts and Codex CLI 0.171 sends on every
request, not yet in the SDK's types)."""

CHAT_ROLES: Final = ("system", "assistant", "user", "function", "tool", "developer")
CHAT_PARTS: Final = ("text", "image_url", "input_audio", "refusal", "file")
RESPONSES_ITEMS: Final = (
    "message", "function_call", "function_call_output", "reasoning", "item_reference",
)  # fmt: skip
RESPONSES_PARTS: Final = ("input_text", "input_image", "input_file", "output_text", "refusal")


def _supported(values: tuple[str, ...]) -> str:
    quoted = [f"'{value}'" for value in values]
    return (
        ", ".join(quoted[:-1]) + f", and {quoted[-1]}"
        if len(quoted) > 2
        else (" and ".join(quoted))
    )


def _invalid_value(value: Any, allowed: tuple[str, ...], param: str) -> Rejection:
    return Rejection(
        f"Invalid value: '{value}'. Supported values are: {_supported(allowed)}.",
        param=param,
        code="invalid_value",
    )


def _missing(param: str) -> Rejection:
    return Rejection(
        f"Missing required parameter: '{param}'.", param=param, code="missing_required_parameter"
    )


def _retention(body: dict[str, Any]) -> None:
    value = body.get("prompt_cache_retention")
    if value is not None and value not in ("in_memory", "24h"):
        raise _invalid_value(value, ("in_memory", "24h"), "prompt_cache_retention")


def _choices(n: Any) -> None:
    """Refuse an ``n`` that is not an integer from 1 to 128 (Chat ``n``, openai 3.57 docs)."""
    if n is None:
        return
    if not isinstance(n, int) or isinstance(n, bool):
        raise Rejection(
            "Invalid type for 'n': expected an integer.", param="n", code="invalid_type"
        )
    if n < 1:
        raise Rejection(
            "Invalid 'n': integer below minimum value. Expected a value >= 1, but got "
            f"{n} instead.",
            param="n",
            code="integer_below_min_value",
        )
    if n > 128:
        raise Rejection(
            "Invalid 'n': integer above maximum value. Expected a value <= 128, but got "
            f"{n} instead.",
            param="n",
            code="integer_above_max_value",
        )


def _chat_tools(tools: Any) -> None:
    if not isinstance(tools, list):
        raise Rejection("Invalid type for 'tools': expected an array.", param="tools")
    for index, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise _missing(f"tools[{index}].function.name")


def _chat_content(message: dict[str, Any], index: int) -> None:
    content = message.get("content")
    if content is None:
        if message["role"] == "assistant" and message.get("tool_calls"):
            return
        raise _missing(f"messages[{index}].content")
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise Rejection(
            f"Invalid type for 'messages[{index}].content': expected one of a string or array.",
            param=f"messages[{index}].content",
            code="invalid_type",
        )
    for p_index, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in CHAT_PARTS:
            raise _invalid_value(kind, CHAT_PARTS, f"messages[{index}].content[{p_index}].type")


def _chat_tool_calls(message: dict[str, Any], index: int) -> list[str]:
    calls = message.get("tool_calls") or []
    ids: list[str] = []
    for c_index, call in enumerate(calls):
        where = f"messages[{index}].tool_calls[{c_index}]"
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(call, dict) or not isinstance(call.get("id"), str):
            raise _missing(f"{where}.id")
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise _missing(f"{where}.function.name")
        if not isinstance(function.get("arguments"), str):
            raise _missing(f"{where}.function.arguments")
        ids.append(call["id"])
    return ids


def _chat_pairing(messages: list[dict[str, Any]]) -> None:
    """PROVIDER-RULES §2.3: each tool_call answered by the tool messages right after it."""
    pending: list[str] = []
    opener = -1
    for index, message in enumerate(messages):
        role = message["role"]
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                raise Rejection(
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'.",
                    param=f"messages.[{index}].role",
                )
            pending.remove(call_id)
            continue
        _unanswered(pending, opener)
        pending = _chat_tool_calls(message, index) if role == "assistant" else []
        opener = index
    _unanswered(pending, opener)


def _unanswered(pending: list[str], opener: int) -> None:
    if pending:
        raise Rejection(
            "An assistant message with 'tool_calls' must be followed by tool messages responding "
            "to each 'tool_call_id'. The following tool_call_ids did not have response "
            f"messages: {', '.join(pending)}",
            param=f"messages.[{opener}].role",
        )


def validate_chat(body: Any) -> dict[str, Any]:
    """Check a parsed Chat Completions body; return it.

    Raises:
        Rejection: The first rule broken, in OpenAI's error shape (HTTP 400).
    """
    if not isinstance(body, dict):
        raise Rejection("The request body must be a JSON object.")
    for key in body:
        if key not in CHAT_TOP_LEVEL:
            raise Rejection(f"Unrecognized request argument supplied: {key}")
    if not isinstance(body.get("model"), str):
        raise Rejection("you must provide a model parameter")
    messages = body.get("messages")
    if messages is None:
        raise _missing("messages")
    if not isinstance(messages, list) or not messages:
        raise Rejection(
            "Invalid 'messages': empty array. Expected an array with minimum length 1, but got "
            "an empty array instead.",
            param="messages",
            code="empty_array",
        )
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in CHAT_ROLES:
            raise _invalid_value(role, CHAT_ROLES, f"messages[{index}].role")
        _chat_content(message, index)
    if "tools" in body:
        _chat_tools(body["tools"])
    _retention(body)
    _choices(body.get("n"))
    _chat_pairing(messages)
    return body


def _item_kind(item: Any, index: int) -> str:
    if isinstance(item, str):  # a stored string input: one user message
        return "message"
    if isinstance(item, dict) and "type" not in item and "role" in item:
        return "message"
    kind = item.get("type") if isinstance(item, dict) else None
    if kind not in RESPONSES_ITEMS:
        raise _invalid_value(kind, RESPONSES_ITEMS, f"input[{index}].type")
    return str(kind)


def _responses_message(item: dict[str, Any], index: int) -> None:
    roles = ("user", "assistant", "system", "developer")
    if item.get("role") not in roles:
        raise _invalid_value(item.get("role"), roles, f"input[{index}].role")
    content = item.get("content")
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise _missing(f"input[{index}].content")
    for p_index, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in RESPONSES_PARTS:
            raise _invalid_value(kind, RESPONSES_PARTS, f"input[{index}].content[{p_index}].type")


def _responses_call(item: dict[str, Any], index: int, kind: str) -> None:
    keys = ("call_id", "name", "arguments") if kind == "function_call" else ("call_id",)
    for key in keys:
        if not isinstance(item.get(key), str):
            raise _missing(f"input[{index}].{key}")
    if kind == "function_call_output" and "output" not in item:
        raise _missing(f"input[{index}].output")


def _responses_pairing(items: list[Any]) -> None:
    """PROVIDER-RULES §2.3–§2.4: calls answered, no orphan outputs, reasoning followed."""
    calls: set[str] = set()
    outputs: set[str] = set()
    for index, item in enumerate(items):
        kind = _item_kind(item, index)
        if kind == "function_call":
            calls.add(item["call_id"])
        elif kind == "function_call_output":
            if item["call_id"] not in calls:
                raise Rejection(
                    f"No tool call found for function call output with call_id {item['call_id']}.",
                    param="input",
                )
            outputs.add(item["call_id"])
        elif kind == "reasoning" and index == len(items) - 1:
            raise Rejection(
                f"Item '{item.get('id')}' of type 'reasoning' was provided without its required "
                "following item.",
                param="input",
            )
    for call_id in sorted(calls - outputs):
        raise Rejection(f"No tool output found for function call {call_id}.", param="input")


def _responses_items(items: list[Any]) -> None:
    for index, item in enumerate(items):
        kind = _item_kind(item, index)
        if kind == "message":
            _responses_message(item, index)
        elif kind in ("function_call", "function_call_output"):
            _responses_call(item, index, kind)


def validate_responses(body: Any, history: list[Any]) -> dict[str, Any]:
    """Check a parsed Responses body; ``history`` holds items of ``previous_response_id``.

    Raises:
        Rejection: The first rule broken, in OpenAI's error shape (HTTP 400).
    """
    if not isinstance(body, dict):
        raise Rejection("The request body must be a JSON object.")
    for key in body:
        if key not in RESPONSES_TOP_LEVEL:
            raise Rejection(f"Unknown parameter: '{key}'.", param=key, code="unknown_parameter")
    if not isinstance(body.get("model"), str):
        raise _missing("model")
    given = body.get("input", [])
    if not isinstance(given, str | list):
        raise Rejection(
            "Invalid type for 'input': expected one of a string or array.",
            param="input",
            code="invalid_type",
        )
    for index, tool in enumerate(body.get("tools") or []):
        if isinstance(tool, dict) and tool.get("type") == "function" and "name" not in tool:
            raise _missing(f"tools[{index}].name")
    _retention(body)
    if isinstance(given, list):
        _responses_items(given)
        _responses_pairing(history + given)
    return body
