"""Token counting: Anthropic ``/v1/messages/count_tokens``, OpenAI ``/v1/responses/input_tokens``.

SPEC V2.

Both count what a Messages / Responses request with the same fields would be billed as input,
by the emulator's own prefix rule (:mod:`llmcore.emulator.prefix`), so ``count_tokens`` equals
``input_tokens + cache_creation_input_tokens + cache_read_input_tokens`` of the request it
describes, and ``input_tokens`` equals the Responses ``usage.input_tokens``. Nothing is cached.

* Anthropic [A-COUNT] https://docs.anthropic.com/en/api/messages-count-tokens (read
  2026-12-02): the body is a Messages body without ``max_tokens`` (and without ``stream``,
  ``temperature``, …); the answer is ``{"input_tokens": N}``.
* OpenAI [O-COUNT] https://platform.openai.com/docs/api-reference/responses/input-tokens (read
  2026-12-02): ``model``, ``input``, ``instructions``, ``tools``, ``previous_response_id``,
  ``conversation``, …; the answer is ``{"object": "response.input_tokens", "input_tokens": N}``.
"""

from __future__ import annotations

from typing import Any, Final

from llmcore import jsonbytes
from llmcore.emulator.anthropic_cache import linearize
from llmcore.emulator.anthropic_validate import validate_anthropic
from llmcore.emulator.errors import Rejection
from llmcore.emulator.openai_cache import prompt_tokens
from llmcore.emulator.openai_validate import validate_responses
from llmcore.emulator.scan import Spans

__all__ = ["ANTHROPIC_COUNT_KEYS", "OPENAI_COUNT_KEYS", "anthropic_count", "openai_count"]

ANTHROPIC_COUNT_KEYS: Final = frozenset(
    {
        "model", "messages", "system", "tools", "tool_choice", "thinking", "mcp_servers",
        "context_management", "output_config", "cache_control", "speed",
    }
)  # fmt: skip
"""Top-level fields of ``MessageCountTokensParams`` (anthropic 2.14)."""

OPENAI_COUNT_KEYS: Final = frozenset(
    {
        "model", "input", "instructions", "tools", "previous_response_id", "conversation",
        "text", "reasoning", "tool_choice", "parallel_tool_calls", "truncation",
    }
)  # fmt: skip
"""Top-level fields of ``InputTokenCountParams`` (openai 3.57)."""


def anthropic_count(parsed: Any, spans: Spans, betas: frozenset[str]) -> bytes:
    """Return the ``count_tokens`` answer for a parsed body.

    Raises:
        Rejection: A field ``count_tokens`` does not take, or a Messages rule broken.
    """
    if not isinstance(parsed, dict):
        raise Rejection("Input should be a valid dictionary or object to extract fields from")
    for key in parsed:
        if key not in ANTHROPIC_COUNT_KEYS:
            raise Rejection(f"{key}: Extra inputs are not permitted")
    body = validate_anthropic({**parsed, "max_tokens": 1}, betas)
    total = sum(item.tokens for item in linearize(body, spans))
    return jsonbytes.dumps({"input_tokens": total})


def openai_count(parsed: Any, spans: Spans, history: list[Any]) -> bytes:
    """Return the ``input_tokens`` answer for a parsed body whose earlier items are ``history``.

    Raises:
        Rejection: An unknown parameter, or a Responses rule broken.
    """
    if not isinstance(parsed, dict):
        raise Rejection("The request body must be a JSON object.")
    for key in parsed:
        if key not in OPENAI_COUNT_KEYS:
            raise Rejection(f"Unknown parameter: '{key}'.", param=key, code="unknown_parameter")
    body = validate_responses({"model": "", **parsed}, history)
    total = prompt_tokens("responses", body, history, spans)  # as a response's usage counts it
    return jsonbytes.dumps({"object": "response.input_tokens", "input_tokens": total})
