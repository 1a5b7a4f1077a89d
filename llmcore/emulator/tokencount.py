r"""The emulator's own token-count approximation (SPEC V2, V4, V5): text, images, tool prompts.

The emulator ships no provider tokenizer. It estimates the tokens of each prefix item from the
parsed wire item, independently of :mod:`llmcore.tokens` (the auditor's count) and of
:mod:`llmcore.providers` (V4), by these rules, each with its source:

* **Text** (:func:`text_tokens`): the string is split the way byte-pair tokenizers pre-split
  text — words with their leading space, runs of at most three digits, punctuation runs,
  newlines — and each piece costs one token, a long word one more per
  :data:`WORD_CHARS` characters past the first :data:`WORD_CHARS`, a punctuation run one per
  two characters, and a character outside ASCII one token each. The split follows the
  pre-tokenizer pattern of OpenAI's ``o200k_base``/``cl100k_base`` encodings
  (``\p{N}{1,3}``, `` ?[^\s\p{L}\p{N}]+``: https://github.com/openai/tiktoken,
  ``tiktoken_ext/openai_public.py``, read 2026-12-02). Calibrated against the usage recorded
  in the vendored cassettes (``benchmarks/calibration_emulator.py``): it replaces the
  "4 bytes of JSON per token" rule, which read OpenAI prompts 11–38% high (the JSON syntax of
  a message is not what the model is shown) and digit-heavy text low.
* **Messages** (:data:`MESSAGE_TOKENS`): a message costs 3 tokens besides its content and its
  role: "every message follows <|start|>{role/name}\n{content}<|end|>\n", ``tokens_per_message
  = 3`` (OpenAI cookbook *How to count tokens with tiktoken*,
  https://cookbook.openai.com/examples/how_to_count_tokens_with_tiktoken, read 2026-12-02).
  OpenAI only: an Anthropic block is its content alone (Anthropic documents no per-message
  count; the few tokens of its turn markers are left out, so a one-word Anthropic prompt,
  recorded at 8–13 input tokens, is estimated low).
* **Images** (:func:`image_tokens`): the pixel size is read from the base64 payload's header
  (PNG, GIF, JPEG, WebP). Anthropic: "tokens = (width px * height px)/750", an image whose
  long edge exceeds 1,568 px or that is over about 1,600 tokens is first scaled down
  (https://platform.claude.com/docs/en/build-with-claude/vision, "Calculate image costs",
  read 2026-12-02). OpenAI: ``detail: "low"`` costs 85 tokens ("Using detail: low lets the
  model process the image with a budget of ~85 tokens", quoted from
  https://platform.openai.com/docs/guides/images-vision in openai/openai-python#2851); else
  the image is scaled to fit 2,048 × 2,048, then its short side to 768 px, and costs 85 + 170
  per 512-px tile (same guide, "Calculating costs"). An image whose size cannot be read (a URL,
  a file id, an unknown format) counts :data:`UNKNOWN_IMAGE_TOKENS`.
* **Tool-use system prompt** (:func:`tool_prompt_tokens`): with ``tools`` the Anthropic API
  "automatically include[s] a special system prompt for the model which enables tool use"; its
  size per model and ``tool_choice`` is the table :data:`ANTHROPIC_TOOL_PROMPT` ("The number of
  tool use tokens required for each model are listed below", Anthropic *Tool use overview*,
  Pricing, https://platform.claude.com/docs/en/agents-and-tools/tool-use/overview#pricing,
  read 2026-12-02).
* **OpenAI tool definitions** (:func:`openai_tool_tokens`): a function costs 7 tokens, its
  ``name:description`` line, 3 for its properties, and per property 3 plus its
  ``name:type:description`` line (an ``enum`` −3 plus 3 and the value per item), and the tools
  12 more ("func_init = 7 … prop_init = 3, prop_key = 3, enum_init = -3, enum_item = 3,
  func_end = 12" for gpt-4o and gpt-4o-mini, same cookbook, section 7 "Counting tokens for chat
  completions with tool calls"). A nested schema inside a property counts as compact JSON. A
  tool that is not a function (hosted tools) counts as compact JSON.
* **Binary payloads** of documents, files and audio (base64 strings over
  :data:`BINARY_MIN_CHARS` characters in ``data`` / ``file_data`` / ``data:`` URLs) are not
  text: they count nothing (the provider extracts pages or samples the emulator cannot see).
"""

from __future__ import annotations

import base64
import binascii
import re
import struct
from typing import Any, Final

__all__ = [
    "ANTHROPIC_TOOL_PROMPT",
    "BINARY_MIN_CHARS",
    "MESSAGE_TOKENS",
    "UNKNOWN_IMAGE_TOKENS",
    "WORD_CHARS",
    "bytes_tokens",
    "common_prefix_len",
    "image_size",
    "image_tokens",
    "json_tokens",
    "openai_tool_tokens",
    "text_tokens",
    "tool_prompt_tokens",
]

WORD_CHARS: Final = 6
"""Letters one word piece holds before it costs another token (calibrated, see module doc)."""

MESSAGE_TOKENS: Final = 3
"""Tokens a message costs besides its role and content (OpenAI cookbook, see module doc)."""

UNKNOWN_IMAGE_TOKENS: Final = 1600
"""An image of unknown size: Anthropic's ~1.15 megapixel cap ÷ 750 px per token."""

BINARY_MIN_CHARS: Final = 256
"""A ``data``/``file_data`` string at least this long is a base64 payload, not text."""

ANTHROPIC_TOOL_PROMPT: Final[tuple[tuple[str, int, int], ...]] = (
    ("claude-3-opus", 530, 281),
    ("claude-3-sonnet", 159, 235),
    ("claude-3-haiku", 264, 340),
    ("claude-3-5-haiku", 264, 340),
    ("claude-", 346, 313),
)
"""``(model-id prefix, tokens with tool_choice auto/none, tokens with any/tool)``.

The Anthropic table lists 346 / 313 for Claude Opus 4.5, 4.1, 4, Sonnet 4.5, 4, 3.7 and
Haiku 4.5; 264 / 340 for Haiku 3.5 and Haiku 3; 530 / 281 for Opus 3; 159 / 235 for Sonnet 3
(source in the module doc). A model it does not list (newer ones) takes the Claude 4 row. "If
no ``tools`` are provided, then a tool choice of ``none`` uses 0 additional system prompt
tokens."""

_PIECES: Final = re.compile(
    r"'(?:[sdmt]|ll|ve|re)(?![^\W\d_])"
    r"|[^\r\n\w]?[^\W\d_]+"
    r"|\d{1,3}"
    r"| ?(?:[^\s\w]|_)+[\r\n]*"
    r"|\s*[\r\n]+"
    r"|\s+(?!\S)"
    r"|\s+"
    r"|\S"
)
_ANTHROPIC_MAX_EDGE: Final = 1568
_ANTHROPIC_MAX_TOKENS: Final = 1600
_PX_PER_TOKEN: Final = 750


def _piece_tokens(piece: str) -> int:
    if not piece.isascii():
        return sum(1 for ch in piece if not ch.isascii()) or 1
    body = piece.lstrip()
    if body[:1].isalpha() or body[:1] == "'":
        return 1 + max(0, len(body) - 1) // WORD_CHARS
    if body[:1].isdigit() or not body:
        return 1
    return (len(body) + 1) // 2


def text_tokens(text: str) -> int:
    """Return the estimated tokens of ``text`` (the split rule in the module docstring).

    Args:
        text: Any string; ``""`` is 0 tokens.

    Returns:
        A count ≥ 1 for non-empty text.
    """
    if not text:
        return 0
    return sum(_piece_tokens(m.group()) for m in _PIECES.finditer(text))


def bytes_tokens(length: int) -> int:
    """Return ``ceil(length / 4)``: the output tokens of a scripted reply of ``length`` bytes.

    The rule of thumb "one token generally corresponds to ~4 characters of text for common
    English text" (OpenAI, *What are tokens and how to count them?*,
    https://help.openai.com/en/articles/4936856, read 2026-12-02); output tokens do not enter
    cache accounting.
    """
    return -(-length // 4)


def json_tokens(value: Any) -> int:
    """Return the tokens of ``value`` shown as compact JSON (tool schemas, tool inputs).

    Raises:
        RecursionError: ``value`` nests too deeply to be written.
    """
    from llmcore import jsonbytes
    from llmcore.errors import EncodingError

    try:
        data = jsonbytes.dumps(value)
    except EncodingError as exc:
        raise RecursionError(str(exc)) from None
    return text_tokens(data.decode("utf-8", "surrogatepass"))


def common_prefix_len(a: bytes, b: bytes) -> int:
    """Return the number of leading bytes ``a`` and ``b`` share (doubling, then bisecting)."""
    limit = min(len(a), len(b))
    low, width = 0, 64
    while low < limit and a[low : low + width] == b[low : low + width]:
        low, width = min(low + width, limit), width * 2
    high = min(low + width, limit)
    while high - low > 1:
        middle = (low + high) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle
    if low < limit and high - low == 1 and a[low] == b[low]:
        low += 1
    return low


def _png(data: bytes) -> tuple[int, int] | None:
    if data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR":
        width, height = struct.unpack(">II", data[16:24])
        return width, height
    return None


def _gif(data: bytes) -> tuple[int, int] | None:
    if data[:6] in (b"GIF87a", b"GIF89a"):
        width, height = struct.unpack("<HH", data[6:10])
        return width, height
    return None


def _webp(data: bytes) -> tuple[int, int] | None:
    if data[:4] != b"RIFF" or data[8:12] != b"WEBP":
        return None
    kind = data[12:16]
    if kind == b"VP8 " and len(data) >= 30:
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if kind == b"VP8L" and len(data) >= 25:
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if kind == b"VP8X" and len(data) >= 30:
        return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
    return None


def _jpeg(data: bytes) -> tuple[int, int] | None:
    if data[:2] != b"\xff\xd8":
        return None
    index = 2
    while index + 9 <= len(data):
        if data[index] != 0xFF:
            return None
        marker = data[index + 1]
        length = int.from_bytes(data[index + 2 : index + 4], "big")
        if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF):
            height, width = struct.unpack(">HH", data[index + 5 : index + 9])
            return width, height
        index += 2 + length
    return None


def image_size(payload: str) -> tuple[int, int] | None:
    """Return ``(width, height)`` in pixels of a base64 image (or ``data:`` URL), else None.

    Reads only the header: PNG ``IHDR``, GIF logical screen, JPEG ``SOFn``, WebP ``VP8``/
    ``VP8L``/``VP8X``. A payload that is not base64 or not one of these formats gives None.
    """
    if payload.startswith("data:"):
        payload = payload.partition(",")[2]
    head = payload[:65536]
    head = head[: len(head) - len(head) % 4]
    try:
        data = base64.b64decode(head, validate=False)
    except (binascii.Error, ValueError):
        return None
    for reader in (_png, _gif, _jpeg, _webp):
        found = reader(data)
        if found is not None and found[0] > 0 and found[1] > 0:
            return found
    return None


def _anthropic_image(width: int, height: int) -> int:
    scale = min(1.0, _ANTHROPIC_MAX_EDGE / max(width, height))
    scale = min(scale, (_ANTHROPIC_MAX_TOKENS * _PX_PER_TOKEN / (width * height)) ** 0.5)
    scaled_w, scaled_h = max(1, int(width * scale)), max(1, int(height * scale))
    return max(1, -(-(scaled_w * scaled_h) // _PX_PER_TOKEN))


def _openai_image(width: int, height: int, detail: str) -> int:
    if detail == "low":
        return 85
    fit = min(1.0, 2048 / max(width, height))
    fit *= min(1.0, 768 / (min(width, height) * fit))
    tiles = -(-int(width * fit) // 512) * -(-int(height * fit) // 512)
    return 85 + 170 * max(1, tiles)


def image_tokens(provider: str, payload: str | None, detail: str = "auto") -> int:
    """Return the tokens of one image (the pixel rules in the module docstring).

    Args:
        provider: ``"anthropic"`` or ``"openai"``.
        payload: The base64 data or ``data:`` URL, or None (a URL or file id: size unknown).
        detail: The OpenAI ``detail`` setting (``"low"`` is a flat 85).
    """
    if provider == "openai" and detail == "low":
        return 85
    size = image_size(payload) if payload else None
    if size is None:
        return UNKNOWN_IMAGE_TOKENS
    if provider == "anthropic":
        return _anthropic_image(*size)
    return _openai_image(size[0], size[1], detail)


def tool_prompt_tokens(model: str, tool_choice: Any) -> tuple[int, int]:
    """Return the Anthropic tool-use system prompt tokens for ``model`` (tools present), split.

    A ``tool_choice`` change keeps the tools and system cache levels (PROVIDER-RULES §1.6), so
    the part every ``tool_choice`` shares (the smaller figure of the row) is counted with the
    tools, and the rest of the figure for this ``tool_choice`` at the start of the messages.

    Args:
        model: The request's ``model``.
        tool_choice: The request's ``tool_choice`` (absent: ``auto``).

    Returns:
        ``(tokens in the tools level, tokens at the start of the messages level)``.
    """
    kind = tool_choice.get("type") if isinstance(tool_choice, dict) else "auto"
    row = next((r for r in ANTHROPIC_TOOL_PROMPT if model.startswith(r[0])), None)
    _, free, chosen = row or ANTHROPIC_TOOL_PROMPT[-1]
    shared = min(free, chosen)
    return shared, (chosen if kind in ("any", "tool") else free) - shared


_FUNC_INIT: Final = 7
_PROP_INIT: Final = 3
_PROP_KEY: Final = 3
_ENUM_INIT: Final = -3
_ENUM_ITEM: Final = 3
FUNCTIONS_END: Final = 12
"""Tokens closing the tool definitions of an OpenAI request (cookbook ``func_end``)."""
_PROPERTY_SHOWN: Final = frozenset({"type", "description", "enum"})


def _strip_period(text: str) -> str:
    return text[:-1] if text.endswith(".") else text


def _property_tokens(name: str, schema: Any) -> int:
    if not isinstance(schema, dict):
        return _PROP_KEY + text_tokens(name) + json_tokens(schema)
    kind = schema.get("type", "")
    description = schema.get("description", "")
    line = f"{name}:{kind if isinstance(kind, str) else ''}:"
    line += _strip_period(description) if isinstance(description, str) else ""
    total = _PROP_KEY + text_tokens(line)
    enum = schema.get("enum")
    if isinstance(enum, list):
        total += _ENUM_INIT + sum(_ENUM_ITEM + text_tokens(str(item)) for item in enum)
    rest = {key: value for key, value in schema.items() if key not in _PROPERTY_SHOWN}
    return total + (json_tokens(rest) if rest else 0)


def openai_tool_tokens(tool: Any) -> int:
    """Return the tokens of one OpenAI tool definition (Chat or Responses form).

    The cookbook rule in the module docstring, without the closing :data:`FUNCTIONS_END`
    (counted once per request by the caller). A non-function tool counts as compact JSON.
    """
    function = tool.get("function", tool) if isinstance(tool, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        return json_tokens(tool)
    description = function.get("description") or ""
    total = _FUNC_INIT + text_tokens(f"{function['name']}:{_strip_period(str(description))}")
    parameters = function.get("parameters")
    properties = parameters.get("properties") if isinstance(parameters, dict) else None
    if isinstance(properties, dict) and properties:
        total += _PROP_INIT
        total += sum(_property_tokens(str(key), value) for key, value in properties.items())
    return total
