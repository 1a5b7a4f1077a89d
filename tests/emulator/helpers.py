"""Helpers for emulator tests: raw httpx calls and blocks of an exact token size."""

from __future__ import annotations

from typing import Any

import httpx

from llmcore import jsonbytes
from llmcore.emulator import Emulator, ManualClock
from llmcore.emulator.tokencount import text_tokens

ANTHROPIC_HEADERS = {
    "anthropic-version": "2023-06-01",
    "x-api-key": "test-org",
    "content-type": "application/json",
}
OPENAI_HEADERS = {"authorization": "Bearer test-org", "content-type": "application/json"}
SONNET = "claude-sonnet-4-5"  # minimum 1024 tokens
ANTHROPIC_TOOLS = [
    {"name": "read_file", "description": "Read a file.", "input_schema": {"type": "object"}}
]
CHAT_TOOLS = [
    {"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}
]
RESPONSES_TOOLS = [{"type": "function", "name": "read_file", "parameters": {"type": "object"}}]
"""One tool per API: a request that offers none never gets a tool call, as from the real APIs."""


def text_of(tokens: int, tag: str = "x") -> str:
    """A text that counts exactly ``tokens`` by the emulator's rule: ``tag``, then `` a`` words."""
    head = text_tokens(tag + ":")
    assert tokens > head, "too few tokens for the tag"
    text = tag + ":" + " a" * (tokens - head)
    assert text_tokens(text) == tokens
    return text


def text_block(tokens: int, tag: str = "x", **extra: Any) -> dict[str, Any]:
    """A text block that counts exactly ``tokens`` (:func:`text_of`)."""
    return {"type": "text", "text": text_of(tokens, tag), **extra}


def ephemeral(ttl: str | None = None) -> dict[str, str]:
    return {"type": "ephemeral"} if ttl is None else {"type": "ephemeral", "ttl": ttl}


class Api:
    """Raw httpx calls against one emulator."""

    def __init__(self, emu: Emulator, clock: ManualClock) -> None:
        self.emu = emu
        self.clock = clock
        self.client = httpx.Client(timeout=10)

    def messages(self, body: dict[str, Any], **headers: str) -> httpx.Response:
        return self.client.post(
            self.emu.base_url + "/v1/messages",
            content=jsonbytes.dumps(body),
            headers={**ANTHROPIC_HEADERS, **headers},
        )

    def usage(self, body: dict[str, Any], **headers: str) -> dict[str, Any]:
        response = self.messages(body, **headers)
        assert response.status_code == 200, response.text
        usage: dict[str, Any] = response.json()["usage"]
        return usage

    def chat(self, body: dict[str, Any], **headers: str) -> httpx.Response:
        return self.client.post(
            self.emu.openai_base_url + "/chat/completions",
            content=jsonbytes.dumps(body),
            headers={**OPENAI_HEADERS, **headers},
        )

    def responses(self, body: dict[str, Any], **headers: str) -> httpx.Response:
        return self.client.post(
            self.emu.openai_base_url + "/responses",
            content=jsonbytes.dumps(body),
            headers={**OPENAI_HEADERS, **headers},
        )
