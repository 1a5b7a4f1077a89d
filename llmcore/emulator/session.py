"""A reference Anthropic client for the built-in agent script, used by tests and the benchmark.

:func:`run_agent_session` plays :data:`~llmcore.emulator.agent.AGENT_SCRIPT` end to end against
an emulator over HTTP: it sends Messages requests written by hand (independent of
:mod:`llmcore.providers`), runs each tool call with :class:`~llmcore.emulator.agent.AgentWorkspace`,
answers with ``tool_result`` blocks (the image of ``view_image`` follows in the same user message
after the results, SPEC M2), and after each text reply sends the next user prompt. Breakpoints:
the last tool, the system block, the newest message's last block and the last block of the
message that ended the previous request (SPEC P3 (1)–(4)).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import httpx

from llmcore import jsonbytes
from llmcore.emulator.agent import AGENT_TOOLS, AgentWorkspace

__all__ = ["SessionResult", "run_agent_session"]

SYSTEM = "You are a careful coding agent. Use the tools to inspect and edit the workspace. " * 40
"""The session's system prompt (about 900 tokens, so tools + system pass the minimum)."""

PROMPTS = (
    "Please look around this workspace and tell me what it is.",
    "Now check the log file for problems.",
    "What does the logo look like?",
    "Write a short summary note.",
    "Is there a missing design doc?",
    "Improve normalize so it collapses inner spaces.",
    "Does app.py need a change?",
    "Record the change in a changelog.",
    "Check the log once more and wrap up.",
)
"""User prompts: the first opens the session, one follows each text reply."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionResult:
    """What a session sent and got back."""

    bodies: tuple[bytes, ...]
    """Every request body, in order."""
    usages: tuple[dict[str, Any], ...]
    """Every response's ``usage`` object."""


def _tools() -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = [
        {
            "name": tool.name,
            "description": tool.description,
            "input_schema": jsonbytes.Raw(tool.schema_json().decode("utf-8")),
        }
        for tool in AGENT_TOOLS
    ]
    tools[-1]["cache_control"] = {"type": "ephemeral"}
    return tools


def _marked(messages: list[dict[str, Any]], previous_end: int) -> list[dict[str, Any]]:
    """Return ``messages`` with breakpoints on the newest message and the previous request's end."""
    out = [dict(message) for message in messages]
    for index in {len(out) - 1, previous_end}:
        if 0 <= index < len(out):
            blocks = [dict(block) for block in out[index]["content"]]
            blocks[-1]["cache_control"] = {"type": "ephemeral"}
            out[index]["content"] = blocks
    return out


def _results(workspace: AgentWorkspace, content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    images: list[dict[str, Any]] = []
    for block in content:
        if block["type"] != "tool_use":
            continue
        arguments = jsonbytes.dumps(block["input"])
        outcome = workspace.call(block["name"], arguments)
        result: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": block["id"],
            "content": outcome.content.decode("utf-8", "replace"),
        }
        if outcome.is_error:
            result["is_error"] = True
        blocks.append(result)
        if outcome.image is not None:
            data, mime = outcome.image
            source = {"type": "base64", "media_type": mime, "data": base64.b64encode(data).decode()}
            images.append({"type": "image", "source": source})
    return blocks + images


def run_agent_session(
    client: httpx.Client, base_url: str, *, model: str = "claude-sonnet-4-5", max_requests: int = 40
) -> SessionResult:
    """Play the built-in agent script against the emulator at ``base_url``.

    Args:
        client: The HTTP client (keep-alive).
        base_url: The emulator's Anthropic base URL.
        model: The model id sent.
        max_requests: Safety stop.

    Returns:
        The bodies sent and the usages received.

    Raises:
        httpx.HTTPStatusError: The emulator refused a request.
    """
    workspace = AgentWorkspace()
    prompts = iter(PROMPTS)
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": next(prompts)}]}
    ]
    bodies: list[bytes] = []
    usages: list[dict[str, Any]] = []
    previous_end = -1
    system = [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}]
    headers = {"anthropic-version": "2023-06-01", "x-api-key": "bench"}
    while len(bodies) < max_requests:
        body = {
            "model": model,
            "max_tokens": 1024,
            "system": system,
            "tools": _tools(),
            "messages": _marked(messages, previous_end),
        }
        raw = jsonbytes.dumps(body)
        response = client.post(base_url + "/v1/messages", content=raw, headers=headers)
        response.raise_for_status()
        reply = response.json()
        bodies.append(raw)
        usages.append(reply["usage"])
        previous_end = len(messages) - 1
        messages.append({"role": "assistant", "content": reply["content"]})
        if reply["stop_reason"] == "tool_use":
            messages.append({"role": "user", "content": _results(workspace, reply["content"])})
            continue
        prompt = next(prompts, None)
        if prompt is None:
            break
        messages.append({"role": "user", "content": [{"type": "text", "text": prompt}]})
    return SessionResult(bodies=tuple(bodies), usages=tuple(usages))
