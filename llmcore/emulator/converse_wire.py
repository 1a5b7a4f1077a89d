"""Bedrock Converse responses: the JSON body and the ConverseStream event stream (SPEC V2, P8).

* ``POST /model/{modelId}/converse`` answers ``{"output":{"message":{"role":"assistant",
  "content":[…]}},"stopReason":…,"usage":{…},"metrics":{"latencyMs":…}}`` with ``text`` and
  ``toolUse`` blocks (``input`` spliced from the scripted argument bytes).
* ``POST /model/{modelId}/converse-stream`` answers ``application/vnd.amazon.eventstream``
  frames: ``messageStart`` → per block ``contentBlockStart`` (tool use only) /
  ``contentBlockDelta`` (``text`` or ``toolUse.input`` pieces) / ``contentBlockStop`` →
  ``messageStop`` → ``metadata`` (usage, metrics).

Frames are written by :func:`llmcore.emulator.eventstream.encode_message` (the framing
only; read back by botocore's own parser in the tests) with the headers ``:event-type``,
``:content-type`` ``application/json`` and ``:message-type`` ``event`` (``exception`` and
``:exception-type`` for an exception).
"""

from __future__ import annotations

from typing import Any, Final

from llmcore import jsonbytes
from llmcore.emulator.anthropic_cache import AnthropicUsage
from llmcore.emulator.common import Turn, make_id, pieces
from llmcore.emulator.eventstream import CONTENT_TYPE, encode_message
from llmcore.emulator.prefix import item_bytes
from llmcore.emulator.script import Reply

__all__ = [
    "CONTENT_TYPE",
    "converse_body",
    "converse_frames",
    "converse_turn",
    "event_frame",
    "exception_frame",
]

_LATENCY_MS: Final = 120


def converse_turn(body: dict[str, Any]) -> Turn:
    """Return the turn of a validated Converse body."""
    messages = body["messages"]
    first = messages[0]
    texts = [b["text"] for b in first["content"] if isinstance(b, dict) and "text" in b]
    return Turn(
        first_user_text="\n".join(texts),
        index=sum(1 for m in messages if m["role"] == "assistant"),
        seed=item_bytes(first),
    )


def _blocks(reply: Reply, turn: Turn) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.text:
        blocks.append({"text": reply.text})
    for number, call in enumerate(reply.tool_calls):
        use = {
            "toolUseId": make_id("tooluse_emu_", turn.seed, turn.index, number, length=22),
            "name": call.name,
            "input": jsonbytes.Raw(call.arguments),
        }
        blocks.append({"toolUse": use})
    return blocks


def usage_json(usage: AnthropicUsage, output_tokens: int) -> dict[str, Any]:
    """Return the Converse ``usage`` object (``inputTokens`` excludes cache reads and writes)."""
    total = usage.input_tokens + usage.cache_read + usage.cache_write + output_tokens
    return {
        "inputTokens": usage.input_tokens,
        "outputTokens": output_tokens,
        "totalTokens": total,
        "cacheReadInputTokens": usage.cache_read,
        "cacheWriteInputTokens": usage.cache_write,
    }


def _stop(reply: Reply) -> str:
    return "tool_use" if reply.tool_calls else "end_turn"


def converse_body(reply: Reply, turn: Turn, usage: AnthropicUsage) -> bytes:
    """Return the non-streamed Converse response body as JSON bytes."""
    message = {"role": "assistant", "content": _blocks(reply, turn)}
    return jsonbytes.dumps(
        {
            "output": {"message": message},
            "stopReason": _stop(reply),
            "usage": usage_json(usage, reply.output_tokens),
            "metrics": {"latencyMs": _LATENCY_MS},
        }
    )


def event_frame(event_type: str, payload: dict[str, Any]) -> bytes:
    """Return an ``event`` frame of ``event_type`` carrying ``payload`` as JSON."""
    headers = [
        (":event-type", event_type),
        (":content-type", "application/json"),
        (":message-type", "event"),
    ]
    return encode_message(headers, jsonbytes.dumps(payload))


def exception_frame(exception_type: str, message: str) -> bytes:
    """Return an ``exception`` frame (``throttlingException``…) with ``{"message": …}``."""
    headers = [
        (":exception-type", exception_type),
        (":content-type", "application/json"),
        (":message-type", "exception"),
    ]
    return encode_message(headers, jsonbytes.dumps({"message": message}))


def _block_frames(index: int, block: dict[str, Any]) -> list[bytes]:
    out: list[bytes] = []
    if "toolUse" in block:
        use = block["toolUse"]
        start: dict[str, Any] = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
        out.append(event_frame("contentBlockStart", {"start": start, "contentBlockIndex": index}))
        deltas: list[dict[str, Any]] = [
            {"toolUse": {"input": p}} for p in pieces(use["input"].text)
        ]
    else:
        deltas = [{"text": p} for p in pieces(block["text"])]
    out += [
        event_frame("contentBlockDelta", {"delta": d, "contentBlockIndex": index}) for d in deltas
    ]
    out.append(event_frame("contentBlockStop", {"contentBlockIndex": index}))
    return out


def converse_frames(reply: Reply, turn: Turn, usage: AnthropicUsage) -> list[bytes]:
    """Return the ConverseStream answer, one frame per ``bytes``."""
    out = [event_frame("messageStart", {"role": "assistant"})]
    for index, block in enumerate(_blocks(reply, turn)):
        out += _block_frames(index, block)
    out.append(event_frame("messageStop", {"stopReason": _stop(reply)}))
    metadata = {
        "usage": usage_json(usage, reply.output_tokens),
        "metrics": {"latencyMs": _LATENCY_MS},
    }
    out.append(event_frame("metadata", metadata))
    return out
