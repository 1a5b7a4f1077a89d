"""The auditor's token estimates: one table of rules per tokenizer family, each with a source.

llmcore ships no tokenizer. The auditor (SPEC V1, V5) estimates the tokens of each prefix item
from the wire body on its own — it shares nothing with :mod:`llmcore.providers` or with the
emulator's count (:mod:`llmcore.tokens`, V4) — and the estimates are held against the input
tokens that recorded responses report (``benchmarks/bench_calibration.py``, README "Calibration").

An item's tokens are the sum of:

* **text**: its string values and object keys (except the structural keys of
  :data:`STRUCTURAL_KEYS`, which the provider's prompt template does not render; base64
  payloads, signatures and encrypted reasoning left out), counted piece by piece
  (:func:`text_tokens`: words, digit groups, punctuation), plus the family's per-item overhead
  (role and block markers, :data:`FAMILIES`);
* **images**: each image's own rule from its pixel size (:func:`image_tokens`), read from the
  image bytes (:mod:`llmcore.audit._pixels`); an image given by URL or file id, whose bytes the
  body does not hold, counts the family's largest image;
* **PDF documents**: per page (:data:`PDF_PAGE_TOKENS`).

Beside the items, a request with tools carries the provider's hidden tool-use system prompt
(:func:`tool_prompt_tokens`), which is cached with the tools.

Leaves out: which items a body has (:mod:`llmcore.audit._shape`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from llmcore.audit._pixels import decode_base64, head_bytes, image_size, pdf_pages

__all__ = [
    "FAMILIES",
    "PDF_PAGE_TOKENS",
    "STRUCTURAL_KEYS",
    "text_tokens",
    "TOOL_PROMPT_TOKENS",
    "THINKING_TOKENS",
    "Family",
    "family_of",
    "image_tokens",
    "item_tokens",
    "tool_prompt_tokens",
]

CALIBRATION: Final = "recorded usage of the vendored cassettes (benchmarks/bench_calibration.py)"
"""The source of every constant fitted on recorded traffic rather than read in a document."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Family:
    """How one provider family's tokenizer and prompt template count a prefix item."""

    name: str
    """``anthropic``, ``openai`` or ``gemini``."""
    chars_per_token: float
    """Letters per token beyond :attr:`whole_word` in a run of letters (:func:`text_tokens`;
    source: :data:`CALIBRATION`)."""
    whole_word: int
    """Letters a run of letters may have and still be one token (a common word is one token
    in a byte-pair vocabulary; source: :data:`CALIBRATION`)."""
    digits_per_token: float
    """Digits per token in a run of digits (:func:`text_tokens`): OpenAI's tokenizer groups up
    to three (https://github.com/openai/tiktoken, the ``cl100k_base`` / ``o200k_base``
    patterns' ``\\p{N}{1,3}``); Gemini's SentencePiece model splits every digit (Gemma report,
    https://arxiv.org/abs/2403.08295, "split digits"); Anthropic's count of digit-dense text in
    recorded usage is one per digit (pydantic-ai ``test_inline_system_prompt_cache_prefix_is_
    reused``: 1,592 tokens)."""
    item_overhead: int
    """Tokens each item adds besides its text: role and block markers (source:
    :data:`CALIBRATION`; OpenAI's "every message follows <|start|>{role}\\n{content}<|end|>\\n",
    3 tokens, https://cookbook.openai.com/examples/how_to_count_tokens_with_tiktoken)."""
    tool_overhead: int
    """Tokens each tool definition adds besides its text (source: :data:`CALIBRATION`)."""
    max_image: int
    """Tokens of an image whose pixel size cannot be read (the family's largest image)."""
    format_overhead: int
    """Tokens a structured-output schema adds besides its text (the provider's instructions
    around it; source: :data:`CALIBRATION`, llm-anthropic ``test_schema_prompt`` 230 tokens
    against ``test_prompt`` 17, llm-openai-plugin ``test_async_model_schema`` 80 against 27)."""


FAMILIES: Final[Mapping[str, Family]] = {
    "anthropic": Family(
        name="anthropic",
        whole_word=3,
        chars_per_token=2.5,
        digits_per_token=1.0,
        item_overhead=5,
        tool_overhead=90,
        max_image=1600,
        format_overhead=190,
    ),
    "openai": Family(
        name="openai",
        whole_word=4,
        chars_per_token=2.5,
        digits_per_token=3.0,
        item_overhead=3,
        tool_overhead=8,
        max_image=1105,
        format_overhead=40,
    ),
    "deepseek": Family(
        name="deepseek",
        whole_word=3,
        chars_per_token=2.0,
        digits_per_token=1.0,
        item_overhead=5,
        tool_overhead=20,
        max_image=1105,
        format_overhead=40,
    ),
    "nova": Family(
        name="nova",
        whole_word=3,
        chars_per_token=2.5,
        digits_per_token=1.0,
        item_overhead=5,
        tool_overhead=60,
        max_image=1600,
        format_overhead=40,
    ),
    "gemini": Family(
        name="gemini",
        whole_word=6,
        chars_per_token=5.0,
        digits_per_token=1.0,
        item_overhead=2,
        tool_overhead=8,
        max_image=1032,
        format_overhead=0,
    ),
}
"""Each tokenizer family's constants. DeepSeek's and Nova's are fitted on their recorded
cassettes alone (pydantic-ai ``test_deepseek_deferred_capability_with_thinking`` and
``test_bedrock_single_tool_choice_preserves_cache[nova]``). ``max_image``: Anthropic "If your
image's long edge is more than 1568 pixels, or your image is more than ~1,600 tokens, it is
first scaled down" (https://platform.claude.com/docs/en/build-with-claude/vision, read
2026-12-02); OpenAI 85 + 170 per 512-px tile of an image scaled into 2048 × 2048 and then to
768 px on its short side: at most 6 tiles
(https://platform.openai.com/docs/guides/images-vision#calculating-costs, read 2026-12-02);
Gemini 258 per 768-px tile (4 tiles for a square 1536-px image, taken as the largest)."""

STRUCTURAL_KEYS: Final = frozenset(
    {
        "type",
        "role",
        "content",
        "text",
        "source",
        "media_type",
        "cache_control",
        "prompt_cache_breakpoint",
        "cachePoint",
        "id",
        "tool_use_id",
        "tool_call_id",
        "call_id",
        "status",
        "signature",
        "encrypted_content",
        "data",
        "image_url",
        "url",
        "detail",
        "parts",
        "function",
        "tool_calls",
        "input",
        "name",
        "arguments",
        "output",
        "summary",
        "thoughtSignature",
        "functionCall",
        "functionResponse",
        "inlineData",
        "mimeType",
        "toolUse",
        "toolResult",
        "toolUseId",
        "json",
        "is_error",
    }
)
"""Object keys that are wire structure, not rendered text: the API references' block and
message members (Anthropic Messages, OpenAI Chat and Responses, Gemini, Converse). Keys inside a
tool's schema or a tool call's input are text the model reads and count."""

_SKIPPED_VALUES: Final = frozenset(
    {
        "signature",
        "encrypted_content",
        "data",
        "thoughtSignature",
        "type",
        "role",
        "media_type",
        "mimeType",
        "id",
        "tool_use_id",
        "tool_call_id",
        "call_id",
        "status",
        "detail",
    }
)
"""Members whose string value is not text the model reads: payloads, signatures, and the
structural values (block types, roles, ids) the prompt template renders as its own markers."""

PDF_PAGE_TOKENS: Final[Mapping[str, int]] = {
    "anthropic": 2250,
    "openai": 2250,
    "deepseek": 2250,
    "nova": 2250,
    "gemini": 258,
}
"""Tokens per PDF page. Anthropic: "Each page typically uses 1,500-3,000 tokens per page
depending on content density" (https://platform.claude.com/docs/en/build-with-claude/pdf-support,
read 2026-12-02), the middle taken; OpenAI sends each page's text and image as well, counted
alike; Gemini: "each document page is equivalent to 258 tokens"
(https://ai.google.dev/gemini-api/docs/document-processing, read 2026-12-02)."""

TOOL_PROMPT_TOKENS: Final[Mapping[str, tuple[int, int]]] = {
    "claude-3-opus": (530, 281),
    "claude-3-sonnet": (159, 235),
    "claude-3-haiku": (264, 340),
    "claude-3-5-haiku": (264, 340),
    "claude": (346, 313),
}
"""Anthropic's tool-use system prompt per model (by longest name prefix): tokens for
``tool_choice`` ``auto`` / ``none``, and for ``any`` / ``tool``. "When you use tools, we also
automatically include a special system prompt for the model which enables tool use"; the table
"Tool use system prompt token count" lists 346 / 313 for the Claude 4 models, Sonnet 3.7 and 3.5,
264 / 340 for Haiku 3.5 and 3, 530 / 281 for Opus 3, 159 / 235 for Sonnet 3
(https://platform.claude.com/docs/en/agents-and-tools/tool-use/overview#pricing, read 2026-12-02;
Claude 3 rows also at https://docs.anthropic.com/en/docs/tool-use-pricing-and-tokens)."""


THINKING_TOKENS: Final[Mapping[str, int]] = {"enabled": 29, "adaptive": 17}
"""Tokens Anthropic adds to a request with ``thinking`` of each type (source:
:data:`CALIBRATION`: llm-anthropic ``test_thinking_prompt`` 46 input tokens and
``test_opus_46_adaptive_thinking`` 34 against ``test_prompt``'s 17 for the same prompt)."""


def family_of(provider: str, model: str) -> Family:
    """Return the tokenizer family of a request: by the model for OpenRouter and Bedrock.

    Anthropic Messages and Claude models elsewhere (``anthropic/…`` on OpenRouter,
    ``…anthropic.claude-…`` on Bedrock) count as ``anthropic``; Gemini bodies and ``google/…`` /
    ``gemini…`` models as ``gemini``; DeepSeek and Amazon Nova models as their own; the rest
    (OpenAI, open models) as ``openai``.
    """
    name = model.lower()
    if provider == "anthropic" or "claude" in name:
        return FAMILIES["anthropic"]
    if "deepseek" in name:
        return FAMILIES["deepseek"]
    if "nova" in name:
        return FAMILIES["nova"]
    if provider == "gemini" or "gemini" in name or name.startswith("google/"):
        return FAMILIES["gemini"]
    return FAMILIES["openai"]


def tool_prompt_tokens(model: str, tool_choice: Any) -> int:
    """Return the tokens of Anthropic's hidden tool-use system prompt (:data:`TOOL_PROMPT_TOKENS`).

    Args:
        model: The request's model (a Bedrock or OpenRouter id is matched on its Claude name).
        tool_choice: The request's ``tool_choice`` (``None`` means ``auto``).
    """
    name = model.rsplit("/", 1)[-1]
    name = name[name.index("claude") :] if "claude" in name else name
    best = ""
    for key in TOOL_PROMPT_TOKENS:
        if name.startswith(key) and len(key) > len(best):
            best = key
    auto, forced = TOOL_PROMPT_TOKENS[best or "claude"]
    kind = tool_choice.get("type") if isinstance(tool_choice, dict) else tool_choice
    return forced if kind in ("any", "tool") else auto


# --- images ----------------------------------------------------------------------------------


def image_tokens(family: Family, size: tuple[int, int] | None, detail: Any) -> int:
    """Return the tokens of one image of ``size`` (width, height in pixels) for ``family``.

    * Anthropic: ``ceil(w·h / 750)`` after scaling down, aspect kept, so the long edge is at most
      1,568 px and the image at most ~1,600 tokens (1.2 megapixels): "tokens = (width px ×
      height px)/750" (https://platform.claude.com/docs/en/build-with-claude/vision, read
      2026-12-02).
    * OpenAI: ``detail: "low"`` 85; otherwise scaled into 2048 × 2048, then down to 768 px on
      its short side, 85 + 170 per 512-px tile
      (https://platform.openai.com/docs/guides/images-vision#calculating-costs, read 2026-12-02).
    * Gemini: 258 when both sides are at most 384 px, else 258 per 768 × 768 tile
      (https://ai.google.dev/gemini-api/docs/tokens#multimodal-tokens, read 2026-12-02).

    An unknown size counts :attr:`Family.max_image`.
    """
    if size is None:
        return 85 if family.name == "openai" and detail == "low" else family.max_image
    width, height = size
    if family.name == "anthropic":
        scale = min(1.0, 1568 / max(width, height), math.sqrt(1_200_000 / (width * height)))
        return max(1, math.ceil(int(width * scale) * int(height * scale) / 750))
    if family.name == "gemini":
        if width <= 384 and height <= 384:
            return 258
        return 258 * math.ceil(width / 768) * math.ceil(height / 768)
    if detail == "low":
        return 85
    scale = min(1.0, 2048 / max(width, height))
    scale *= min(1.0, 768 / (min(width, height) * scale))
    tiles = math.ceil(width * scale / 512) * math.ceil(height * scale / 512)
    return 85 + 170 * tiles


def _payload(node: dict[str, Any]) -> tuple[str | None, str | None]:
    """(base64 payload, media type) of an image or document block, when the body holds it."""
    source = node.get("source")
    if isinstance(source, dict) and isinstance(source.get("data"), str):  # Anthropic
        media = source.get("media_type")
        return source["data"], media if isinstance(media, str) else None
    inline = node.get("inlineData") or node.get("inline_data")  # Gemini
    if isinstance(inline, dict) and isinstance(inline.get("data"), str):
        media = inline.get("mimeType") or inline.get("mime_type")
        return inline["data"], media if isinstance(media, str) else None
    url = node.get("image_url", node.get("file_data"))  # Chat, Responses
    if isinstance(url, dict):
        url = url.get("url")
    if isinstance(url, str) and url.startswith("data:") and "," in url:
        head, _, data = url.partition(",")
        return data, head[5:].split(";", 1)[0]
    return None, None


_IMAGE_TYPES: Final = frozenset({"image", "image_url", "input_image"})
_DOCUMENT_TYPES: Final = frozenset({"document", "file", "input_file"})


def _media_tokens(node: dict[str, Any], family: Family) -> int | None:
    """Tokens of an image or PDF block, or ``None`` when ``node`` is neither."""
    kind = node.get("type")
    kind = kind if isinstance(kind, str) else None
    inline = node.get("inlineData") if kind is None else None
    if kind in _IMAGE_TYPES or (
        isinstance(inline, dict) and "image" in str(inline.get("mimeType"))
    ):
        data, _media = _payload(node)
        head = head_bytes(data) if data is not None else None
        size = image_size(head) if head is not None else None
        return image_tokens(family, size, node.get("detail"))
    if kind in _DOCUMENT_TYPES or isinstance(inline, dict):
        data, media = _payload(node)
        if data is None or (media is not None and "pdf" not in media):
            return None
        raw = decode_base64(data)
        return PDF_PAGE_TOKENS[family.name] * (pdf_pages(raw) if raw else 1)
    return None


# --- text ------------------------------------------------------------------------------------


_WORDS: Final = re.compile(r"[A-Za-z]+")
_DIGITS: Final = re.compile(r"[0-9]+")
_NEWLINES: Final = re.compile(r"\n+")
_OTHER: Final = re.compile(r"[^A-Za-z0-9\s]")
_LONG: dict[int, re.Pattern[str]] = {}


def _long_words(whole: int) -> re.Pattern[str]:
    """The pattern of runs of letters longer than ``whole``."""
    found = _LONG.get(whole)
    if found is None:
        found = _LONG[whole] = re.compile(f"[A-Za-z]{{{whole + 1},}}")
    return found


def text_tokens(text: str, family: Family) -> float:
    """Return the estimated tokens of one string (before rounding).

    A byte-pair tokenizer keeps a common word whole, splits a long one, groups digits, and
    gives most punctuation and non-Latin characters a token each; spaces join the word after
    them. So: a run of letters counts 1, plus ``(len - whole_word) / chars_per_token`` beyond
    :attr:`Family.whole_word` letters; a run of digits ``len / digits_per_token`` (at least 1);
    a run of newlines 1; spaces and tabs nothing; any other character 1 (source:
    :data:`CALIBRATION`).
    """
    if len(text) < 4 and text.isascii() and text.isalpha():
        return 1.0
    words = _WORDS.findall(text)
    long = _long_words(family.whole_word).findall(text)
    total = (
        len(words) + (sum(map(len, long)) - family.whole_word * len(long)) / family.chars_per_token
    )
    digits = _DIGITS.findall(text)
    if family.digits_per_token == 1:
        total += sum(map(len, digits))
    else:
        total += sum(max(1.0, len(run) / family.digits_per_token) for run in digits)
    return total + len(_NEWLINES.findall(text)) + len(_OTHER.findall(text))


def _walk(value: Any, family: Family, texts: list[str], media: list[int]) -> None:
    """Collect ``value``'s rendered strings into ``texts`` and its media tokens into ``media``."""
    if isinstance(value, dict):
        found = _media_tokens(value, family)
        if found is not None:
            media.append(found)
            return
        for key, child in value.items():
            if key not in STRUCTURAL_KEYS:
                texts.append(key)
            if key in _SKIPPED_VALUES and isinstance(child, str):
                continue
            _walk(child, family, texts, media)
    elif isinstance(value, list):
        for child in value:
            _walk(child, family, texts, media)
    elif isinstance(value, str):
        texts.append(value)
    elif value is not None:
        texts.append(str(value))


def item_tokens(value: Any, family: Family, *, tool: bool = False) -> int:
    """Return the estimated tokens of one prefix item (the rules in this module's docstring).

    Args:
        value: The item's parsed value, breakpoints removed.
        family: The request's tokenizer family (:func:`family_of`).
        tool: Whether the item is a tool definition (adds :attr:`Family.tool_overhead`).

    Raises:
        RecursionError: The value nests deeper than Python's recursion limit.
    """
    texts: list[str] = []
    media: list[int] = []
    _walk(value, family, texts, media)
    text = text_tokens(" ".join(texts), family) if texts else 0.0
    overhead = family.tool_overhead if tool else family.item_overhead
    return math.ceil(text) + sum(media) + overhead
