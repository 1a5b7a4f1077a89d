"""Re-emit a recorded non-streamed answer as the provider's event stream (for equivalence tests).

Independent of llmcore's parsers: built from the providers' documented stream shapes
(https://platform.claude.com/docs/en/build-with-claude/streaming,
https://platform.openai.com/docs/api-reference/chat-streaming,
https://platform.openai.com/docs/api-reference/responses-streaming).
"""

from __future__ import annotations

import json
from typing import Any


def _sse(event: str | None, data: Any) -> str:
    text = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n"


def _pieces(text: str, parts: int = 3) -> list[str]:
    if not text:
        return [""]
    step = max(1, len(text) // parts)
    return [text[i : i + step] for i in range(0, len(text), step)]


def anthropic_stream(response: dict[str, Any]) -> bytes:
    usage = dict(response["usage"])
    start_usage = {k: v for k, v in usage.items() if k != "output_tokens"}
    start_usage["output_tokens"] = 1
    message = {k: v for k, v in response.items() if k not in ("content", "usage")}
    message.update(content=[], stop_reason=None, stop_sequence=None, usage=start_usage)
    out = [_sse("message_start", {"type": "message_start", "message": message})]
    out.append(_sse("ping", {"type": "ping"}))
    for index, block in enumerate(response["content"]):
        out.extend(_anthropic_block(index, block))
    delta = {
        "stop_reason": response.get("stop_reason"),
        "stop_sequence": response.get("stop_sequence"),
    }
    out.append(
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": delta,
                "usage": {"output_tokens": usage["output_tokens"]},
            },
        )
    )
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return "".join(out).encode("utf-8")


def _delta(index: int, delta: dict[str, Any]) -> str:
    return _sse(
        "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
    )


def _anthropic_block(index: int, block: dict[str, Any]) -> list[str]:
    kind = block["type"]
    out = []
    if kind == "text":
        start = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"])]
    elif kind == "tool_use":
        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        piece = json.dumps(block["input"])  # the same text as its span in body_bytes(response)
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(piece)]
    elif kind == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(block["thinking"])]
        deltas.append({"type": "signature_delta", "signature": block.get("signature", "")})
    else:
        start, deltas = block, []
    out.append(
        _sse(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        )
    )
    out.extend(_delta(index, d) for d in deltas)
    out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    return out
