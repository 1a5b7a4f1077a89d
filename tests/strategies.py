"""Hypothesis strategies for generated conversations over all four content cases (SPEC M1–M3).

A :class:`Conversation` is a system prompt, tools, parameters and a history that grows step by
step the way an agent loop grows it: an opening user message, then per step one assistant reply
followed by the tool results it asked for (one or several ``tool`` messages) and/or a user
message. :meth:`Conversation.requests` gives the consecutive requests (each ends in a user or
tool message, so each is a valid request) that the P4 prefix property compares, and the last of
them is the one the P5 reopen property rebuilds.

Content covered:

* text: non-ASCII, empty strings (never a message's only content, M1), lone surrogates;
* images: 0-byte, random bytes with no known signature, bytes with a matching known signature,
  and many images in one message;
* omitted images (M3);
* tool calls: ids valid everywhere, ids with characters Anthropic rejects, ids over 40 and 64
  characters; arguments that are a JSON object, invalid JSON, a JSON non-object, empty, and
  non-UTF-8 bytes;
* tool results: errors, empty, non-UTF-8 bytes, and 1 MB results built by repetition (drawn
  rarely: hypothesis will not draw a megabyte directly, and a bounded share keeps CI fast);
* parallel tool calls, so one step adds more than 20 blocks.

Sizes stay small for most examples; :data:`HUGE_RESULT_ONE_IN` bounds the heavy ones.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from hypothesis import strategies as st

from llmcore.messages import (
    Image,
    Message,
    MessageContent,
    Text,
    ToolCall,
    ToolResult,
    sniff_image_type,
)
from llmcore.request import Params, Request, Tool, ToolChoiceName

MEGABYTE = 1 << 20
HUGE_RESULT_ONE_IN = 160
"""About one tool result step in this many carries a 1 MB result."""
WIDE_STEP_ONE_IN = 6
"""About one step in this many makes 11–24 parallel tool calls (more than 20 blocks)."""
MANY_IMAGES_ONE_IN = 16
"""About one user message in this many holds 21–40 images."""

PROVIDER_MODELS: dict[str, tuple[str, ...]] = {
    "anthropic": ("claude-sonnet-4-5", "claude-opus-4-1", "claude-unknown-model"),
    "openai-chat": ("gpt-4o", "gpt-5-mini"),
    "openai-responses": ("gpt-5", "o3"),
    "openrouter": ("anthropic/claude-sonnet-4.5", "google/gemini-2.5-pro", "openai/gpt-4o"),
    "gemini": ("gemini-2.5-flash", "gemini-2.5-pro", "gemini-3-pro-preview"),
    "bedrock-converse": (
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        "amazon.nova-pro-v1:0",
        "meta.llama3-70b-instruct-v1:0",
    ),
}
"""Model names drawn per provider (OpenRouter: explicit-breakpoint and automatic upstreams)."""

SPECIAL_TEXTS = (
    "",
    "héllo wörld — ünïcödé",
    "日本語のテキスト",
    "emoji 🎉🧪 and ZWJ 👩‍💻",
    "lone \ud800 surrogate",
    "trailing low \udfff",
    'quotes " and \\ backslash\n\ttab \x00 nul \x1f',
    "\u2028line separator\u2029",
    ' ,"cache_control":{"type":"ephemeral"}',
)


def _is_rare(one_in: int) -> st.SearchStrategy[bool]:
    # A middle value is the rare branch, so shrinking (towards 0) leaves it.
    return st.integers(0, one_in - 1).map(lambda v: v == one_in // 2)


@cache
def texts(max_size: int = 24) -> st.SearchStrategy[str]:
    """Strings: arbitrary Unicode, lone surrogates, empty strings and fixed tricky samples."""
    surrogates = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
    mixed = st.text(st.one_of(st.characters(), surrogates), max_size=max_size)
    return st.one_of(st.text(max_size=max_size), mixed, st.sampled_from(SPECIAL_TEXTS))


@cache
def nonempty_texts(max_size: int = 24) -> st.SearchStrategy[str]:
    """Strings that are not empty (one may still be a lone surrogate, cleaned to U+FFFD)."""
    return texts(max_size).filter(bool)


_SIGNATURES = {
    "image/png": b"\x89PNG\r\n\x1a\n",
    "image/jpeg": b"\xff\xd8\xff",
    "image/gif": b"GIF89a",
    "image/webp": b"RIFF\x00\x00\x00\x00WEBP",
}
MIME_TYPES = tuple(_SIGNATURES)  # the types providers accept (base.SUPPORTED_IMAGE_TYPES)


@st.composite
def images(draw: st.DrawFn, max_bytes: int = 48) -> Image:
    """An image: 0 bytes, random bytes with no known signature, or a matching signature.

    Bytes never carry a known signature that contradicts the declared type, so no
    ``ImageTypeCorrectedWarning`` is raised (the suite turns warnings into errors).
    """
    mime = draw(st.sampled_from(MIME_TYPES))
    body = draw(st.binary(max_size=max_bytes))
    if mime in _SIGNATURES and draw(st.booleans()):
        return Image(data=_SIGNATURES[mime] + body, mime_type=mime)
    if sniff_image_type(body) is not None:
        body = b"x" + body
    return Image(data=body, mime_type=mime)


@cache
def omitted_images() -> st.SearchStrategy[Text]:
    """The text case standing for an image dropped from storage (M3)."""
    return st.sampled_from(MIME_TYPES).map(Text.omitted_image)


@cache
def _json_values() -> st.SearchStrategy[Any]:
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**60), 2**60),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=12),
    )
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
        ),
        max_leaves=5,
    )


def _object_bytes(obj: dict[str, Any], ascii_only: bool, spaced: bool) -> bytes:
    separators = (", ", ": ") if spaced else (",", ":")
    return json.dumps(obj, ensure_ascii=ascii_only, separators=separators).encode("utf-8")


@cache
def tool_arguments() -> st.SearchStrategy[bytes]:
    """Argument bytes: JSON objects (several spellings), invalid JSON, non-objects, empty, binary."""
    objects = st.builds(
        _object_bytes,
        st.dictionaries(st.text(max_size=8), _json_values(), max_size=4),
        st.booleans(),
        st.booleans(),
    )
    return st.one_of(
        objects,
        objects,
        st.sampled_from([b"", b"  ", b"{", b'{"a":', b"[1,2]", b'"str"', b"null", b"{} {}"]),
        st.text(max_size=16).map(lambda s: s.encode("utf-8", "surrogatepass")),
        st.binary(max_size=16),
        st.sampled_from([b'{"a":"\xff\xfe"}', b"\xed\xa0\x80", b'{"k":"\\u00e9\\ud800"}']),
    )


def _huge(chunk: bytes) -> bytes:
    return (chunk * (MEGABYTE // len(chunk) + 1))[:MEGABYTE]


@cache
def result_contents(allow_huge: bool) -> st.SearchStrategy[bytes]:
    """Result bytes: text, empty, non-UTF-8; a 1 MB result built by repetition when allowed."""
    small: st.SearchStrategy[bytes] = st.one_of(
        st.text(max_size=40).map(lambda s: s.encode("utf-8", "surrogatepass")),
        st.just(b""),
        st.binary(max_size=24),
        st.sampled_from([b"\xff\xfe\xfd", b"ok \xc3\x28 broken", "結果".encode()]),
    )
    if not allow_huge:
        return small
    return st.binary(min_size=1, max_size=8).map(_huge)


@cache
def call_id_prefixes() -> st.SearchStrategy[str]:
    """Id stems: provider-shaped, with characters Anthropic rejects, and overlong ones."""
    return st.one_of(
        st.sampled_from(["toolu_01", "call_", "fc-", "", "call.id:", "id with space ", "ïd/"]),
        st.text(max_size=6),
        st.integers(41, 80).map(lambda n: "c" * n),
    )


@dataclass(slots=True)
class _Ids:
    counter: int = 0
    seen: set[str] = field(default_factory=set)

    def next(self, prefix: str) -> str:
        while True:
            self.counter += 1
            candidate = Text(text=f"{prefix}{self.counter}").text
            if candidate not in self.seen:
                self.seen.add(candidate)
                return candidate


TOOL_NAMES = ("read_file", "run_shell", "search", "get_weather", "screenshot")

# Strategies are built once: hypothesis validates each new strategy object, which costs more
# than drawing from it.
_TOOL_NAME_LISTS = st.lists(st.sampled_from(TOOL_NAMES), max_size=3, unique=True)
_SCHEMA_PROPS = st.dictionaries(
    st.text("abcxyz_", min_size=1, max_size=5), st.just({"type": "string"}), max_size=3
)
_FEW_IMAGES = st.lists(images(max_bytes=8), min_size=1, max_size=4)
_USER_PARTS = st.lists(
    st.one_of(texts().map(lambda s: Text(text=s)), images(), omitted_images()),
    min_size=1,
    max_size=4,
)
_LEAD_TEXTS = st.lists(texts(), max_size=2)
_REPLY_TEXTS = st.lists(texts(), min_size=1, max_size=3)
_SYSTEM_TEXTS = st.lists(texts(40), max_size=3)
_HUGE_CONTENT = result_contents(allow_huge=True)
_STOPS = st.none() | st.lists(st.text(min_size=1, max_size=5), min_size=1, max_size=2).map(tuple)
_MAX_TOKENS = st.none() | st.integers(1, 64000)
_TEMPERATURES = st.none() | st.floats(0, 2)
_TOP_PS = st.none() | st.floats(0, 1)
_CHOICES = st.sampled_from([None, "auto", "none", "any", "name"])
_TTLS = st.sampled_from(["5m", "1h"])
_MODES = st.sampled_from(["breakpoints", "breakpoints", "automatic", "off"])
_INDEXES = st.integers(0, 2)
_STEP_COUNT = st.integers(1, 3)
_WIDE_COUNT = st.integers(11, 24)
_MANY_COUNT = st.integers(21, 40)
_RARE = {n: _is_rare(n) for n in (4, WIDE_STEP_ONE_IN, MANY_IMAGES_ONE_IN, HUGE_RESULT_ONE_IN)}


def _tools(draw: st.DrawFn) -> tuple[Tool, ...]:
    tools = []
    for name in draw(_TOOL_NAME_LISTS):
        props = draw(_SCHEMA_PROPS)
        schema: dict[str, Any] = {"type": "object", "properties": props}
        if props and draw(st.booleans()):
            schema["required"] = sorted(props)[:1]
        tools.append(Tool.from_schema(name, draw(texts(30)), schema))
    return tuple(tools)


@st.composite
def tool_definitions(draw: st.DrawFn) -> tuple[Tool, ...]:
    """Zero to three tools with distinct names, descriptions (maybe empty, non-ASCII), schemas."""
    return _tools(draw)


def _user_message(draw: st.DrawFn) -> Message:
    if draw(_RARE[MANY_IMAGES_ONE_IN]):
        count = draw(_MANY_COUNT)
        distinct = draw(_FEW_IMAGES)
        parts: list[MessageContent] = [distinct[i % len(distinct)] for i in range(count)]
        parts.append(Text(text=draw(nonempty_texts())))
        return Message(role="user", content=tuple(parts))
    parts = draw(_USER_PARTS)
    if all(isinstance(p, Text) and not p.text for p in parts):
        parts.append(Text(text=draw(nonempty_texts())))
    return Message(role="user", content=tuple(parts))


@st.composite
def user_messages(draw: st.DrawFn) -> Message:
    """A user message of text, images and omitted images (sometimes 21–40 images)."""
    return _user_message(draw)


def _drawn_calls(
    draw: st.DrawFn, names: list[str], huge: bool
) -> list[tuple[str, str, bytes, bytes, bool]]:
    drawn = [
        (
            draw(call_id_prefixes()),
            names[draw(_INDEXES) % len(names)],
            draw(tool_arguments()),
            draw(result_contents(allow_huge=False)),
            draw(st.booleans()),
        )
        for _ in range(draw(_STEP_COUNT))
    ]
    if huge or draw(_RARE[HUGE_RESULT_ONE_IN]):
        prefix, name, arguments, _, is_error = drawn[-1]
        drawn[-1] = (prefix, name, arguments, draw(_HUGE_CONTENT), is_error)
    return drawn


def _tool_step(
    draw: st.DrawFn, ids: _Ids, tools: tuple[Tool, ...], huge: bool = False
) -> tuple[Message, ...]:
    names = [t.name for t in tools] or list(TOOL_NAMES)
    lead = [Text(text=t) for t in draw(_LEAD_TEXTS)]
    drawn = _drawn_calls(draw, names, huge)
    # A wide step repeats its drawn calls with fresh ids: > 20 blocks for few draws.
    count = draw(_WIDE_COUNT) if draw(_RARE[WIDE_STEP_ONE_IN]) else len(drawn)
    calls: list[ToolCall] = []
    results: list[ToolResult] = []
    for index in range(count):
        prefix, name, arguments, content, is_error = drawn[index % len(drawn)]
        call = ToolCall(id=ids.next(prefix), name=name, arguments=arguments)
        calls.append(call)
        results.append(
            ToolResult(call_id=call.id, tool_name=name, content=content, is_error=is_error)
        )
    if draw(st.booleans()):
        results.reverse()
    split = draw(st.integers(1, len(results)))
    tool_messages = [Message(role="tool", content=tuple(results[:split]))]
    if split < len(results):
        tool_messages.append(Message(role="tool", content=tuple(results[split:])))
    assistant = Message(role="assistant", content=(*lead, *calls))
    follow = [_user_message(draw)] if draw(_RARE[4]) else []
    return (assistant, *tool_messages, *follow)


def _text_step(draw: st.DrawFn) -> tuple[Message, ...]:
    parts = [Text(text=t) for t in draw(_REPLY_TEXTS)]
    if all(not p.text for p in parts):
        parts.append(Text(text=draw(nonempty_texts())))
    return (Message(role="assistant", content=tuple(parts)), _user_message(draw))


@dataclass(frozen=True, slots=True, kw_only=True)
class Conversation:
    """A generated conversation: request-level fields and the history, step by step."""

    model: str
    system: tuple[str, ...]
    tools: tuple[Tool, ...]
    params: Params
    steps: tuple[tuple[Message, ...], ...]
    """``steps[0]`` is the opening user message; each later step is what one turn appended."""

    def history(self, upto: int | None = None) -> tuple[Message, ...]:
        """The messages of ``steps[: upto + 1]`` (all steps when ``upto`` is ``None``)."""
        chosen = self.steps if upto is None else self.steps[: upto + 1]
        return tuple(m for step in chosen for m in step)

    def request(self, messages: tuple[Message, ...]) -> Request:
        """A request with this conversation's model, system, tools and params."""
        return Request(
            model=self.model,
            system=self.system,
            tools=self.tools,
            messages=messages,
            params=self.params,
        )

    def requests(self) -> list[Request]:
        """The consecutive requests, one per step, each ending in a user or tool message."""
        return [self.request(self.history(i)) for i in range(len(self.steps))]


def _params(draw: st.DrawFn, provider: str, tools: tuple[Tool, ...]) -> Params:
    stops = None if provider == "openai-responses" else draw(_STOPS)
    choice = draw(_CHOICES)
    if choice == "none" and provider == "bedrock-converse":  # Converse has no "none" form
        choice = None
    if choice == "name":
        choice = ToolChoiceName(name=tools[draw(_INDEXES) % len(tools)].name) if tools else None
    return Params(
        max_tokens=draw(_MAX_TOKENS),
        temperature=draw(_TEMPERATURES),
        top_p=draw(_TOP_PS),
        stop_sequences=stops,
        tool_choice=choice,
        cache_ttl=draw(_TTLS),
        cache_mode=draw(_MODES),
        stream=draw(st.booleans()),
    )


@st.composite
def params(draw: st.DrawFn, provider: str, tools: tuple[Tool, ...]) -> Params:
    """Parameters a provider accepts (Responses has no stop sequences)."""
    return _params(draw, provider, tools)


@st.composite
def conversations(
    draw: st.DrawFn, provider: str, max_steps: int = 4, huge: bool = False
) -> Conversation:
    """A conversation for ``provider``: one opening user message and 1–``max_steps`` steps.

    Each step is, with equal chance, a tool step (an assistant message of 1–3 parallel calls,
    sometimes repeated to 11–24, then the tool messages answering them, sometimes a user message
    after) or a text step (an assistant text reply, then a user message). With ``huge`` the
    first step is a tool step whose last drawn result is 1 MB (the rare case, made certain).
    """
    tools = _tools(draw)
    ids = _Ids()
    steps: list[tuple[Message, ...]] = [(_user_message(draw),)]
    for number in range(draw(st.integers(1, max_steps))):
        if huge and number == 0:
            steps.append(_tool_step(draw, ids, tools, huge=True))
        elif draw(st.booleans()):
            steps.append(_tool_step(draw, ids, tools))
        else:
            steps.append(_text_step(draw))
    return Conversation(
        model=draw(st.sampled_from(PROVIDER_MODELS[provider])),
        system=tuple(draw(_SYSTEM_TEXTS)),
        tools=tools,
        params=_params(draw, provider, tools),
        steps=tuple(steps),
    )
