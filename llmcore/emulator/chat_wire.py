"""OpenAI Chat Completions responses: the ``chat.completion`` object and its chunk stream.

The stream is ``data: <chunk>`` lines: a role chunk, ``content`` deltas, per tool call a chunk
with ``id``/``name`` and empty ``arguments`` then argument deltas, a chunk with
``finish_reason``, a usage chunk (``choices: []``) when ``stream_options.include_usage`` is
true, and ``data: [DONE]``. Usage uses PROVIDER-RULES §2.2 names: ``prompt_tokens`` includes
``prompt_tokens_details.cached_tokens``; ``cache_write_tokens`` is 0.
"""

from __future__ import annotations

from typing import Any

from llmcore.emulator.common import Turn, all_text, event, make_id, pieces
from llmcore.emulator.openai_cache import OpenAIPlan
from llmcore.emulator.prefix import item_bytes
from llmcore.emulator.script import Reply

__all__ = ["chat_body", "chat_events", "chat_turn"]

FINGERPRINT = "fp_emulator"
"""The ``system_fingerprint`` every response carries."""


_TEXT = frozenset({"text"})


def chat_turn(body: dict[str, Any]) -> Turn:
    """Return the turn of a validated Chat body."""
    messages = body["messages"]
    first = next((m for m in messages if m["role"] == "user"), messages[0])
    return Turn(
        first_user_text=all_text(first.get("content"), _TEXT),
        index=sum(1 for m in messages if m["role"] == "assistant"),
        seed=item_bytes(messages[0]),
    )


def chat_usage(plan: OpenAIPlan, output_tokens: int) -> dict[str, Any]:
    """Return the Chat ``usage`` object."""
    return {
        "prompt_tokens": plan.prompt_tokens,
        "completion_tokens": output_tokens,
        "total_tokens": plan.prompt_tokens + output_tokens,
        "prompt_tokens_details": {
            "cached_tokens": plan.cached_tokens,
            "audio_tokens": 0,
            "cache_write_tokens": 0,
        },
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _calls(reply: Reply, turn: Turn, choice: int = 0) -> list[dict[str, Any]]:
    extra = (choice,) if choice else ()
    return [
        {
            "id": make_id("call_emu_", turn.seed, turn.index, number, *extra),
            "type": "function",
            "function": {"name": call.name, "arguments": call.arguments},
        }
        for number, call in enumerate(reply.tool_calls)
    ]


def _choice(reply: Reply, turn: Turn, index: int) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": reply.text or None,
        "refusal": None,
        "annotations": [],
    }
    if reply.tool_calls:
        message["tool_calls"] = _calls(reply, turn, index)
    return {
        "index": index,
        "message": message,
        "logprobs": None,
        "finish_reason": "tool_calls" if reply.tool_calls else "stop",
    }


def chat_body(
    reply: Reply, turn: Turn, plan: OpenAIPlan, model: str, ident: str, created: int, n: int = 1
) -> dict[str, Any]:
    """Return the non-streamed ``chat.completion`` object (to be written with jsonbytes).

    ``n`` choices carry the same reply (each billed as output); tool call ids differ per choice.
    """
    return {
        "id": ident,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [_choice(reply, turn, index) for index in range(n)],
        "usage": chat_usage(plan, n * reply.output_tokens),
        "service_tier": "default",
        "system_fingerprint": FINGERPRINT,
    }


def _deltas(reply: Reply, turn: Turn, choice: int) -> list[dict[str, Any]]:
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": "", "refusal": None}]
    deltas.extend({"content": piece} for piece in pieces(reply.text))
    for number, call in enumerate(_calls(reply, turn, choice)):
        head = {
            "index": number,
            "id": call["id"],
            "type": "function",
            "function": {"name": call["function"]["name"], "arguments": ""},
        }
        deltas.append({"tool_calls": [head]})
        deltas.extend(
            {"tool_calls": [{"index": number, "function": {"arguments": piece}}]}
            for piece in pieces(call["function"]["arguments"])
        )
    return deltas


def chat_events(
    reply: Reply,
    turn: Turn,
    plan: OpenAIPlan,
    model: str,
    ident: str,
    created: int,
    include_usage: bool,
    n: int = 1,
) -> list[bytes]:
    """Return the chunk stream, one ``bytes`` per ``data:`` line, ``[DONE]`` last.

    With ``n`` choices, each choice's chunks follow the previous one's (``index`` tells them
    apart), as clients merge them by index.
    """
    base: dict[str, Any] = {
        "id": ident,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "service_tier": "default",
        "system_fingerprint": FINGERPRINT,
    }

    def chunk(choices: list[dict[str, Any]], usage: Any = None) -> bytes:
        data = {**base, "choices": choices}
        if include_usage:
            data["usage"] = usage
        return event(data)

    finish = "tool_calls" if reply.tool_calls else "stop"
    out: list[bytes] = []
    for index in range(n):
        out.extend(
            chunk([{"index": index, "delta": delta, "logprobs": None, "finish_reason": None}])
            for delta in _deltas(reply, turn, index)
        )
        out.append(
            chunk([{"index": index, "delta": {}, "logprobs": None, "finish_reason": finish}])
        )
    if include_usage:
        out.append(chunk([], chat_usage(plan, n * reply.output_tokens)))
    out.append(b"data: [DONE]\n\n")
    return out
