"""What the emulator refuses in an Anthropic Messages body, with the API's messages.

Checked in order (first failure wins), each with the real API's message where PROVIDER-RULES
quotes one (§1.1, §1.2, §1.7, §1.10): unknown top-level field (``X: Extra inputs are not
permitted``), missing ``model`` / ``max_tokens`` / ``messages`` (``X: Field required``), wrong
types, unknown roles and block types, empty content, empty or whitespace-only text blocks,
malformed ``cache_control``, tools (name pattern, schema, duplicates), ``tool_choice`` naming no
tool, and tool_use / tool_result pairing. The breakpoint count and TTL order are checked with the
cache accounting (:mod:`llmcore.emulator.anthropic_cache`).
"""

from __future__ import annotations

import re
from typing import Any, Final

from llmcore.emulator.errors import Rejection

__all__ = ["BETA_SYSTEM_MESSAGES", "validate_anthropic"]

BETA_SYSTEM_MESSAGES: Final = "mid-conversation-system-2026-04-07"
"""The ``anthropic-beta`` value under which a message may have the role ``system`` (Claude Code
2.1 sends one after the first user message, with this beta named in its header)."""

TOP_LEVEL: Final = frozenset(
    {
        "model", "messages", "max_tokens", "system", "tools", "tool_choice", "temperature",
        "top_p", "top_k", "stop_sequences", "stream", "metadata", "thinking", "cache_control",
        "service_tier", "container", "mcp_servers", "context_management", "output_config",
        "inference_geo", "speed", "diagnostics", "user_profile_id", "workspace_id",
    }
)  # fmt: skip
"""Top-level fields the Messages API accepts (anthropic 2.14 ``MessageCreateParams``)."""

BLOCK_KEYS: Final[dict[str, frozenset[str]]] = {
    "text": frozenset({"type", "text", "cache_control", "citations"}),
    "image": frozenset({"type", "source", "cache_control", "transformations"}),
    "document": frozenset({"type", "source", "title", "context", "citations", "cache_control"}),
    "tool_use": frozenset(
        {"type", "id", "name", "input", "cache_control", "caller", "toolset_name"}
    ),
    "tool_result": frozenset(
        {"type", "tool_use_id", "content", "is_error", "cache_control", "toolset_name"}
    ),
    "thinking": frozenset({"type", "thinking", "signature"}),
    "redacted_thinking": frozenset({"type", "data"}),
}
"""Content block types the emulator knows and the keys each may carry (anthropic 2.14
``*BlockParam``: ``toolset_name`` and ``transformations`` are accepted, as the API accepts
what the SDK sends back)."""

IMAGE_TYPES: Final = ("image/jpeg", "image/png", "image/gif", "image/webp")
"""Image media types Anthropic accepts (PROVIDER-RULES §1.9)."""

_TOOL_NAME: Final = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
_TOOL_KEYS: Final = frozenset(
    {"name", "description", "input_schema", "cache_control", "type", "strict",
     "defer_loading", "input_examples", "allowed_callers", "eager_input_streaming"}
)  # fmt: skip
_EMPTY_CONTENT: Final = (
    "all messages must have non-empty content except for the optional final assistant message"
)


def _extra(keys: Any, allowed: frozenset[str], where: str) -> None:
    for key in keys:
        if key not in allowed:
            raise Rejection(f"{where}{key}: Extra inputs are not permitted")


def _require(body: dict[str, Any]) -> None:
    for key in ("model", "messages", "max_tokens"):
        if key not in body:
            raise Rejection(f"{key}: Field required")
    if not isinstance(body["model"], str):
        raise Rejection("model: Input should be a valid string")
    tokens = body["max_tokens"]
    if not isinstance(tokens, int) or isinstance(tokens, bool):
        raise Rejection("max_tokens: Input should be a valid integer")
    if tokens < 0:
        raise Rejection("max_tokens: Input should be greater than or equal to 0")
    if not isinstance(body["messages"], list):
        raise Rejection("messages: Input should be a valid list")
    if "stream" in body and not isinstance(body["stream"], bool):
        raise Rejection("stream: Input should be a valid boolean")


def _cache_control(value: Any, where: str) -> None:
    if value is None:  # the real API answers 200: a null cache_control is no breakpoint
        return
    if not isinstance(value, dict) or value.get("type") != "ephemeral":
        raise Rejection(f"{where}.type: Input should be 'ephemeral'")
    _extra(value, frozenset({"type", "ttl", "scope"}), f"{where}.")
    if value.get("ttl", "5m") not in ("5m", "1h"):
        raise Rejection(f"{where}.ttl: Input should be '5m' or '1h'")


def _text(block: dict[str, Any], where: str, level: str) -> None:
    text = block.get("text")
    if not isinstance(text, str):
        raise Rejection(f"{where}.text: Field required")
    if text == "":
        raise Rejection(f"{level}: text content blocks must be non-empty")
    if not text.strip():
        raise Rejection(f"{level}: text content blocks must contain non-whitespace text")


def _image(block: dict[str, Any], where: str) -> None:
    source = block.get("source")
    if not isinstance(source, dict):
        raise Rejection(f"{where}.source: Field required")
    if source.get("type") == "url" and isinstance(source.get("url"), str):
        return
    if source.get("type") != "base64" or not isinstance(source.get("data"), str):
        raise Rejection(f"{where}.source: Input should be a valid base64 or url image source")
    if source.get("media_type") not in IMAGE_TYPES:
        allowed = ", ".join(f"'{kind}'" for kind in IMAGE_TYPES)
        raise Rejection(f"{where}.source.base64.media_type: Input should be {allowed}")
    if not source["data"]:
        raise Rejection(f"{where}.source.base64.data: Image data must not be empty")


def _tool_result(block: dict[str, Any], where: str) -> None:
    if not isinstance(block.get("tool_use_id"), str):
        raise Rejection(f"{where}.tool_use_id: Field required")
    content = block.get("content", "")
    if isinstance(content, list):
        for index, sub in enumerate(content):
            _block(sub, f"{where}.content.{index}", "messages", ("text", "image", "document"))
    elif not isinstance(content, str):
        raise Rejection(f"{where}.content: Input should be a valid string or list")


def _tool_use(block: dict[str, Any], where: str) -> None:
    for key in ("id", "name"):
        if not isinstance(block.get(key), str):
            raise Rejection(f"{where}.{key}: Field required")
    if not isinstance(block.get("input"), dict):
        raise Rejection(f"{where}.input: Input should be a valid dictionary")


def _block(block: Any, where: str, level: str, kinds: tuple[str, ...]) -> None:
    if not isinstance(block, dict):
        raise Rejection(f"{where}: Input should be a valid dictionary or object")
    kind = block.get("type")
    if kind not in kinds:
        expected = ", ".join(f"'{k}'" for k in kinds)
        raise Rejection(
            f"{where}: Input tag '{kind}' found using 'type' does not match any of the "
            f"expected tags: {expected}"
        )
    _extra(block, BLOCK_KEYS[kind], f"{where}.{kind}.")
    if "cache_control" in block:
        _cache_control(block["cache_control"], f"{where}.cache_control")
    if kind == "text":
        _text(block, where, level)
    elif kind == "image":
        _image(block, where)
    elif kind == "tool_result":
        _tool_result(block, where)
    elif kind == "tool_use":
        _tool_use(block, where)


_MESSAGE_KINDS: Final = tuple(BLOCK_KEYS)
_ROLES: Final = ("user", "assistant")


def _message(message: Any, index: int, last: bool, roles: tuple[str, ...]) -> None:
    where = f"messages.{index}"
    if not isinstance(message, dict):
        raise Rejection(f"{where}: Input should be a valid dictionary")
    _extra(message, frozenset({"role", "content"}), f"{where}.")
    if message.get("role") not in roles:
        allowed = " or ".join(f"'{role}'" for role in roles)
        raise Rejection(f"{where}.role: Input should be {allowed}")
    content = message.get("content")
    if content is None:
        raise Rejection(f"{where}.content: Field required")
    if content in ("", []) and not (last and message["role"] == "assistant"):
        raise Rejection(f"{where}: {_EMPTY_CONTENT}")
    if isinstance(content, list):
        for b_index, block in enumerate(content):
            _block(block, f"{where}.content.{b_index}", "messages", _MESSAGE_KINDS)
    elif not isinstance(content, str):
        raise Rejection(f"{where}.content: Input should be a valid string or list")


def _system(system: Any) -> None:
    if isinstance(system, str):
        return
    if not isinstance(system, list):
        raise Rejection("system: Input should be a valid string or list")
    for index, block in enumerate(system):
        _block(block, f"system.{index}", "system", ("text",))


def _tools(tools: Any) -> set[str]:
    if not isinstance(tools, list):
        raise Rejection("tools: Input should be a valid list")
    names: set[str] = set()
    for index, tool in enumerate(tools):
        where = f"tools.{index}"
        if not isinstance(tool, dict):
            raise Rejection(f"{where}: Input should be a valid dictionary")
        if tool.get("type", "custom") != "custom":
            names.add(str(tool.get("name", "")))
            continue
        _extra(tool, _TOOL_KEYS, f"{where}.custom.")
        name = tool.get("name")
        if not isinstance(name, str) or not _TOOL_NAME.match(name):
            raise Rejection(
                f"{where}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'"
            )
        if not isinstance(tool.get("input_schema"), dict):
            raise Rejection(f"{where}.custom.input_schema: Field required")
        if "cache_control" in tool:
            _cache_control(tool["cache_control"], f"{where}.custom.cache_control")
        if name in names:
            raise Rejection("tools: Tool names must be unique.")
        names.add(name)
    return names


def _tool_choice(choice: Any, names: set[str]) -> None:
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind not in ("auto", "any", "tool", "none"):
        raise Rejection(
            "tool_choice: Input tag found using 'type' does not match any of the expected tags: "
            "'auto', 'any', 'tool', 'none'"
        )
    if kind == "tool" and choice.get("name") not in names:
        raise Rejection(f"tool_choice: Tool '{choice.get('name')}' not found in provided tools")


def _tool_ids(message: dict[str, Any], kind: str, key: str) -> list[tuple[int, str]]:
    content = message["content"]
    if not isinstance(content, list):
        return []
    return [
        (index, str(block[key])) for index, block in enumerate(content) if block.get("type") == kind
    ]


def _pairing(messages: list[dict[str, Any]]) -> None:
    """Check PROVIDER-RULES §1.7: each tool_use answered in the next message, no orphans."""
    uses = [_tool_ids(m, "tool_use", "id") if m["role"] == "assistant" else [] for m in messages]
    results = [
        _tool_ids(m, "tool_result", "tool_use_id") if m["role"] == "user" else [] for m in messages
    ]
    for index, calls in enumerate(uses):
        answered = {c for _, c in results[index + 1]} if index + 1 < len(messages) else set()
        missing = [call_id for _, call_id in calls if call_id not in answered]
        if missing:
            raise Rejection(
                f"messages.{index}: `tool_use` ids were found without `tool_result` blocks "
                f"immediately after: {', '.join(missing)}. Each `tool_use` block must have a "
                "corresponding `tool_result` block in the next message."
            )
    for index, found in enumerate(results):
        offered = {c for _, c in uses[index - 1]} if index > 0 else set()
        for b_index, call_id in found:
            if call_id not in offered:
                raise Rejection(
                    f"messages.{index}.content.{b_index}: unexpected `tool_use_id` found in "
                    f"`tool_result` blocks: {call_id}. Each `tool_result` block must have a "
                    "corresponding `tool_use` block in the previous message."
                )


def validate_anthropic(body: Any, betas: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Check a parsed Messages body the way the API does; return it typed as a dict.

    Args:
        body: The parsed JSON body.
        betas: The ``anthropic-beta`` header's values. With :data:`BETA_SYSTEM_MESSAGES` a
            message may have the role ``system`` (not the first one); without it only ``user``
            and ``assistant`` are accepted.

    Returns:
        ``body`` itself.

    Raises:
        Rejection: The first rule ``body`` breaks, with the API's message (HTTP 400,
            ``invalid_request_error``).
    """
    if not isinstance(body, dict):
        raise Rejection("Input should be a valid dictionary or object to extract fields from")
    _extra(body, TOP_LEVEL, "")
    _require(body)
    if "system" in body:
        _system(body["system"])
    names = _tools(body["tools"]) if "tools" in body else set()
    if "tool_choice" in body:
        _tool_choice(body["tool_choice"], names)
    if "cache_control" in body:
        _cache_control(body["cache_control"], "cache_control")
    messages = body["messages"]
    if not messages:
        raise Rejection("messages: at least one message is required")
    roles = ("user", "assistant", "system") if BETA_SYSTEM_MESSAGES in betas else _ROLES
    for index, message in enumerate(messages):
        _message(message, index, index == len(messages) - 1, roles if index else _ROLES)
    _pairing(messages)
    return body
