"""A request's cacheable prefix as the emulator sees it: items, their bytes and tokens.

Follows :mod:`llmcore.tokens` exactly, so the auditor (V1) counts the same numbers (V4: this
module reads wire bodies on its own and shares nothing with the provider modules):

* an item's **bytes** are its compact JSON (:func:`llmcore.jsonbytes.dumps`) with every
  ``cache_control`` and ``prompt_cache_breakpoint`` member removed, keys in wire order;
* an item holding images counts :data:`llmcore.tokens.IMAGE_TOKENS` per image plus the text
  rule on its bytes with each base64 payload cut out. The emulator reads "cut out" as: the
  payload string's characters are not counted (its quotes and key still are). Images are
  Anthropic ``image`` blocks (payload ``source.data``), Chat ``image_url`` parts and Responses
  ``input_image`` parts (payload: a ``data:`` URL);
* the text rule: ``ceil(len(bytes) / 4)`` tokens.

Splitting a body into items is provider-specific and lives with each provider's cache rules.
"""

from __future__ import annotations

from typing import Any, Final

from llmcore import jsonbytes
from llmcore.tokens import item_measure

__all__ = ["STRIPPED_KEYS", "item_bytes", "measure", "strip_markers"]

STRIPPED_KEYS: Final = frozenset({"cache_control", "prompt_cache_breakpoint"})
"""Members deleted from an item before its bytes are taken (tokens.py, SPEC P4)."""


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
    """Return an item's bytes: compact JSON with cache markers removed (tokens.py)."""
    return jsonbytes.dumps(strip_markers(value))


def measure(value: Any) -> tuple[bytes, int, int]:
    """Return ``(bytes, tokens, images)`` of one prefix item by the tokens.py rule.

    Args:
        value: One parsed wire item (a tool definition, a system block, a content block, a
            whole message, or a bare string).

    Returns:
        The item's bytes, its token count and the number of images it holds.
    """
    data = item_bytes(value)
    count, images = item_measure(value, data)
    return data, count, images
