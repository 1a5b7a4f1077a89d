"""OpenAI Responses: the ``response`` object and its event stream.

Output items are a ``message`` (one ``output_text`` part) for the reply's text and one
``function_call`` item per tool call. The stream is ``response.created`` →
``response.in_progress`` → per item ``response.output_item.added``, then for a message
``response.content_part.added`` / ``response.output_text.delta`` / ``response.output_text.done``
/ ``response.content_part.done``, for a call ``response.function_call_arguments.delta`` /
``response.function_call_arguments.done``, then ``response.output_item.done`` → and
``response.completed``; each event carries ``sequence_number``. Usage: ``input_tokens``
includes ``input_tokens_details.cached_tokens``; ``cache_write_tokens`` is 0 (§2.2).
"""

from __future__ import annotations

from typing import Any

from llmcore.emulator.common import Turn, all_text, event, make_id, pieces
from llmcore.emulator.openai_cache import OpenAIPlan
from llmcore.emulator.prefix import item_bytes
from llmcore.emulator.script import Reply

__all__ = ["output_items", "response_events", "response_object", "responses_turn"]

_ASSISTANT_KINDS = frozenset({"function_call", "reasoning"})
_TEXT = frozenset({"input_text"})


def _is_assistant(item: Any) -> bool:
    if not isinstance(item, dict):
        return False
    if item.get("type", "message") == "message":
        return item.get("role") == "assistant"
    kind = item.get("type")
    return isinstance(kind, str) and kind in _ASSISTANT_KINDS  # "type" may be any JSON value


def _user_text(items: list[Any]) -> str:
    for item in items:
        if isinstance(item, str):
            return item
        if item.get("type", "message") != "message" or item.get("role") != "user":
            continue
        return all_text(item.get("content"), _TEXT)
    return ""


def responses_turn(body: dict[str, Any], history: list[Any]) -> Turn:
    """Return the turn of a validated Responses body whose earlier items are ``history``."""
    given = body.get("input", [])
    items = history + ([given] if isinstance(given, str) else list(given))
    runs, previous = 0, False
    for item in items:
        current = _is_assistant(item)
        runs += current and not previous
        previous = current
    return Turn(
        first_user_text=_user_text(items),
        index=runs,
        seed=item_bytes(items[0]) if items else b"",
    )


def output_items(reply: Reply, turn: Turn) -> list[dict[str, Any]]:
    """Return the completed output items of the reply."""
    items: list[dict[str, Any]] = []
    if reply.text:
        items.append(
            {
                "id": make_id("msg_emu_", turn.seed, turn.index),
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [
                    {"type": "output_text", "annotations": [], "logprobs": [], "text": reply.text}
                ],
            }
        )
    for number, call in enumerate(reply.tool_calls):
        items.append(
            {
                "id": make_id("fc_emu_", turn.seed, turn.index, number),
                "type": "function_call",
                "status": "completed",
                "arguments": call.arguments,
                "call_id": make_id("call_emu_", turn.seed, turn.index, number),
                "name": call.name,
            }
        )
    return items


def responses_usage(plan: OpenAIPlan, output_tokens: int) -> dict[str, Any]:
    """Return the Responses ``usage`` object."""
    return {
        "input_tokens": plan.prompt_tokens,
        "input_tokens_details": {"cached_tokens": plan.cached_tokens, "cache_write_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": plan.prompt_tokens + output_tokens,
    }


def response_object(
    body: dict[str, Any], ident: str, created: int, output: list[Any], usage: Any
) -> dict[str, Any]:
    """Return a ``response`` object; ``usage`` ``None`` and empty ``output`` while in progress."""
    return {
        "id": ident,
        "object": "response",
        "created_at": created,
        "status": "completed" if usage is not None else "in_progress",
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "model": body["model"],
        "output": output,
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": body.get("previous_response_id"),
        "prompt_cache_key": body.get("prompt_cache_key"),
        "prompt_cache_retention": body.get("prompt_cache_retention"),
        "reasoning": body.get("reasoning", {"effort": None, "summary": None}),
        "store": body.get("store", True),
        "temperature": body.get("temperature", 1.0),
        "text": body.get("text", {"format": {"type": "text"}}),
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools", []),
        "top_p": body.get("top_p", 1.0),
        "truncation": body.get("truncation", "disabled"),
        "usage": usage,
        "user": body.get("user"),
        "metadata": body.get("metadata", {}),
    }


def _message_events(index: int, item: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    part = item["content"][0]
    where = {"item_id": item["id"], "output_index": index, "content_index": 0}
    empty = {**part, "text": ""}
    out: list[tuple[str, dict[str, Any]]] = [
        ("response.content_part.added", {**where, "part": empty})
    ]
    out.extend(
        ("response.output_text.delta", {**where, "delta": piece, "logprobs": []})
        for piece in pieces(part["text"])
    )
    out.append(("response.output_text.done", {**where, "text": part["text"], "logprobs": []}))
    out.append(("response.content_part.done", {**where, "part": part}))
    return out


def _call_events(index: int, item: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    where = {"item_id": item["id"], "output_index": index}
    out: list[tuple[str, dict[str, Any]]] = [
        ("response.function_call_arguments.delta", {**where, "delta": piece})
        for piece in pieces(item["arguments"])
    ]
    out.append(
        (
            "response.function_call_arguments.done",
            {**where, "name": item["name"], "arguments": item["arguments"]},
        )
    )
    return out


def _item_events(index: int, item: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    if item["type"] == "message":
        opened: dict[str, Any] = {**item, "status": "in_progress", "content": []}
        inner = _message_events(index, item)
    else:
        opened = {**item, "status": "in_progress", "arguments": ""}
        inner = _call_events(index, item)
    return [
        ("response.output_item.added", {"output_index": index, "item": opened}),
        *inner,
        ("response.output_item.done", {"output_index": index, "item": item}),
    ]


def response_events(
    body: dict[str, Any], ident: str, created: int, output: list[Any], usage: Any
) -> list[bytes]:
    """Return the Responses event stream, one ``bytes`` per event."""
    started = response_object(body, ident, created, [], None)
    steps: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"response": started}),
        ("response.in_progress", {"response": started}),
    ]
    for index, item in enumerate(output):
        steps.extend(_item_events(index, item))
    steps.append(
        ("response.completed", {"response": response_object(body, ident, created, output, usage)})
    )
    return [
        event({"type": name, "sequence_number": number, **data}, name)
        for number, (name, data) in enumerate(steps)
    ]
