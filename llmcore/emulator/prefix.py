"""A request's cacheable prefix as the emulator sees it: items, their key bytes and tokens.

V4: this module reads wire bodies on its own and shares nothing with the provider modules nor
with the auditor's count (:mod:`llmcore.tokens`); its token rules are
:mod:`llmcore.emulator.tokencount`'s.

* an item's **key bytes** (what the cache compares) are its compact JSON
  (:func:`llmcore.jsonbytes.dumps`) with every ``cache_control`` and
  ``prompt_cache_breakpoint`` member removed, keys in wire order — except that an Anthropic
  string content (or string ``system``) and a text block holding the same text are one key:
  the provider reads the whole prefix across that change (recorded: 4,597 tokens written, then
  read, across ``"content": "…"`` → ``[{"type": "text", "text": "…"}]``; SPEC V1 lists it as a
  difference the provider cannot see);
* an item's **tokens** are what the model is shown: the text of its strings
  (:func:`~llmcore.emulator.tokencount.text_tokens`; ``cache_control``, thinking ``signature``,
  reasoning ``encrypted_content`` and base64 payloads are not shown), images by their pixel
  size, Anthropic tool schemas and tool inputs as compact JSON, OpenAI tools by the cookbook
  rule (:func:`~llmcore.emulator.tokencount.openai_tool_tokens`), plus
  :data:`~llmcore.emulator.tokencount.MESSAGE_TOKENS` per OpenAI message-like item.

Splitting a body into items is provider-specific and lives with each provider's cache rules.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from llmcore import jsonbytes
from llmcore.emulator.tokencount import (
    BINARY_MIN_CHARS,
    MESSAGE_TOKENS,
    image_tokens,
    json_tokens,
    openai_tool_tokens,
    text_tokens,
)

__all__ = ["STRIPPED_KEYS", "Kind", "item_bytes", "measure", "strip_markers"]

Kind = Literal["anthropic", "anthropic_tool", "openai", "openai_tool"]
"""How an item is measured: an Anthropic block or tool, an OpenAI message/item or tool."""

STRIPPED_KEYS: Final = frozenset({"cache_control", "prompt_cache_breakpoint"})
"""Members deleted from an item before its bytes are taken (SPEC P4)."""

_UNSHOWN: Final = frozenset(
    {"cache_control", "prompt_cache_breakpoint", "signature", "encrypted_content"}
)
_BINARY_KEYS: Final = frozenset({"data", "file_data"})
_JSON_KEYS: Final = frozenset({"input"})
_IMAGE_TYPES: Final = frozenset({"image", "image_url", "input_image"})
_TEXT_KEYS: Final = frozenset({"type", "text"})


def strip_markers(value: Any) -> Any:
    """Return ``value`` with every ``cache_control`` / ``prompt_cache_breakpoint`` member removed.

    Objects keep their key order; values without markers are returned as they are (not copied).
    """
    if isinstance(value, dict):
        changed = False
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key in STRIPPED_KEYS:
                changed = True
                continue
            new = strip_markers(item)
            changed = changed or new is not item
            out[key] = new
        return out if changed else value
    if isinstance(value, list):
        items = [strip_markers(item) for item in value]
        if any(new is not old for new, old in zip(items, value, strict=True)):
            return items
        return value
    return value


def item_bytes(value: Any) -> bytes:
    """Return an item's bytes: compact JSON with cache markers removed."""
    return jsonbytes.dumps(strip_markers(value))


def _text_of(value: Any) -> str | None:
    """Return the text of a string or of a plain text block (only ``type``/``text`` left)."""
    if isinstance(value, str):
        return value
    if (
        isinstance(value, dict)
        and value.get("type") == "text"
        and isinstance(value.get("text"), str)
        and all(key in _TEXT_KEYS or key in STRIPPED_KEYS or value[key] is None for key in value)
    ):
        return str(value["text"])
    return None


def _image_payload(node: dict[str, Any]) -> tuple[str | None, str]:
    """Return an image part's base64 payload (or None: URL, file id) and its ``detail``."""
    if node.get("type") == "image":
        source = node.get("source")
        data = source.get("data") if isinstance(source, dict) else None
        return (data if isinstance(data, str) else None), "auto"
    url = node.get("image_url")
    detail = node.get("detail")
    if isinstance(url, dict):
        detail = url.get("detail", detail)
        url = url.get("url")
    shown = url if isinstance(url, str) and url.startswith("data:") else None
    return shown, detail if isinstance(detail, str) else "auto"


def _is_binary(key: str | None, text: str) -> bool:
    if len(text) < BINARY_MIN_CHARS:
        return False
    return key in _BINARY_KEYS or text.startswith("data:")


def _shown_object(value: dict[str, Any], provider: str, acc: list[int]) -> None:
    kind = value.get("type")
    if isinstance(kind, str) and kind in _IMAGE_TYPES:
        payload, detail = _image_payload(value)
        acc[0] += image_tokens(provider, payload, detail)
        acc[1] += 1
        return
    for name, child in value.items():
        if name in _UNSHOWN:
            continue
        if name in _JSON_KEYS and isinstance(child, dict | list):
            acc[0] += json_tokens(child)
        else:
            _shown(child, provider, name, acc)


def _shown(value: Any, provider: str, key: str | None, acc: list[int]) -> None:
    """Add to ``acc`` (tokens, images) what the model is shown of ``value``."""
    if isinstance(value, str):
        if not _is_binary(key, value):
            acc[0] += text_tokens(value)
        return
    if isinstance(value, dict):
        _shown_object(value, provider, acc)
        return
    if isinstance(value, list):
        for child in value:
            _shown(child, provider, key, acc)
        return
    if value is not None:
        acc[0] += 1


def measure(value: Any, kind: Kind = "anthropic") -> tuple[bytes, int, int]:
    """Return ``(key bytes, tokens, images)`` of one prefix item.

    Args:
        value: One parsed wire item (a tool definition, a system block, a content block, a
            whole OpenAI message or Responses item, or a bare string).
        kind: How to measure it (:data:`Kind`).

    Returns:
        The item's cache-key bytes, its estimated tokens and the number of images it holds.

    Raises:
        RecursionError: The value nests deeper than Python's recursion limit.
    """
    if kind == "anthropic_tool":
        data = item_bytes(value)
        return data, json_tokens(strip_markers(value)), 0
    if kind == "openai_tool":
        return item_bytes(value), openai_tool_tokens(value), 0
    if kind == "anthropic":
        text = _text_of(value)
        if text is not None:
            return jsonbytes.dumps({"type": "text", "text": text}), text_tokens(text), 0
    acc = [0, 0]
    provider = "anthropic" if kind == "anthropic" else "openai"
    _shown(value, provider, None, acc)
    tokens = acc[0] + (MESSAGE_TOKENS if kind == "openai" else 0)
    return item_bytes(value), tokens, acc[1]
