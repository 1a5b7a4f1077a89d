"""The auditor's cache-key model: what each provider keys its prompt cache on (SPEC V1, V5).

One table per wire shape (:data:`MODELS`): the cache levels in cache order (the prefix sections
of :data:`llmcore.audit._shape.SECTIONS`), the request fields outside those sections that the
provider keys a level on (:class:`Keyed`: a change discards that level and every later one), the
byte differences the provider cannot see (:class:`Equivalence`: two texts of one request), and
the differences it does see, which stay byte-level breaks (:class:`Visible`). Every rule names
its :class:`Source`: the provider's documentation (address, the sentence quoted, the date read)
or recorded traffic whose usage shows it.

The verdicts follow the model (:mod:`llmcore.audit._compare`, :mod:`llmcore.audit._auditor`):
a keyed field that changed is a break of kind ``parameter`` naming the field
(:func:`parameter_change`); an item whose bytes differ only by an equivalence is unchanged, with
a note naming it (:func:`equivalence`).

Leaves out: the byte comparison itself (:mod:`llmcore.audit._compare`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from llmcore.audit import _shape
from llmcore.audit._scan import ItemInfo, ScannedBody

__all__ = [
    "ESCAPES",
    "IMAGES",
    "MODELS",
    "TEXT_BLOCK",
    "WHITESPACE",
    "Equivalence",
    "KeyModel",
    "Keyed",
    "ParameterChange",
    "Source",
    "Visible",
    "equivalence",
    "parameter_change",
]

READ: Final = "2026-12-02"
"""When the documents below were read."""


@dataclass(frozen=True, slots=True)
class Source:
    """Where a rule comes from."""

    where: str
    """A document's address, or recorded traffic (a vendored cassette's path)."""
    quote: str
    """The sentence quoted from the document, or what the recorded usage shows."""
    read: str = READ
    """When it was read (ISO date)."""


@dataclass(frozen=True, slots=True)
class Keyed:
    """A request field outside the prefix sections that a cache level is keyed on."""

    field: str
    """Dotted path of the field (``thinking``, ``text.format``), or :data:`IMAGES`."""
    level: str
    """The first cache level a change discards: a prefix section, or ``""`` for all of them."""
    source: Source
    ordered: bool = False
    """Whether its key order counts: a structured-output schema is text in the prompt; the
    other fields are settings, compared as values."""
    models: str = ""
    """When set, the rule holds only for model ids containing it (``claude`` on Bedrock)."""


@dataclass(frozen=True, slots=True)
class Equivalence:
    """A byte difference the provider cannot see: both texts are one request to it."""

    name: str
    """How notes name it (:data:`ESCAPES`, :data:`WHITESPACE`, :data:`TEXT_BLOCK`)."""
    source: Source


@dataclass(frozen=True, slots=True)
class Visible:
    """A difference the provider does see, though a JSON reader might call it equal."""

    what: str
    source: Source


@dataclass(frozen=True, slots=True)
class KeyModel:
    """One wire shape's cache-key table."""

    shape: str
    """The provider name (:data:`llmcore.audit._shape.PROVIDERS`)."""
    levels: tuple[str, ...]
    """The prefix sections in cache order; a change at one discards it and every later one."""
    order: Source
    """Where the order comes from."""
    keyed: tuple[Keyed, ...]
    """Fields outside the sections that key a level, in cache order of their levels."""
    invisible: tuple[Equivalence, ...]
    """Byte differences that are no change to the provider."""
    visible: tuple[Visible, ...] = ()
    """Differences that stay breaks at the byte level (documented, checked by the tests)."""


IMAGES: Final = "first image"
"""The pseudo-field of Anthropic's image rule: whether any image block is in the messages."""
ESCAPES: Final = "JSON escape forms"
WHITESPACE: Final = "whitespace between JSON tokens"
TEXT_BLOCK: Final = "a string content and one text block"

_A_PC: Final = "https://platform.claude.com/docs/en/build-with-claude/prompt-caching"
_A_MSG: Final = "https://docs.anthropic.com/en/api/messages"
_CLAUDE_CODE: Final = "https://code.claude.com/docs/en/prompt-caching"
_O_PC: Final = "https://platform.openai.com/docs/guides/prompt-caching"
_GEMINI: Final = "https://ai.google.dev/gemini-api/docs/caching"
_BEDROCK: Final = "https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html"
_RFC: Final = "https://www.rfc-editor.org/rfc/rfc8259"

_A_TABLE: Final = (
    "What invalidates the cache (table): changing tool_choice, adding/removing images anywhere "
    "in the prompt, and the thinking parameters (enable/disable, budget) keep the tools and "
    "system caches and invalidate the messages cache; 'Changes at each level invalidate that "
    "level and all subsequent levels.'"
)
_MODEL_SOURCE: Final = Source(
    _CLAUDE_CODE,
    "the page's summary: 'See why a model switch triggers a slow uncached turn' (its table of "
    "actions that invalidate the cache: a model switch, the entire request)",
)
_OPENAI_MODEL: Final = Source(
    "https://learn.microsoft.com/en-us/azure/ai-foundry/openai/how-to/prompt-caching",
    "'the service is able to retain a temporary cache of processed input token computations' "
    "(a model's computation of the prompt, which no other model reads)",
)
_ESCAPES: Final = Equivalence(
    ESCAPES,
    Source(
        _RFC,
        "§7: 'Any character may be escaped.' The provider reads the parsed request, so "
        "'\\u00b0' and '°' (or '\\/' and '/') are one string to it",
    ),
)
_WHITESPACE: Final = Equivalence(
    WHITESPACE,
    Source(
        _RFC,
        "§2: 'Insignificant whitespace is allowed before or after any of the six structural "
        "characters.'",
    ),
)
_A_TEXT_BLOCK: Final = Equivalence(
    TEXT_BLOCK,
    Source(
        _A_MSG,
        "'Using a string for content is shorthand for an array of one content block of type "
        '"text".\'',
    ),
)
_OR_TEXT_BLOCK: Final = Equivalence(
    TEXT_BLOCK,
    Source(
        "tests/real_traffic/pydantic-ai/tests/models/cassettes/test_openrouter/ (cache cassettes)",
        "recorded usage reads the whole earlier prompt from the cache after a moved breakpoint "
        "turned a one-text-part list back into the string it stands for",
    ),
)
_JSON_FORMS: Final = (_ESCAPES, _WHITESPACE)
_ARGUMENTS: Final = Visible(
    "whitespace or key order inside a tool call's arguments string (it is text, not JSON, to "
    "the model)",
    Source(_O_PC, "'Cache hits are only possible for exact prefix matches within a prompt.'"),
)
_KEY_ORDER: Final = Visible(
    "key order of tool_use.input and of tool schemas",
    Source(
        _A_PC,
        "Troubleshooting: keep the key order of tool_use input stable (a reordered input misses "
        "the cache); '100% identical prompt segments, including all text and images up to and "
        "including the block marked with cache control'",
    ),
)
_A_ORDER: Final = Source(
    _A_PC,
    "prefix order tools, system, messages: 'Changes at each level invalidate that level and all "
    "subsequent levels'",
)
_O_FORMAT: Final = Source(
    _O_PC,
    "What can be cached: 'Structured outputs: The structured output schema serves as a prefix "
    "to the system message and can be cached.'",
)
_O_ORDER: Final = Source(
    _O_PC,
    "'Cache hits are only possible for exact prefix matches within a prompt.' 'This also "
    "applies to images and tools, which must be identical between requests.'",
)


def _anthropic_keyed(choice: str, thinking: str, models: str = "") -> tuple[Keyed, ...]:
    table = Source(_A_PC, _A_TABLE)
    return (
        Keyed("model", "", _MODEL_SOURCE),
        Keyed(choice, "messages", table, models=models),
        Keyed(thinking, "messages", table, models=models),
        Keyed(IMAGES, "messages", table, models=models),
    )


def _openai(shape: str, schema: str, level: str) -> KeyModel:
    """Chat Completions or Responses: the model, tools, the output schema, then the messages."""
    return KeyModel(
        shape=shape,
        levels=_shape.SECTIONS[shape],
        order=_O_ORDER,
        keyed=(Keyed("model", "", _OPENAI_MODEL), Keyed(schema, level, _O_FORMAT, ordered=True)),
        invisible=_JSON_FORMS,
        visible=(_ARGUMENTS,),
    )


MODELS: Final[Mapping[str, KeyModel]] = {
    "anthropic": KeyModel(
        shape="anthropic",
        levels=_shape.SECTIONS["anthropic"],
        order=_A_ORDER,
        keyed=_anthropic_keyed("tool_choice", "thinking"),
        invisible=(*_JSON_FORMS, _A_TEXT_BLOCK),
        visible=(_KEY_ORDER,),
    ),
    "openai-chat": _openai("openai-chat", "response_format", "messages"),
    "openai-responses": _openai("openai-responses", "text.format", "instructions"),
    "openrouter": KeyModel(
        shape="openrouter",
        levels=_shape.SECTIONS["openrouter"],
        order=Source(
            "https://openrouter.ai/docs/guides/best-practices/prompt-caching",
            "the upstream provider's caching applies (Anthropic's breakpoints passed through, "
            "OpenAI's automatic prefix): its order, tools then messages",
        ),
        keyed=(
            Keyed("model", "", _MODEL_SOURCE),
            Keyed("response_format", "messages", _O_FORMAT, ordered=True),
        ),
        invisible=(*_JSON_FORMS, _OR_TEXT_BLOCK),
        visible=(_ARGUMENTS,),
    ),
    "gemini": KeyModel(
        shape="gemini",
        levels=_shape.SECTIONS["gemini"],
        order=Source(
            _GEMINI,
            "Implicit caching: 'Try putting large and common contents at the beginning of your "
            "prompt' (a prefix match); explicit caches hold system instruction, contents, tools "
            "and tool config",
        ),
        keyed=(
            Keyed(
                "model",
                "",
                Source(
                    _GEMINI,
                    "'The minimum input token count for context caching is listed in the "
                    "following table for each model' (a cache is a model's)",
                ),
            ),
        ),
        invisible=_JSON_FORMS,
    ),
    "bedrock-converse": KeyModel(
        shape="bedrock-converse",
        levels=_shape.SECTIONS["bedrock-converse"],
        order=Source(
            _BEDROCK,
            "cache checkpoints in tools, system and messages, matched as a prefix in that order; "
            "Claude models keep Anthropic's rules (toolChoice, thinking, images key the messages "
            "level); for other models (Nova) no such rule is documented",
        ),
        keyed=_anthropic_keyed(
            "toolConfig.toolChoice", "additionalModelRequestFields.thinking", models="claude"
        ),
        invisible=_JSON_FORMS,
        visible=(_KEY_ORDER,),
    ),
}
"""The cache-key model of every wire shape the auditor reads."""


# --- parameters ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ParameterChange:
    """A keyed field that differs between two requests of one conversation."""

    parameter: str
    """The field as the report names it (``thinking.budget_tokens``, ``first image``)."""
    path: str
    """JSON path of the changed value in the later request (or where it was, if removed)."""
    level: str
    """The first cache level it discards (``""``: every level, the model)."""
    before: str
    """The earlier value, compact JSON (``absent`` when the field was not sent)."""
    after: str
    """The later value, likewise."""
    item: int | None = None
    """For :data:`IMAGES`, the history item holding the later request's first image, if any."""


_ABSENT: Final = object()


def _at(values: Mapping[str, Any], field: str) -> Any:
    """The value at a dotted path of the top-level values (:data:`_ABSENT` if missing)."""
    head, _, rest = field.partition(".")
    value: Any = values.get(head, _ABSENT)
    for step in rest.split(".") if rest else ():
        value = value.get(step, _ABSENT) if isinstance(value, dict) else _ABSENT
    return value


def _shown(value: Any) -> str:
    if value is _ABSENT:
        return "absent"
    text = _shape.compact(value).decode("utf-8", "replace")
    return text if len(text) <= 60 else text[:57] + "..."


def _same(was: Any, now: Any, ordered: bool) -> bool:
    if was is _ABSENT or now is _ABSENT:
        return was is now
    return _shape.compact(was) == _shape.compact(now) if ordered else bool(was == now)


def _deepest(field: str, before: Any, after: Any) -> str:
    """The dotted path of the first differing member under ``field`` (objects only)."""
    while isinstance(before, dict) and isinstance(after, dict):
        keys = list(dict.fromkeys([*before, *after]))
        diff = [k for k in keys if before.get(k, _ABSENT) != after.get(k, _ABSENT)]
        if len(diff) != 1 or not str(diff[0]).isidentifier():
            break
        field = f"{field}.{diff[0]}"
        before, after = before.get(diff[0], _ABSENT), after.get(diff[0], _ABSENT)
    return field


def _first_image(body: ScannedBody, provider: str) -> tuple[int, str] | None:
    """The history item holding the first image block and that block's path, or ``None``."""
    key = _shape.history_key(provider)
    for i, info in enumerate(body.items.get(key, ())):
        if not _shape.msg(info).has_image:
            continue
        name = f"{key}[{body.wire_index(key, i)}]"
        content = info.parsed().get("content")
        for j, block in enumerate(content if isinstance(content, list) else ()):
            if isinstance(block, dict) and (block.get("type") == "image" or "image" in block):
                return i, f"{name}.content[{j}]"
        return i, name
    return None


def _image_change(before: ScannedBody, after: ScannedBody, provider: str) -> ParameterChange | None:
    was, now = _first_image(before, provider), _first_image(after, provider)
    if (was is None) == (now is None):
        return None
    return ParameterChange(
        parameter=IMAGES,
        path=now[1] if now is not None else _shape.history_key(provider),
        level="messages",
        before="no image" if was is None else "images",
        after="no image" if now is None else "an image",
        item=now[0] if now is not None else None,
    )


def parameter_change(
    provider: str, model: tuple[str, str], before: ScannedBody, after: ScannedBody
) -> ParameterChange | None:
    """Return the first keyed field (in cache order) that differs, or ``None``.

    Args:
        provider: The later request's provider.
        model: The two requests' models (from the body or its URI).
        before: The earlier request of the conversation.
        after: The later one.
    """
    table = MODELS[provider]
    for rule in table.keyed:
        if rule.models and rule.models not in model[1]:
            continue
        if rule.field == "model":
            if model[0] != model[1]:
                return ParameterChange(
                    parameter="model",
                    path="model",
                    level="",
                    before=repr(model[0]),
                    after=repr(model[1]),
                )
            continue
        if rule.field == IMAGES:
            found = _image_change(before, after, provider)
            if found is not None:
                return found
            continue
        was, now = _at(before.values, rule.field), _at(after.values, rule.field)
        if _same(was, now, rule.ordered):
            continue
        name = _deepest(rule.field, was, now)
        return ParameterChange(
            parameter=name, path=name, level=rule.level, before=_shown(was), after=_shown(now)
        )
    return None


# --- equivalences ----------------------------------------------------------------------------

_TOKENS: Final = re.compile(r'"(?:[^"\\]|\\.)*"|[^\s"]+')
"""JSON tokens: strings whole, anything else up to whitespace."""


def _squeezed(text: str) -> str:
    """``text`` with the whitespace between JSON tokens removed (strings kept as written)."""
    return "".join(_TOKENS.findall(text))


def _json_forms(a: ItemInfo, b: ItemInfo) -> str | None:
    """Name the JSON-text difference between two items of one value, or ``None``."""
    if _squeezed(a.norm) == _squeezed(b.norm):
        return WHITESPACE
    return ESCAPES if _shape.canonical(a) == _shape.canonical(b) else None


def equivalence(provider: str, a: ItemInfo, b: ItemInfo, *, history: bool) -> str | None:
    """Name the equivalence under which items ``a`` and ``b`` are one item, or ``None``.

    ``a.norm != b.norm`` is assumed (breakpoints already deleted). JSON forms (escapes,
    whitespace between tokens) in every shape; in a history item of Anthropic or OpenRouter, a
    string ``content`` and one text block holding it (:func:`llmcore.audit._shape.text_shorthand`).
    Key order and the text of strings (an ``arguments`` string included) are compared as written.
    """
    try:
        if _shape.canonical(a) == _shape.canonical(b):
            return _json_forms(a, b)
        if not history or not any(e.name == TEXT_BLOCK for e in MODELS[provider].invisible):
            return None
        left, right = _shape.text_shorthand(a.parsed()), _shape.text_shorthand(b.parsed())
        if _shape.compact(_shape.strip(left)) == _shape.compact(_shape.strip(right)):
            return TEXT_BLOCK
    except RecursionError:
        return None
    return None
