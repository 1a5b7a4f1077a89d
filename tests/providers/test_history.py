"""The append-only encoded history: what is encoded, and checks that skip known messages."""

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore import jsonbytes
from llmcore.errors import InvalidRequestError
from llmcore.messages import Image, Message, Text, ToolCall, ToolResult
from llmcore.providers import get_provider
from llmcore.providers.history import EncodeCache, check_request, wire_array
from llmcore.request import Request

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8
OPTIONS = st.dictionaries(
    st.integers(0, 12), st.sampled_from(["5m", "1h", ("carried",)]), max_size=3
)


def text_message(n: int) -> Message:
    return Message.user(f"m{n}") if n % 2 == 0 else Message.assistant(f"m{n}")


def shared_prefix(a: tuple[Message, ...], b: tuple[Message, ...]) -> int:
    size = 0
    while size < min(len(a), len(b)) and a[size] == b[size]:
        size += 1
    return size


@settings(max_examples=300)
@given(st.data())
def test_only_new_messages_and_messages_whose_option_changed_are_encoded(data):
    cache = EncodeCache()
    messages: tuple[Message, ...] = ()
    options: dict[int, object] = {}
    fresh = 0
    for _ in range(data.draw(st.integers(1, 6), label="builds")):
        previous, previous_options = messages, options
        action = data.draw(st.sampled_from(["append", "edit", "truncate", "reopen"]))
        if action == "append" or not messages:
            count = data.draw(st.integers(1, 4))
            messages = messages + tuple(text_message(fresh + k) for k in range(count))
            fresh += count
        elif action == "edit":
            index = data.draw(st.integers(0, len(messages) - 1))
            fresh += 1
            messages = messages[:index] + (text_message(fresh),) + messages[index + 1 :]
        elif action == "truncate":
            messages = messages[: data.draw(st.integers(0, len(messages) - 1))]
        else:  # equal values, new objects (a reopened archive)
            messages = tuple(Message(role=m.role, content=m.content) for m in messages)
        options = {
            i: o for i, o in data.draw(OPTIONS, label="options").items() if i < len(messages)
        }
        encoded: list[int] = []

        def encode(index, message, option, encoded=encoded):
            encoded.append(index)
            return jsonbytes.dumps_items([[message.content[0].text, repr(option)]])

        pieces = cache.encode_all(messages, options, encode)
        cold = [encode(i, m, options.get(i)) for i, m in enumerate(messages)]
        assert pieces == cold
        del encoded[len(encoded) - len(cold) :]
        known = shared_prefix(previous, messages)
        moved = {i for i in range(known) if previous_options.get(i) != options.get(i)}
        assert sorted(encoded) == sorted(moved | set(range(known, len(messages))))


ids = st.sampled_from(["a", "b", "c"])


@st.composite
def valid_history(draw):
    """A valid history: user (maybe an image), assistant calls, their results, text."""
    out: list[Message] = []
    for turn in range(draw(st.integers(0, 4))):
        parts = [Text(text=f"u{turn}")]
        if draw(st.booleans()):
            parts.append(Image(data=PNG, mime_type="image/png"))
        out.append(Message(role="user", content=tuple(parts)))
        calls = draw(st.lists(ids, unique=True, max_size=2))
        if calls:
            out.append(
                Message.assistant(*(ToolCall(id=c, name="t", arguments=b"{}") for c in calls))
            )
            split = draw(st.integers(1, len(calls)))
            for group in (calls[:split], calls[split:]):
                if group:
                    out.append(
                        Message.tool(
                            *(ToolResult(call_id=c, tool_name="t", content=b"r") for c in group)
                        )
                    )
        out.append(Message.assistant(f"a{turn}"))
    return tuple(out)


any_message = st.one_of(
    st.builds(lambda: Message.user("u")),
    st.builds(lambda: Message.user("u", Image(data=b"?", mime_type="image/tiff"))),
    st.builds(lambda: Message.assistant("a")),
    st.lists(ids, min_size=1, max_size=2, unique=True).map(
        lambda cs: Message.assistant(*(ToolCall(id=c, name="t", arguments=b"{}") for c in cs))
    ),
    st.lists(ids, min_size=1, max_size=2).map(
        lambda cs: Message.tool(*(ToolResult(call_id=c, tool_name="t", content=b"r") for c in cs))
    ),
)


def outcome(request: Request, cache: EncodeCache | None) -> tuple[str, str | None] | None:
    try:
        check_request(request, cache)
    except InvalidRequestError as exc:
        return str(exc), exc.location
    return None


@settings(max_examples=500)
@given(valid_history(), st.data())
def test_checks_that_skip_known_messages_find_what_a_full_check_finds(history, data):
    cache = EncodeCache()
    assert outcome(Request(model="m", messages=history), cache) is None
    cache.encode_all(history, {}, lambda i, m, o: b"")
    cut = data.draw(st.integers(0, len(history)), label="keep")
    tail = data.draw(st.lists(any_message, max_size=4), label="tail")
    request = Request(model="m", messages=history[:cut] + tuple(tail))
    assert outcome(request, cache) == outcome(request, None)


@pytest.mark.parametrize("provider", ["anthropic", "openai-chat", "openai-responses", "openrouter"])
def test_a_moved_breakpoint_re_encodes_only_the_marked_messages(provider):
    p = get_provider(provider)
    model = "anthropic/claude-sonnet-4.5" if provider == "openrouter" else "claude-sonnet-4-5"
    cache = EncodeCache()
    history = [Message.user("q0")]
    for turn in range(1, 6):
        request = Request(model=model, messages=tuple(history))
        misses = cache.misses
        assert p.build_body(request, cache=cache) == p.build_body(request)
        # the new messages, plus (breakpoint providers) the one whose marker (4) moved off
        new = 1 if turn == 1 else 2
        moved = 1 if turn >= 3 and provider in ("anthropic", "openrouter") else 0
        assert cache.misses - misses == new + moved
        history += [Message.assistant(f"a{turn}"), Message.user(f"q{turn}")]


def test_wire_array_cuts_the_first_comma_only():
    assert jsonbytes.dumps(wire_array([b"", b",1", b"", b",2,3"])) == b"[1,2,3]"
    assert jsonbytes.dumps(wire_array([b""])) == b"[]"
    assert jsonbytes.dumps(wire_array([])) == b"[]"
    assert jsonbytes.dumps(wire_array([b"", b",1"], b',{"s":0}')) == b'[{"s":0},1]'
    assert jsonbytes.dumps(wire_array([], b",0")) == b"[0]"


def test_an_image_is_base64_encoded_once_and_the_cache_is_not_part_of_its_value():
    image = Image(data=PNG, mime_type="image/png")
    first = image.base64
    assert first == base64.b64encode(PNG)
    assert image.base64 is first
    assert image == Image(data=PNG, mime_type="image/png")
    assert hash(image) == hash(Image(data=PNG, mime_type="image/png"))
    assert "base64" not in repr(image)
