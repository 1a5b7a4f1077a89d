"""The one token-count approximation shared by the emulator (V2) and the auditor (V1).

llmcore ships no tokenizer. Wherever it needs a token count offline it uses this documented
approximation, so the emulator's cache accounting and the auditor's theoretical maximum count
the same way and can be compared exactly:

* a **prefix item** is one unit of a request's cacheable prefix, read from the wire body:
  Anthropic — each tool definition, each ``system`` block (a string ``system`` is one item),
  each content block of each message (a string ``content`` is one item), in that order (tools →
  system → messages); OpenAI — each tool definition, the ``instructions`` string, each
  ``messages[i]`` / ``input[i]`` item, in body order (tools first);
* its **bytes** are its compact JSON with every ``cache_control`` and
  ``prompt_cache_breakpoint`` member removed (keys kept in wire order);
* an item holding images counts :data:`IMAGE_TOKENS` per image plus the text rule applied to
  its bytes with each base64 image payload (the ``data`` value, or the ``data:`` URL) cut out;
* the text rule: an item counts ``ceil(len(bytes) / BYTES_PER_TOKEN)`` tokens.

OpenAI's automatic caching (PROVIDER-RULES §2.1) matches a token prefix: the shared prefix of two
requests is every leading item that is byte-identical, plus, inside the first item that differs,
``floor(common leading bytes / BYTES_PER_TOKEN)`` tokens; :func:`openai_cacheable` floors that to
1,024 + 128·k (0 below 1,024).
"""

from __future__ import annotations

from typing import Any, Final

from llmcore import jsonbytes

__all__ = [
    "BYTES_PER_TOKEN",
    "IMAGE_TOKENS",
    "OPENAI_CACHE_MIN",
    "OPENAI_CACHE_STEP",
    "IMAGE_PART_TYPES",
    "bytes_tokens",
    "common_prefix_len",
    "image_counts",
    "item_measure",
    "item_tokens",
    "openai_cacheable",
]

BYTES_PER_TOKEN: Final = 4
"""Bytes of UTF-8 JSON per token, the usual rule of thumb for English text and JSON."""

IMAGE_TOKENS: Final = 1600
"""Tokens per image: Anthropic's ~1.15 megapixel cap ÷ 750 px per token, rounded."""

OPENAI_CACHE_MIN: Final = 1024
"""OpenAI caches prompts of at least this many tokens (PROVIDER-RULES §2.1)."""

OPENAI_CACHE_STEP: Final = 128
"""OpenAI cache hits grow in steps of this many tokens above the minimum."""


def bytes_tokens(length: int) -> int:
    """Return the tokens of ``length`` bytes of text: ``ceil(length / 4)``."""
    return -(-length // BYTES_PER_TOKEN)


def common_prefix_len(a: bytes, b: bytes) -> int:
    """Return the number of leading bytes ``a`` and ``b`` share.

    Compares windows of doubling size from the start, then bisects the window holding the
    first difference: cost grows with the shared length, not with the lengths of ``a`` and
    ``b`` (the emulator compares a prompt with every live one of its routing key).
    """
    n = min(len(a), len(b))
    lo, step = 0, 64
    while lo < n:
        hi = min(lo + step, n)
        if a[lo:hi] != b[lo:hi]:
            break
        lo, step = hi, step * 2
    else:
        return n
    while hi - lo > 1:  # invariant: a[:lo] == b[:lo]; the first difference is in [lo, hi)
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def openai_cacheable(prefix_tokens: int) -> int:
    """Floor a shared prefix of ``prefix_tokens`` to what OpenAI reports as cached.

    Returns 0 below :data:`OPENAI_CACHE_MIN`, else ``1024 + 128·k`` ≤ ``prefix_tokens``.
    """
    if prefix_tokens < OPENAI_CACHE_MIN:
        return 0
    steps = (prefix_tokens - OPENAI_CACHE_MIN) // OPENAI_CACHE_STEP
    return OPENAI_CACHE_MIN + OPENAI_CACHE_STEP * steps


IMAGE_PART_TYPES: Final = frozenset({"image", "image_url", "input_image"})
"""Content parts that are images: Anthropic ``image``, Chat ``image_url``, Responses
``input_image`` (each API reference's content part types)."""


def _image_payload(node: dict[str, Any]) -> str | None:
    """Return the base64 payload of an image part (``source.data`` or a ``data:`` URL)."""
    if node.get("type") == "image":
        source = node.get("source")
        data = source.get("data") if isinstance(source, dict) else None
        return data if isinstance(data, str) else None
    url = node.get("image_url")
    if isinstance(url, dict):
        url = url.get("url")
    return url if isinstance(url, str) and url.startswith("data:") else None


def _add_images(value: Any, acc: list[int]) -> None:
    if isinstance(value, dict):
        kind = value.get("type")
        if isinstance(kind, str) and kind in IMAGE_PART_TYPES:  # "type" may be any JSON value
            acc[0] += 1
            payload = _image_payload(value)
            if payload is not None:
                written = jsonbytes.encode_str(payload).encode("utf-8", "surrogatepass")
                acc[1] += len(written) - 2
        children: Any = value.values()
    elif isinstance(value, list):
        children = value
    else:
        return
    for child in children:
        if isinstance(child, dict | list):
            _add_images(child, acc)


def image_counts(value: Any) -> tuple[int, int]:
    """Return (image parts, bytes of their base64 payloads as written) found in a parsed item.

    The payload bytes are the characters of each ``source.data`` / ``data:`` URL string as
    compact JSON writes them, without its quotes (its key still counts as text).

    Raises:
        RecursionError: The value nests deeper than Python's recursion limit.
    """
    acc = [0, 0]
    _add_images(value, acc)
    return acc[0], acc[1]


def item_measure(value: Any, data: bytes) -> tuple[int, int]:
    """Return (tokens, image parts) of one prefix item: the rule in this module's docstring.

    Args:
        value: The item's parsed value, cache markers removed.
        data: Its compact JSON bytes (``len(data)`` bytes).
    """
    images, payload = image_counts(value)
    return IMAGE_TOKENS * images + bytes_tokens(len(data) - payload), images


def item_tokens(value: Any, data: bytes) -> int:
    """Return the tokens of one prefix item (see :func:`item_measure`)."""
    return item_measure(value, data)[0]
