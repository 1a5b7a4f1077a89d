"""Anthropic extended thinking: the emulator's thinking blocks and the rules it enforces.

With ``thinking`` ``{"type": "enabled", "budget_tokens": N}`` or ``{"type": "adaptive"}`` a
reply starts with a ``thinking`` block whose ``signature`` is the emulator's own: base64 of
:data:`MAGIC` and an HMAC-SHA256 of the thinking text. When a client sends such a block back,
the signature is checked; a block whose text or signature was changed is refused as the real
API refuses it. A signature the emulator did not issue (one recorded from the real API) is
accepted: it cannot be checked offline, and replays of recorded conversations must keep working.

Refused, with the real API's messages (PROVIDER-RULES §1.8 [A-ET]
https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking, read 2026-12-02;
messages as recorded in the issues cited):

* a ``thinking`` type other than ``enabled`` / ``disabled`` / ``adaptive``; ``budget_tokens``
  missing or below 1,024 ("The minimum budget is 1,024 tokens"); ``max_tokens`` not above it
  (antigravity2api-nodejs#150);
* ``temperature`` other than 1 with thinking on: "Thinking isn't compatible with temperature or
  top_k modifications as well as forced tool use" (snow-app#42, workglow-dev/libs#746);
* ``tool_choice`` ``any`` / ``tool`` with thinking on (mastra#7507, workglow-dev/libs#746);
* in a tool loop (the last message carries ``tool_result`` blocks) with thinking on, the
  assistant message before it not starting with a thinking block: "During tool use, you must
  pass thinking blocks back to the API for the last assistant message" (n8n#22550,
  claude-code#20705);
* an assistant message with thinking blocks that does not start with one (claude-code#20705);
* with thinking off, a final (prefill) assistant message holding a thinking block
  (forgecode#1195);
* a thinking block without ``signature``, or with one the emulator issued for other text.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from typing import Any, Final

from llmcore.emulator.errors import Rejection

__all__ = ["MAGIC", "check_thinking", "sign", "thinking_on", "thinking_text"]

MAGIC: Final = b"llmcore-emulator-thinking-1:"
"""The prefix of every signature the emulator issues (inside the base64)."""
_KEY: Final = b"llmcore emulator signing key (not a secret: the emulator is an offline stand-in)"
_DOCS: Final = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
MIN_BUDGET: Final = 1024
"""Smallest ``budget_tokens`` ([A-ET] "The minimum budget is 1,024 tokens")."""
_THINKING_KINDS: Final = frozenset({"thinking", "redacted_thinking"})


def sign(text: str) -> str:
    """Return the emulator's signature for thinking ``text``."""
    mac = hmac.new(_KEY, text.encode("utf-8"), hashlib.sha256).digest()
    return base64.b64encode(MAGIC + mac).decode("ascii")


def thinking_text(last_user_text: str) -> str:
    """Return the thinking the emulator "does" before a reply (deterministic)."""
    topic = " ".join(last_user_text.split())[:120] or "the request"
    return f"The user wrote: {topic}. I will follow the script and answer."


def _issued(signature: str) -> bytes | None:
    """Return the MAC of a signature the emulator issued, else ``None`` (a foreign one)."""
    try:
        raw = base64.b64decode(signature, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw[len(MAGIC) :] if raw.startswith(MAGIC) else None


def thinking_on(body: dict[str, Any]) -> bool:
    """Return whether a validated body turns thinking on (``enabled`` or ``adaptive``)."""
    config = body.get("thinking")
    return isinstance(config, dict) and config.get("type") in ("enabled", "adaptive")


def _config(body: dict[str, Any]) -> None:
    config = body.get("thinking")
    if config is None:
        return
    kind = config.get("type") if isinstance(config, dict) else None
    if kind not in ("enabled", "disabled", "adaptive"):
        raise Rejection(
            f"thinking: Input tag '{kind}' found using 'type' does not match any of the expected "
            "tags: 'adaptive', 'disabled', 'enabled'"
        )
    if kind != "enabled":
        return
    assert isinstance(config, dict)
    budget = config.get("budget_tokens")
    if not isinstance(budget, int) or isinstance(budget, bool):
        raise Rejection("thinking.enabled.budget_tokens: Field required")
    if budget < MIN_BUDGET:
        raise Rejection(
            f"thinking.enabled.budget_tokens: Input should be greater than or equal to {MIN_BUDGET}"
        )
    if body["max_tokens"] <= budget:
        raise Rejection(
            "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
            f"documentation at {_DOCS}#max-tokens-and-context-window-size"
        )


def _kind(body: dict[str, Any]) -> Any:
    thinking = body.get("thinking")
    return thinking.get("type") if isinstance(thinking, dict) else None


def _parameters(body: dict[str, Any]) -> None:
    temperature = body.get("temperature")
    if temperature is not None and temperature != 1:
        raise Rejection(
            "`temperature` may only be set to 1 when thinking is enabled or in adaptive mode. "
            f"Please consult our documentation at {_DOCS}"
        )
    choice = body.get("tool_choice")
    forced = isinstance(choice, dict) and choice.get("type") in ("any", "tool")
    # Extended thinking (``enabled``) refuses a forced tool; adaptive thinking takes one: the
    # real API answered 200 to ``adaptive`` with ``tool_choice: tool`` (pydantic-ai's recorded
    # test_anthropic_opus_46_adaptive_thinking_accepts_tool_output cassette, in tests/corpus).
    if forced and _kind(body) == "enabled":
        raise Rejection("Thinking may not be enabled when tool_choice forces tool use.")


def _blocks(message: dict[str, Any]) -> list[Any]:
    content = message.get("content")
    return content if isinstance(content, list) else []


def _tool_loop(messages: list[dict[str, Any]]) -> None:
    """Refuse a tool loop whose last assistant message lost its thinking block."""
    last = messages[-1]
    if last["role"] != "user" or not any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in _blocks(last)
    ):
        return
    index = len(messages) - 2
    if index < 0 or messages[index]["role"] != "assistant":
        return
    blocks = _blocks(messages[index])
    first = blocks[0].get("type") if blocks and isinstance(blocks[0], dict) else "text"
    if first not in _THINKING_KINDS:
        raise Rejection(
            f"messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but "
            f"found `{first}`. When `thinking` is enabled, a final `assistant` message must "
            "start with a thinking block (preceeding the lastmost set of `tool_use` and "
            "`tool_result` blocks). We recommend you include thinking blocks from previous "
            "turns. To avoid this requirement, disable `thinking`. Please consult our "
            f"documentation at {_DOCS}"
        )


def _signature(block: dict[str, Any], where: str) -> None:
    signature = block.get("signature")
    if not isinstance(signature, str):
        raise Rejection(f"{where}.thinking.signature: Field required")
    text = block.get("thinking")
    mac = _issued(signature)
    if signature == "" or not isinstance(text, str):
        raise Rejection(f"{where}: Invalid `signature` in `thinking` block")
    if mac is not None:
        expected = hmac.new(_KEY, text.encode("utf-8"), hashlib.sha256).digest()
        if not hmac.compare_digest(mac, expected):
            raise Rejection(f"{where}: Invalid `signature` in `thinking` block")


def _assistant(message: dict[str, Any], index: int, final: bool, on: bool) -> None:
    blocks = [b for b in _blocks(message) if isinstance(b, dict)]
    kinds = [b.get("type") for b in blocks]
    if not any(kind in _THINKING_KINDS for kind in kinds):
        return
    if final and not on:
        at = next(i for i, kind in enumerate(kinds) if kind in _THINKING_KINDS)
        raise Rejection(
            f"messages.{index}.content.{at}: When thinking is disabled, an `assistant` message "
            "in the final position cannot contain `thinking`. To use thinking blocks, enable "
            "`thinking` in your request."
        )
    if kinds[0] not in _THINKING_KINDS:
        raise Rejection(
            f"messages.{index}.content.0: If an assistant message contains any thinking "
            f"blocks, the first block must be thinking or redacted_thinking. Found {kinds[0]}."
        )
    for number, block in enumerate(blocks):
        if block.get("type") == "thinking":
            _signature(block, f"messages.{index}.content.{number}")


def check_thinking(body: dict[str, Any], raw: bytes | None = None) -> None:
    """Apply the rules of this module to a body :func:`validate_anthropic` accepted.

    Args:
        body: The validated body.
        raw: Its bytes, when known: a body whose bytes hold neither ``thinking`` nor a backslash-u
            escape (which could spell it) has no thinking config or block, and is passed
            without walking its messages.

    Raises:
        Rejection: The first rule broken (HTTP 400 ``invalid_request_error``).
    """
    if raw is not None and b"thinking" not in raw and b"\\u" not in raw:
        return
    _config(body)
    on = thinking_on(body)
    if on:
        _parameters(body)
    messages = body["messages"]
    last = len(messages) - 1
    for index, message in enumerate(messages):
        if message["role"] == "assistant":
            _assistant(message, index, index == last, on)
    if on:
        _tool_loop(messages)
