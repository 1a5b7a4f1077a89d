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


def _data(obj: Any) -> str:
    return _sse(None, obj)


def chat_stream(response: dict[str, Any]) -> bytes:
    head = {k: response[k] for k in ("id", "created", "model") if k in response}
    head["object"] = "chat.completion.chunk"
    choice = response["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return _data({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    out = [chunk({"role": "assistant", "content": ""})]
    for key in ("content", "refusal"):
        if message.get(key):
            out.extend(chunk({key: p}) for p in _pieces(message[key]))
    for index, call in enumerate(message.get("tool_calls") or []):
        kind = call.get("type", "function")
        inner_key, arg_key = ("custom", "input") if kind == "custom" else ("function", "arguments")
        inner = call[inner_key]
        first = {
            "index": index,
            "id": call["id"],
            "type": kind,
            inner_key: {"name": inner["name"], arg_key: ""},
        }
        out.append(chunk({"tool_calls": [first]}))
        for piece in _pieces(inner[arg_key]):
            out.append(chunk({"tool_calls": [{"index": index, inner_key: {arg_key: piece}}]}))
    out.append(chunk({}, choice.get("finish_reason")))
    out.append(_data({**head, "choices": [], "usage": response.get("usage")}))
    out.append("data: [DONE]\n\n")
    return "".join(out).encode("utf-8")


def responses_stream(response: dict[str, Any]) -> bytes:
    seq = iter(range(10_000))

    def event(kind: str, **fields: Any) -> str:
        return _sse(kind, {"type": kind, "sequence_number": next(seq), **fields})

    started = {**response, "status": "in_progress", "output": [], "usage": None}
    out = [
        event("response.created", response=started),
        event("response.in_progress", response=started),
    ]
    for index, item in enumerate(response["output"]):
        out.append(
            event(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress"},
            )
        )
        if item["type"] == "message":
            for part_index, part in enumerate(item["content"]):
                for piece in _pieces(part.get("text", "")):
                    out.append(
                        event(
                            "response.output_text.delta",
                            item_id=item.get("id"),
                            output_index=index,
                            content_index=part_index,
                            delta=piece,
                        )
                    )
        elif item["type"] == "function_call":
            for piece in _pieces(item["arguments"]):
                out.append(
                    event(
                        "response.function_call_arguments.delta",
                        item_id=item.get("id"),
                        output_index=index,
                        delta=piece,
                    )
                )
        out.append(event("response.output_item.done", output_index=index, item=item))
    terminal = (
        "response.incomplete" if response.get("status") == "incomplete" else "response.completed"
    )
    out.append(event(terminal, response=response))
    return "".join(out).encode("utf-8")
