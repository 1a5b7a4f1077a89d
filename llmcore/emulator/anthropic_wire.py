"""Anthropic Messages responses: the JSON message and its SSE stream (SPEC V2).

Reads the turn from the request (assistant messages before a trailing one) and writes the
scripted reply in the API's shapes: a ``message`` object with ``thinking`` (when the request
turns thinking on) / ``text`` / ``tool_use`` blocks
(``input`` spliced from the scripted argument bytes) and usage with the exact field names of
PROVIDER-RULES §1.5; or the event stream ``message_start`` → ``ping`` → per block
``content_block_start`` / ``content_block_delta`` (``thinking_delta`` then ``signature_delta``,
``text_delta``, ``input_json_delta``) /
``content_block_stop`` → ``message_delta`` (stop reason and final usage) → ``message_stop``.
"""

from __future__ import annotations

from typing import Any

from llmcore import jsonbytes
from llmcore.emulator.anthropic_cache import AnthropicUsage
from llmcore.emulator.common import Turn, all_text, event, make_id, pieces
from llmcore.emulator.prefix import item_bytes
from llmcore.emulator.script import Reply
from llmcore.emulator.thinking import sign

__all__ = ["anthropic_turn", "message_body", "message_events"]


_TEXT = frozenset({"text"})


def anthropic_turn(body: dict[str, Any]) -> Turn:
    """Return the turn of a validated Messages body."""
    messages = body["messages"]
    done = messages[:-1] if messages[-1]["role"] == "assistant" else messages
    first = next((m for m in messages if m["role"] == "user"), messages[0])
    return Turn(
        first_user_text=all_text(first["content"], _TEXT),
        index=sum(1 for m in done if m["role"] == "assistant"),
        seed=item_bytes(messages[0]),
    )


def _blocks(reply: Reply, turn: Turn) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.thinking:
        blocks.append(
            {"type": "thinking", "thinking": reply.thinking, "signature": sign(reply.thinking)}
        )
    if reply.text:
        blocks.append({"type": "text", "text": reply.text})
    for number, call in enumerate(reply.tool_calls):
        blocks.append(
            {
                "type": "tool_use",
                "id": make_id("toolu_emu_", turn.seed, turn.index, number),
                "name": call.name,
                "input": jsonbytes.Raw(call.arguments),
            }
        )
    return blocks


def usage_json(usage: AnthropicUsage, output_tokens: int) -> dict[str, Any]:
    """Return the ``usage`` object (PROVIDER-RULES §1.5 field names)."""
    return {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_write,
        "cache_read_input_tokens": usage.cache_read,
        "cache_creation": {
            "ephemeral_5m_input_tokens": usage.cache_write_5m,
            "ephemeral_1h_input_tokens": usage.cache_write_1h,
        },
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }


def _stop_reason(reply: Reply) -> str:
    return "tool_use" if reply.tool_calls else "end_turn"


def message_body(
    reply: Reply, turn: Turn, usage: AnthropicUsage, model: str, message_id: str
) -> bytes:
    """Return the non-streamed response body (a ``message`` object) as JSON bytes."""
    return jsonbytes.dumps(
        {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": _blocks(reply, turn),
            "stop_reason": _stop_reason(reply),
            "stop_sequence": None,
            "usage": usage_json(usage, reply.output_tokens),
        }
    )


def _block_events(index: int, block: dict[str, Any]) -> list[bytes]:
    if block["type"] == "text":
        start: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": piece} for piece in pieces(block["text"])]
    elif block["type"] == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [
            {"type": "thinking_delta", "thinking": piece} for piece in pieces(block["thinking"])
        ]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    else:
        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        text = block["input"].text
        deltas = [{"type": "input_json_delta", "partial_json": ""}]
        deltas += [{"type": "input_json_delta", "partial_json": p} for p in pieces(text)]
    out = [
        event(
            {"type": "content_block_start", "index": index, "content_block": start},
            "content_block_start",
        )
    ]
    out.extend(
        event({"type": "content_block_delta", "index": index, "delta": d}, "content_block_delta")
        for d in deltas
    )
    out.append(event({"type": "content_block_stop", "index": index}, "content_block_stop"))
    return out


def message_events(
    reply: Reply, turn: Turn, usage: AnthropicUsage, model: str, message_id: str
) -> list[bytes]:
    """Return the SSE stream of the response, one ``bytes`` per event."""
    start_usage = usage_json(usage, 1)
    final = usage_json(usage, reply.output_tokens)
    del final["service_tier"], final["cache_creation"]
    message: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": start_usage,
    }
    out = [
        event({"type": "message_start", "message": message}, "message_start"),
        event({"type": "ping"}, "ping"),
    ]
    for index, block in enumerate(_blocks(reply, turn)):
        out.extend(_block_events(index, block))
    delta = {"stop_reason": _stop_reason(reply), "stop_sequence": None}
    out.append(event({"type": "message_delta", "delta": delta, "usage": final}, "message_delta"))
    out.append(event({"type": "message_stop"}, "message_stop"))
    return out
