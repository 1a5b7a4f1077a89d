"""Hand-written wire bodies for the auditor tests (independent of llmcore.providers)."""

from __future__ import annotations

from typing import Any

from llmcore import jsonbytes

CC = {"type": "ephemeral"}


def anthropic(
    messages: list[dict[str, Any]],
    *,
    system: Any = "You are terse.",
    tools: list[dict[str, Any]] | None = None,
    model: str = "claude-sonnet-4-5",
    extra: dict[str, Any] | None = None,
) -> bytes:
    body: dict[str, Any] = {"model": model, "max_tokens": 1024}
    if tools is not None:
        body["tools"] = tools
    if system is not None:
        body["system"] = [{"type": "text", "text": system}] if isinstance(system, str) else system
    body["messages"] = messages
    body.update(extra or {})
    return jsonbytes.dumps(body)


def chat(messages: list[dict[str, Any]], *, model: str = "gpt-4.1", tools=None) -> bytes:
    body: dict[str, Any] = {"model": model, "messages": messages}
    if tools is not None:
        body["tools"] = tools
    return jsonbytes.dumps(body)


def responses(
    items: list[dict[str, Any]], *, model: str = "gpt-5", instructions="Be brief."
) -> bytes:
    body: dict[str, Any] = {"model": model, "instructions": instructions, "input": items}
    return jsonbytes.dumps(body)


def user(text: str, cache: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": text}
    if cache:
        block["cache_control"] = CC
    return {"role": "user", "content": [block]}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def tool_use(call_id: str, name: str, raw_input: str) -> dict[str, Any]:
    """An assistant tool call whose input bytes are spliced verbatim."""
    return {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": call_id, "name": name, "input": jsonbytes.Raw(raw_input)}
        ],
    }


def tool_result(call_id: str, text: str, cache: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": text}
    if cache:
        block["cache_control"] = CC
    return {"role": "user", "content": [block]}


def image_message(b64: str, text: str = "What is this?") -> dict[str, Any]:
    return {
        "role": "user",
        "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64}},
            {"type": "text", "text": text},
        ],
    }


TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]


def session() -> list[dict[str, Any]]:
    """A six-message Anthropic agent exchange with a tool call (no cache_control)."""
    return [
        user("Summarize README.md please."),
        tool_use("toolu_1", "read_file", '{"path":"README.md","limit":200}'),
        tool_result("toolu_1", "# llmcore\nA request layer."),
        assistant("It is a request layer."),
        user("And the license? ✓ unicode"),
        assistant("MIT."),
    ]


def with_last_cached(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Copy ``messages`` with a breakpoint on the last block of the last message (P3)."""
    out = [dict(m) for m in messages]
    last = dict(out[-1])
    blocks = [dict(b) for b in last["content"]]
    blocks[-1]["cache_control"] = CC
    last["content"] = blocks
    out[-1] = last
    return out
