"""The prefix items of a request body, counted by the auditor's estimates (SPEC V1, V5).

A request's cacheable prefix is a list of items in cache order (:data:`~llmcore.audit._shape.
SECTIONS`): each tool definition, each system block, each message (OpenAI) or each content
block of each message (the whole-item rule: Anthropic, Converse, Gemini), plus the hidden items
the provider adds (:func:`hidden_items`). Each item's tokens come from
:mod:`llmcore.audit.estimate`; its bytes are its compact JSON with the breakpoints removed.
Which items carry a breakpoint is recorded for the maximum (:mod:`llmcore.audit._maximum`).

Leaves out: what a body's shape is (:mod:`llmcore.audit._shape`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from llmcore.audit import estimate
from llmcore.audit._scan import ItemInfo, ScannedBody, is_cache_point
from llmcore.audit._shape import (
    SECTIONS,
    TokenItem,
    _compact,
    _content,
    _strip,
    deferred,
    msg,
    text_shorthand,
)

__all__ = ["hidden_items", "token_items"]


_ONE_BLOCK: Final = (
    "A string and the one text block holding it are one prompt to the provider: Anthropic's"
    " recorded usage reads the whole earlier prefix across the change (4,597 tokens written,"
    " then 4,597 read, issue 19), and so does OpenRouter's (pydantic-ai's OpenRouter cache"
    " cassettes). Items are keyed on the one-block form (Anthropic) or the string (Chat)."
)


def _text_block(value: Any) -> Any:
    """A string, or a text block, as the one text block it equals ([_ONE_BLOCK]).

    A text block's members are not text the model reads, so their order is not kept.
    """
    if isinstance(value, str):
        return {"type": "text", "text": value}
    if (
        isinstance(value, dict)
        and value.get("type") == "text"
        and isinstance(value.get("text"), str)
        and len(value) == 2
    ):
        return {"type": "text", "text": value["text"]}
    return value


def _whole(info: ItemInfo, fam: estimate.Family, how: tuple[bool, str]) -> tuple[bytes, int]:
    """(compact bytes, tokens) of an item counted whole; ``how`` is (a tool?, section kind)."""
    tool, kind = how
    key = f"whole:{fam.name}:{tool}:{kind}"
    got = info.extra.get(key)
    if got is None:
        value = _strip(info.parsed())
        if kind == "system":
            value = _text_block(value)
        elif kind == "chat":
            value = text_shorthand(value)
        got = (_compact(value), estimate.item_tokens(value, fam, tool=tool))
        info.extra[key] = got
    assert isinstance(got, tuple)
    return got


def _blocks(info: ItemInfo, fam: estimate.Family) -> tuple[tuple[bytes, int], ...]:
    key = f"blocks:{fam.name}"
    got = info.extra.get(key)
    if got is None:
        content = _content(info.parsed())
        parts = content if isinstance(content, list) else [_text_block(content)]
        out = []
        for part in parts:
            if is_cache_point(part):
                continue
            stripped = _text_block(_strip(part))
            out.append((_compact(stripped), estimate.item_tokens(stripped, fam)))
        got = tuple(out)
        info.extra[key] = got
    assert isinstance(got, tuple)
    return got


_STRING_ONLY: Final = frozenset({"system", "instructions"})


def _counted(section: str, value: Any) -> bool:
    """Whether a ``system`` / ``instructions`` item is a prefix item (tokens.py).

    ``instructions`` counts only as a string (even empty); ``system`` counts as a non-empty
    string or as blocks (objects).
    """
    if isinstance(value, str):
        return section == "instructions" or value != ""
    return section == "system" and isinstance(value, dict)


_FORMATS: Final = (
    ("output_format",),
    ("output_config", "format"),
    ("response_format",),
    ("text", "format"),
)
"""Where a request carries a structured-output schema: Anthropic ``output_format`` /
``output_config.format``, Chat ``response_format``, Responses ``text.format``. OpenAI: "the
structured-output schemas" are part of the cached prefix [O-201]; Anthropic compiles the schema
into the prompt (its tokens show in recorded usage: llm-anthropic ``test_schema_prompt``)."""


def _output_format(values: Mapping[str, Any]) -> Any:
    for path in _FORMATS:
        node: Any = values
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict) and node.get("type") not in (None, "text"):
            return node
    return None


def hidden_items(
    body: ScannedBody, provider: str, model: str, tools: bool
) -> tuple[list[TokenItem], list[TokenItem]]:
    """Return the prefix items a request has beyond its wire items: (before tools, after tools).

    Before: Anthropic's extended-thinking instructions (:data:`~llmcore.audit.estimate.
    THINKING_TOKENS`, keyed without the budget) and its tool-use system prompt when the request
    has tools (:func:`llmcore.audit.estimate.tool_prompt_tokens`), keyed without
    ``tool_choice`` (a ``tool_choice`` change keeps the tools level, PROVIDER-RULES §1.6).
    After: the request's structured-output schema (:data:`_FORMATS`), keyed on its bytes.
    """
    fam = estimate.family_of(provider, model)
    first = SECTIONS[provider][0]
    before: list[TokenItem] = []
    if fam.name == "anthropic":
        thinking = body.values.get("thinking")
        kind = thinking.get("type") if isinstance(thinking, dict) else None
        if isinstance(kind, str) and kind in estimate.THINKING_TOKENS:
            before.append((("hidden", "thinking"), b"", estimate.THINKING_TOKENS[kind], first))
        if tools:
            count = estimate.tool_prompt_tokens(model, body.values.get("tool_choice"))
            before.append((("hidden", "tool-use prompt"), b"", count, first))
    after: list[TokenItem] = []
    schema = _output_format(body.values)
    if schema is not None:
        data = _compact(schema)
        count = estimate.item_tokens(schema, fam) + fam.format_overhead
        after.append((("hidden", "format", data), data, count, _format_section(provider)))
    return before, after


def _format_section(provider: str) -> str:
    """The section a structured-output schema is keyed in (:mod:`llmcore.audit.keymodel`).

    OpenAI's prefix is tools, then the schema, then the messages or instructions, so a schema
    change discards the level after the tools; elsewhere the schema goes with the first level.
    """
    sections = SECTIONS[provider]
    openai = provider in ("openai-chat", "openai-responses", "openrouter")
    return sections[1] if openai and len(sections) > 1 else sections[0]


def _marked(value: Any) -> bool:
    """Whether a parsed block carries a breakpoint (``"cache_control": null`` is none)."""
    return isinstance(value, dict) and value.get("cache_control") is not None


def _point_after(body: ScannedBody, section: str, j: int) -> bool:
    """Whether a Converse ``cachePoint`` block follows top-level item ``j`` of ``section``."""
    wire = body.wire.get(section)
    if wire is None:
        return False
    if j + 1 < len(wire):
        return wire[j + 1] > wire[j] + 1
    infos, starts = body.items[section], body.starts[section]
    span = body.spans.get(section)
    end = span[1] if span is not None else len(body.text)
    return "cachePoint" in body.text[starts[j] + len(infos[j].raw) : end]


def _block_marks(info: ItemInfo) -> tuple[bool, ...]:
    """Per content block of a message (cache points left out): whether it is a breakpoint.

    Anthropic marks a block with ``cache_control``; Converse puts a ``cachePoint`` block after
    the block it marks (https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html).
    """
    got = info.extra.get("marks")
    if got is None:
        content = _content(info.parsed())
        parts = content if isinstance(content, list) else [content]
        out: list[bool] = []
        for part in parts:
            if is_cache_point(part):
                if out:
                    out[-1] = True
                continue
            out.append(_marked(part))
        got = tuple(out)
        info.extra["marks"] = got
    assert isinstance(got, tuple)
    return got


def token_items(
    body: ScannedBody,
    provider: str,
    anthropic: bool,
    model: str = "",
    marks: list[int] | None = None,
) -> list[TokenItem]:
    """Return the body's prefix items in cache order, counted by :mod:`llmcore.audit.estimate`.

    Anthropic rule: each tool, each system block (a string system is one item), each content
    block of each message (a string content is one item); keys carry the message index and role
    so a block moved to another message never matches. OpenAI rule: each tool, the
    instructions, each ``messages[i]`` / ``input[i]`` item. Anthropic tools marked
    ``defer_loading: true`` are left out (:func:`deferred`). The hidden items of
    :func:`hidden_items` stand before and after the tools.

    Args:
        body: The scanned body.
        provider: Its provider.
        anthropic: Whether the whole-item rule applies (:func:`anthropic_rules`).
        model: Its model (the token family and the tool-use prompt depend on it).
        marks: When given, receives the index of every item that carries a breakpoint
            (``cache_control``, a following ``cachePoint``), in order.
    """
    fam = estimate.family_of(provider, model)
    out: list[TokenItem] = []
    found: list[int] = [] if marks is None else marks
    sections = SECTIONS[provider]
    for section in sections:
        if section == sections[-1] and anthropic:
            _block_items(body, section, fam, out, found)
        elif section == sections[0]:
            tools: list[TokenItem] = []
            tool_marks: list[int] = []
            _whole_items(body, (section, provider, anthropic), fam, tools, tool_marks)
            before, after = hidden_items(body, provider, model, bool(tools))
            out[:0] = [*before, *tools, *after]
            found.extend(len(before) + k for k in tool_marks)
        else:
            _whole_items(body, (section, provider, anthropic), fam, out, found)
    if body.values.get("cache_control") is not None and out:  # automatic mode [A-PC]
        found.append(len(out) - 1)
    return out


def _block_items(
    body: ScannedBody, section: str, fam: estimate.Family, out: list[TokenItem], found: list[int]
) -> None:
    """Append each content block of each message of ``section`` (the whole-item rule)."""
    for i, info in enumerate(body.items.get(section, ())):
        role = msg(info).role
        for (data, count), marked in zip(_blocks(info, fam), _block_marks(info), strict=True):
            if marked:
                found.append(len(out))
            out.append(((i, role, data), data, count, section))


def _whole_items(
    body: ScannedBody,
    where: tuple[str, str, bool],
    fam: estimate.Family,
    out: list[TokenItem],
    found: list[int],
) -> None:
    """Append each item of a section counted whole: ``where`` is (section, provider, rule)."""
    section, provider, anthropic = where
    tool = section == SECTIONS[provider][0] and provider != "gemini"
    kind = "system" if section == "system" and provider == "anthropic" else ""
    if section == "messages" and provider in ("openai-chat", "openrouter"):
        kind = "chat"
    for j, info in enumerate(body.items.get(section, ())):
        value = info.parsed() if info.deletions or section in _STRING_ONLY else None
        if section in _STRING_ONLY and not _counted(section, value):
            continue
        if anthropic and section == "tools" and deferred(info):
            continue
        if info.deletions and _marked(value) or _point_after(body, section, j):
            found.append(len(out))
        data, count = _whole(info, fam, (tool, kind))
        out.append(((section, data), data, count, section))
