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
from functools import cache
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from llmcore.messages import Image, Message, MessageContent, Text, ToolCall, ToolResult, sniff_image_type
from llmcore.request import Params, Request, Tool, ToolChoiceName

MEGABYTE = 1 << 20
HUGE_RESULT_ONE_IN = 64
"""About one tool result step in this many carries a 1 MB result."""
WIDE_STEP_ONE_IN = 4
"""About one step in this many makes 11–24 parallel tool calls (more than 20 blocks)."""
MANY_IMAGES_ONE_IN = 16
"""About one user message in this many holds 21–40 images."""

PROVIDER_MODELS: dict[str, tuple[str, ...]] = {
    "anthropic": ("claude-sonnet-4-5", "claude-opus-4-1", "claude-unknown-model"),
    "openai-chat": ("gpt-4o", "gpt-5-mini"),
    "openai-responses": ("gpt-5", "o3"),
    "openrouter": ("anthropic/claude-sonnet-4.5", "google/gemini-2.5-pro", "openai/gpt-4o"),
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
MIME_TYPES = (*_SIGNATURES, "image/heic", "application/octet-stream")


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
    small = st.one_of(
        st.text(max_size=40).map(lambda s: s.encode("utf-8", "surrogatepass")),
        st.just(b""),
        st.binary(max_size=24),
        st.sampled_from([b"\xff\xfe\xfd", b"ok \xc3\x28 broken", "結果".encode()]),
    )
    if not allow_huge:
        return small
    huge = st.binary(min_size=1, max_size=8).map(_huge)
    return st.one_of(small, huge)


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


@st.composite
def tool_definitions(draw: st.DrawFn) -> tuple[Tool, ...]:
    """Zero to three tools with distinct names, descriptions (maybe empty, non-ASCII), schemas."""
    names = draw(st.lists(st.sampled_from(TOOL_NAMES), max_size=3, unique=True))
    tools = []
    for name in names:
        props = draw(_SCHEMA_PROPS)
        schema: dict[str, Any] = {"type": "object", "properties": props}
        if props and draw(st.booleans()):
            schema["required"] = sorted(props)[:1]
        tools.append(Tool.from_schema(name, draw(texts(30)), schema))
    return tuple(tools)



_SMALL_IMAGES = images(max_bytes=8)
_USER_PARTS = st.lists(
    st.one_of(texts().map(lambda s: Text(text=s)), images(), omitted_images()),
    min_size=1,
    max_size=4,
)
_LEAD_TEXTS = st.lists(texts(), max_size=2)
_REPLY_TEXTS = st.lists(texts(), min_size=1, max_size=3)
_SYSTEM_TEXTS = st.lists(texts(40), max_size=3)
_SCHEMA_PROPS = st.dictionaries(
    st.text("abcxyz_", min_size=1, max_size=5), st.just({"type": "string"}), max_size=3
)
_STOPS = st.none() | st.lists(st.text(min_size=1, max_size=5), min_size=1, max_size=2).map(tuple)

@st.composite
def user_messages(draw: st.DrawFn) -> Message:
    """A user message of text, images and omitted images (sometimes 21–40 images)."""
    if draw(_is_rare(MANY_IMAGES_ONE_IN)):
        count = draw(st.integers(21, 40))
        parts: list[MessageContent] = [draw(_SMALL_IMAGES) for _ in range(count)]
        parts.append(Text(text=draw(nonempty_texts())))
        return Message(role="user", content=tuple(parts))
    parts = draw(_USER_PARTS)
    if all(isinstance(p, Text) and not p.text for p in parts):
        parts.append(Text(text=draw(nonempty_texts())))
    return Message(role="user", content=tuple(parts))


@st.composite
def tool_steps(draw: st.DrawFn, ids: _Ids, tools: tuple[Tool, ...]) -> tuple[Message, ...]:
    """An assistant message with parallel tool calls, then the tool messages answering them."""
    if draw(_is_rare(WIDE_STEP_ONE_IN)):
        count = draw(st.integers(11, 24))
    else:
        count = draw(st.integers(1, 3))
    names = [t.name for t in tools] or list(TOOL_NAMES)
    lead = [Text(text=t) for t in draw(_LEAD_TEXTS)]
    calls = [
        ToolCall(
            id=ids.next(draw(call_id_prefixes())),
            name=draw(st.sampled_from(names)),
            arguments=draw(tool_arguments()),
        )
        for _ in range(count)
    ]
    huge_at = draw(st.integers(0, count - 1)) if draw(_is_rare(HUGE_RESULT_ONE_IN)) else -1
    results = [
        ToolResult(
            call_id=call.id,
            tool_name=call.name,
            content=draw(result_contents(allow_huge=index == huge_at)),
            is_error=draw(st.booleans()),
        )
        for index, call in enumerate(calls)
    ]
    if draw(st.booleans()):
        results.reverse()
    split = draw(st.integers(1, len(results)))
    tool_messages = [Message(role="tool", content=tuple(results[:split]))]
    if split < len(results):
        tool_messages.append(Message(role="tool", content=tuple(results[split:])))
    assistant = Message(role="assistant", content=(*lead, *calls))
    follow: list[Message] = []
    if draw(_is_rare(4)):
        follow.append(draw(user_messages()))
    return (assistant, *tool_messages, *follow)


@st.composite
def text_steps(draw: st.DrawFn) -> tuple[Message, ...]:
    """An assistant text reply (maybe with empty blocks among others), then a user message."""
    parts = [Text(text=t) for t in draw(_REPLY_TEXTS)]
    if all(not p.text for p in parts):
        parts.append(Text(text=draw(nonempty_texts())))
    return (Message(role="assistant", content=tuple(parts)), draw(user_messages()))


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


def _tool_choices(tools: tuple[Tool, ...]) -> st.SearchStrategy[Any]:
    options: list[st.SearchStrategy[Any]] = [st.sampled_from([None, "auto", "none", "any"])]
    if tools:
        options.append(st.sampled_from([t.name for t in tools]).map(lambda n: ToolChoiceName(name=n)))
    return st.one_of(options)


@st.composite
def params(draw: st.DrawFn, provider: str, tools: tuple[Tool, ...]) -> Params:
    """Parameters a provider accepts (Responses has no stop sequences)."""
    stops = None
    if provider != "openai-responses":
        stops = draw(_STOPS)
    return Params(
        max_tokens=draw(st.none() | st.integers(1, 64000)),
        temperature=draw(st.none() | st.floats(0, 2)),
        top_p=draw(st.none() | st.floats(0, 1)),
        stop_sequences=stops,
        tool_choice=draw(_tool_choices(tools)),
        cache_ttl=draw(st.sampled_from(["5m", "1h"])),
        cache_mode=draw(st.sampled_from(["breakpoints", "breakpoints", "automatic", "off"])),
        stream=draw(st.booleans()),
    )


@st.composite
def conversations(draw: st.DrawFn, provider: str, max_steps: int = 4) -> Conversation:
    """A conversation for ``provider``: one opening user message and 1–``max_steps`` steps."""
    tools = draw(tool_definitions())
    ids = _Ids()
    steps: list[tuple[Message, ...]] = [(draw(user_messages()),)]
    for _ in range(draw(st.integers(1, max_steps))):
        if draw(st.booleans()):
            steps.append(draw(tool_steps(ids, tools)))
        else:
            steps.append(draw(text_steps()))
    return Conversation(
        model=draw(st.sampled_from(PROVIDER_MODELS[provider])),
        system=tuple(draw(_SYSTEM_TEXTS)),
        tools=tools,
        params=draw(params(provider, tools)),
        steps=tuple(steps),
    )
