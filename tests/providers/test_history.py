"""The append-only encoded history: what is encoded, and checks that skip known messages."""

import base64
import copy
import pickle
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore import jsonbytes
from llmcore.errors import EncodingError, InvalidRequestError
from llmcore.messages import Image, Message, Text, ToolCall, ToolResult
from llmcore.providers import get_provider
from llmcore.providers import history as history_module
from llmcore.providers.history import EncodeCache, check_request, history_array, wire_array
from llmcore.request import Params, Request
from tests.examples import examples

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


@pytest.mark.full_count
@settings(max_examples=examples(full=300, sample=100))
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

        history = bytes(cache.encode_all(messages, options, encode))
        cold = [encode(i, m, options.get(i)) for i, m in enumerate(messages)]
        assert history == b"".join(cold)
        assert cache.pieces() == cold
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


@pytest.mark.full_count
@settings(max_examples=examples(full=500, sample=150))
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
    assert jsonbytes.dumps(wire_array(b",1,2,3")) == b"[1,2,3]"
    assert jsonbytes.dumps(wire_array(b"")) == b"[]"
    assert jsonbytes.dumps(wire_array(b",1", b',{"s":0}')) == b'[{"s":0},1]'
    assert jsonbytes.dumps(wire_array(b"", b",0")) == b"[0]"
    assert jsonbytes.dumps(wire_array(memoryview(b",1,2"), b",0")) == b"[0,1,2]"


def test_a_request_array_is_at_most_the_head_and_one_view_of_the_history():
    cache = EncodeCache()
    messages = tuple(text_message(n) for n in range(50))
    array = history_array(messages, {}, lambda i, m, o: [m.content[0].text], cache, ["s"])
    assert len(array.pieces) == 2
    assert jsonbytes.dumps(array) == jsonbytes.dumps(["s", *(f"m{n}" for n in range(50))])


def test_an_image_is_base64_encoded_once_and_the_cache_is_not_part_of_its_value():
    image = Image(data=PNG, mime_type="image/png")
    first = image.base64
    assert first == base64.b64encode(PNG)
    assert image.base64 is first
    assert image == Image(data=PNG, mime_type="image/png")
    assert hash(image) == hash(Image(data=PNG, mime_type="image/png"))
    assert "base64" not in repr(image)


MODELS = {
    "anthropic": "claude-sonnet-4-5",
    "openai-chat": "gpt-4o",
    "openai-responses": "gpt-4o",
    "openrouter": "anthropic/claude-sonnet-4.5",
}
CARRIED = st.sampled_from(
    [
        '{"type":"thinking","thinking":"a","signature":"s1"}',
        '{"type":"thinking","thinking":"b","signature":"s2"}',  # same length as the one above
        '{"type":"redacted_thinking","data":"xyz"}',
        "",  # Responses: the message becomes nothing
    ]
)


def drawn_message(data: st.DataObject, number: int) -> Message:
    text = f"m{number}" + "é" * data.draw(st.integers(0, 30), label="text length")
    kind = data.draw(st.sampled_from(["user", "assistant", "image"]), label="kind")
    if kind == "image":
        return Message.user(text, Image(data=PNG + bytes([number % 256]), mime_type="image/png"))
    return Message.user(text) if kind == "user" else Message.assistant(text)


@pytest.mark.full_count
@pytest.mark.parametrize("provider", list(MODELS))
@settings(max_examples=examples(full=75, sample=30))
@given(data=st.data())
def test_incremental_bodies_equal_cold_bodies_through_edits_truncations_and_moves(provider, data):
    """Appends, edits in the middle, truncations, reopens, moved breakpoints and carried data:
    every body built with the carried cache is the cold body, byte for byte."""
    p = get_provider(provider)
    cache = EncodeCache()
    messages: tuple[Message, ...] = (drawn_message(data, 0),)
    fresh = 1
    params = Params()
    carry: dict[int, tuple[str, ...]] = {}
    for _ in range(data.draw(st.integers(1, 8), label="builds")):
        action = data.draw(
            st.sampled_from(["append", "edit", "truncate", "reopen", "params", "carry", "repeat"])
        )
        if action == "append":
            count = data.draw(st.integers(1, 3), label="appended")
            messages += tuple(drawn_message(data, fresh + k) for k in range(count))
            fresh += count
        elif action == "edit":
            index = data.draw(st.integers(0, len(messages) - 1), label="edited")
            messages = messages[:index] + (drawn_message(data, fresh),) + messages[index + 1 :]
            fresh += 1
        elif action == "truncate":
            messages = messages[: data.draw(st.integers(1, len(messages)), label="kept")]
        elif action == "reopen":  # equal values, new objects
            messages = tuple(Message(role=m.role, content=m.content) for m in messages)
        elif action == "params":  # the breakpoints' TTL changes, or they come or go
            params = Params(
                cache_ttl=data.draw(st.sampled_from(["5m", "1h"]), label="ttl"),
                cache_mode=data.draw(
                    st.sampled_from(["breakpoints", "automatic", "off"]), label="mode"
                ),
            )
        elif action == "carry":
            carry = data.draw(
                st.dictionaries(
                    st.integers(0, len(messages) - 1),
                    st.lists(CARRIED, min_size=1, max_size=2).map(tuple),
                    max_size=2,
                ),
                label="carry",
            )
        request = Request(model=MODELS[provider], messages=messages, params=params)
        builds = cache.hits + cache.misses
        body = p.build_body(request, cache=cache, carry=carry)
        saved = history_module._COLD_RUN  # the cold build writes its values in runs of this
        history_module._COLD_RUN = data.draw(st.sampled_from([1, 2, 3, saved]), label="run")
        try:
            assert body == p.build_body(request, carry=carry)
        finally:
            history_module._COLD_RUN = saved
        assert cache.hits + cache.misses - builds == len(messages)


def values_with_option(index: int, message: Message, option: object) -> list[object]:
    """A message's values: its text, then its option; option ``"gone"``: no values at all."""
    if option == "gone":
        return []
    text = message.content[0]
    assert isinstance(text, Text)
    return [text.text] if option is None else [text.text, option]


def cold_array(messages: tuple[Message, ...], options: dict[int, object]) -> bytes:
    return jsonbytes.dumps(
        [v for i, m in enumerate(messages) for v in values_with_option(i, m, options.get(i))]
    )


@pytest.mark.full_count
@settings(max_examples=examples(full=200, sample=50))
@given(st.data())
def test_an_array_kept_from_a_build_keeps_its_bytes_and_later_builds_stay_right(data):
    """A kept array holds a view of the cache's buffer: later builds (which then cannot resize
    it) write into a copy, and the kept array still writes the bytes it had."""
    cache = EncodeCache()
    messages: tuple[Message, ...] = ()
    fresh = 0
    kept: list[tuple[jsonbytes.RawArray, bytes]] = []
    for _ in range(data.draw(st.integers(1, 8), label="builds")):
        action = data.draw(st.sampled_from(["append", "edit", "truncate", "options"]))
        if action == "append" or not messages:
            count = data.draw(st.integers(1, 3), label="appended")
            messages += tuple(text_message(fresh + k) for k in range(count))
            fresh += count
        elif action == "edit":
            index = data.draw(st.integers(0, len(messages) - 1), label="edited")
            fresh += 1
            messages = messages[:index] + (text_message(fresh),) + messages[index + 1 :]
        elif action == "truncate":
            messages = messages[: data.draw(st.integers(0, len(messages) - 1), label="kept")]
        options = {  # "a" and "b": a piece replaced by one of the same length
            i: o
            for i, o in data.draw(
                st.dictionaries(
                    st.integers(0, 10), st.sampled_from(["a", "b", "longer", "gone"]), max_size=3
                ),
                label="options",
            ).items()
            if i < len(messages)
        }
        array = history_array(messages, options, values_with_option, cache)
        expected = cold_array(messages, options)
        assert jsonbytes.dumps(array) == expected
        if data.draw(st.booleans(), label="keep the array"):
            kept.append((array, expected))
        del array
    for array, expected in kept:
        assert jsonbytes.dumps(array) == expected


@settings(max_examples=200)
@given(
    st.lists(st.sampled_from([None, "a", "longer", "gone"]), max_size=12),
    st.lists(st.text(max_size=3), max_size=2),
    st.integers(1, 4),
)
def test_a_cold_array_written_in_runs_is_the_array_written_at_once(options, head, run):
    """A cold build writes its values in runs (so their objects die young); the runs' texts
    joined are the whole array's text, wherever the runs end (head values, messages with no
    values and messages with two included)."""
    messages = tuple(text_message(n) for n in range(len(options)))
    by_index = {i: o for i, o in enumerate(options) if o is not None}
    saved = history_module._COLD_RUN
    history_module._COLD_RUN = run
    try:
        array = history_array(messages, by_index, values_with_option, None, head=head)
    finally:
        history_module._COLD_RUN = saved
    expected = jsonbytes.dumps(
        [
            *head,
            *(v for i, m in enumerate(messages) for v in values_with_option(i, m, by_index.get(i))),
        ]
    )
    assert jsonbytes.dumps(array) == expected


def test_a_kept_array_keeps_its_bytes_when_a_piece_of_the_same_length_replaces_one():
    cache = EncodeCache()
    messages = tuple(text_message(n) for n in range(3))
    kept = history_array(messages, {2: "a"}, values_with_option, cache)
    moved = history_array(messages, {2: "b"}, values_with_option, cache)
    longer = history_array(messages + (text_message(3),), {}, values_with_option, cache)
    assert jsonbytes.dumps(kept) == b'["m0","m1","m2","a"]'
    assert jsonbytes.dumps(moved) == b'["m0","m1","m2","b"]'
    assert jsonbytes.dumps(longer) == b'["m0","m1","m2","m3"]'


@pytest.mark.parametrize("provider", list(MODELS))
def test_a_built_body_leaves_no_view_of_the_buffer_so_the_next_build_copies_nothing(provider):
    p = get_provider(provider)
    cache = EncodeCache()
    history = [Message.user("q0")]
    p.build_body(Request(model=MODELS[provider], messages=tuple(history)), cache=cache)
    buffer = cache._buffer
    for turn in range(1, 4):
        history += [Message.assistant(f"a{turn}"), Message.user(f"q{turn}")]
        request = Request(model=MODELS[provider], messages=tuple(history))
        assert p.build_body(request, cache=cache) == p.build_body(request)
        assert cache._buffer is buffer  # appended to in place, never copied


@pytest.mark.parametrize("duplicate", [copy.copy, copy.deepcopy])
def test_a_copied_cache_is_independent_of_the_original(duplicate):
    p = get_provider("anthropic")
    history = (Message.user("q0"), Message.assistant("a0"), Message.user("q1"))

    def build(messages: tuple[Message, ...], cache: EncodeCache) -> None:
        request = Request(model=MODELS["anthropic"], messages=messages)
        assert p.build_body(request, cache=cache) == p.build_body(request)

    cache = EncodeCache()
    build(history, cache)
    pieces, counts = cache.pieces(), (cache.hits, cache.misses)
    twin = duplicate(cache)
    assert (twin.pieces(), twin.hits, twin.misses) == (pieces, *counts)
    build(history + (Message.assistant("a1"), Message.user("q2")), twin)
    assert (cache.pieces(), cache.hits, cache.misses) == (pieces, *counts)
    build((Message.user("edited"),) + history[1:], cache)
    build(history + (Message.assistant("a1"), Message.user("q2"), Message.assistant("a2")), twin)
    assert twin.pieces() != cache.pieces()


def test_an_encoding_error_leaves_the_cache_as_it_was():
    cache = EncodeCache()
    messages = tuple(text_message(n) for n in range(3))
    cache.encode_all(messages, {1: "a"}, lambda i, m, o: jsonbytes.dumps_items([i, o]))
    pieces, counts = cache.pieces(), (cache.hits, cache.misses)

    def failing(index: int, message: Message, option: object) -> bytes:
        if index == 3:
            raise EncodingError("cannot write message 3")
        return jsonbytes.dumps_items([index, option])

    edited = messages[:2] + (text_message(7), text_message(8))
    with pytest.raises(EncodingError, match="message 3"):
        cache.encode_all(edited, {1: "b"}, failing)
    assert (cache.pieces(), cache.hits, cache.misses) == (pieces, *counts)
    assert bytes(cache.encode_all(messages, {1: "a"}, failing)) == b',0,null,1,"a",2,null'
    assert cache.hits - counts[0] == 3


def test_messages_have_no_order_so_the_prefix_check_sees_every_difference():
    # EncodeCache compares histories with tuple `<=`: the first unequal pair of messages must
    # raise TypeError rather than order them
    with pytest.raises(TypeError):
        _ = Message.user("a") <= Message.user("b")
    cache = EncodeCache()
    first = (Message.user("a"), Message.assistant("b"), Message.user("c"))
    cache.encode_all(first, {}, lambda i, m, o: b"")
    assert cache.known(first[:2] + (Message.user("d"),)) == 2
    assert cache.known((Message.user("a"), Message.assistant("x"))) == 1
    assert cache.known(tuple(Message(role=m.role, content=m.content) for m in first)) == 3
    assert cache.known(first + (Message.assistant("e"),)) == 3
    assert cache.known(first[:1]) == 1
    assert cache.known(()) == 0


class AlwaysEqual(str):
    """A text that says it equals every other (and would order before any)."""

    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False

    __hash__ = str.__hash__


class PrefixOfAll(tuple):  # type: ignore[type-arg]
    """A history that claims to begin every other history."""

    def __le__(self, other: object) -> bool:
        return True

    def __ge__(self, other: object) -> bool:
        return True


@pytest.mark.parametrize("provider", list(MODELS))
def test_a_str_subclass_or_tuple_subclass_cannot_pass_for_a_stored_message(provider):
    p = get_provider(provider)
    cache = EncodeCache()
    p.build_body(Request(model=MODELS[provider], messages=(Message.user("stored"),)), cache=cache)
    for messages in [
        (Message.user(AlwaysEqual("edited")),),
        (Message(role=AlwaysEqual("assistant"), content=(Text(text="stored"),)),),
        PrefixOfAll((Message.user("other"), Message.assistant("reply"))),
    ]:
        request = Request(model=MODELS[provider], messages=messages)
        assert p.build_body(request, cache=cache) == p.build_body(request)


def test_option_keys_outside_the_history_are_ignored_as_a_cold_build_ignores_them():
    cache = EncodeCache()
    messages = tuple(text_message(n) for n in range(3))
    cache.encode_all(messages, {}, lambda i, m, o: jsonbytes.dumps_items([i, o]))
    for options in [{-1: "x"}, {3: "x"}, {-3: "y", 1: "z"}, {"1": "w"}]:
        view = cache.encode_all(messages, options, lambda i, m, o: jsonbytes.dumps_items([i, o]))
        cold = b"".join(jsonbytes.dumps_items([i, options.get(i)]) for i in range(3))
        assert bytes(view) == cold
        assert cache.pieces() == [jsonbytes.dumps_items([i, options.get(i)]) for i in range(3)]


def test_a_failure_while_the_buffer_changes_empties_the_cache_and_the_next_build_is_right():
    cache = EncodeCache()
    messages = tuple(text_message(n) for n in range(3))
    cache.encode_all(messages, {}, lambda i, m, o: jsonbytes.dumps_items([i]))

    def not_bytes(index: int, message: Message, option: object) -> bytes:
        return jsonbytes.dumps_items([index]) if index < 2 else "not bytes"  # type: ignore[return-value]

    with pytest.raises(TypeError):  # raised by the append, after the cut at message 1
        cache.encode_all(messages[:1] + (text_message(5), text_message(6)), {}, not_bytes)
    assert cache.pieces() == []
    view = cache.encode_all(messages, {}, lambda i, m, o: jsonbytes.dumps_items([i]))
    assert bytes(view) == b",0,1,2"


class _ReportingLock:
    """A lock that sets ``waiting`` before it blocks, so a test sees a build queued at it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.waiting = threading.Event()

    def __enter__(self) -> None:
        if not self.lock.acquire(blocking=False):
            self.waiting.set()
            self.lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self.lock.release()


def test_builds_from_two_threads_take_turns_and_each_gets_its_own_bytes():
    # thread A stops inside its encoder; thread B builds another history meanwhile. B must wait
    # for A (it would otherwise change the buffer under A's half-done build)
    cache = EncodeCache()
    lock = _ReportingLock()
    cache._lock = lock  # type: ignore[assignment]
    base = tuple(text_message(n) for n in range(4))
    cache.encode_all(base, {}, lambda i, m, o: jsonbytes.dumps_items([m.content[0].text]))
    in_encoder, resume = threading.Event(), threading.Event()
    results: dict[str, bytes] = {}

    def encode_text(index: int, message: Message, option: object) -> bytes:
        text = message.content[0]
        assert isinstance(text, Text)
        if text.text == "a-new":
            in_encoder.set()
            assert resume.wait(60)
        return jsonbytes.dumps_items([text.text])

    def build(name: str, messages: tuple[Message, ...]) -> None:
        results[name] = bytes(cache.encode_all(messages, {}, encode_text))

    history_a = base[:2] + (Message.user("a-new"),)
    history_b = (Message.user("b-only"),) + base[1:]
    thread_a = threading.Thread(target=build, args=("a", history_a))
    thread_b = threading.Thread(target=build, args=("b", history_b))
    thread_a.start()
    assert in_encoder.wait(60)
    thread_b.start()
    assert lock.waiting.wait(60)  # B is queued at the lock while A is inside its encoder
    resume.set()
    thread_a.join(60)
    thread_b.join(60)
    assert results == {"a": b',"m0","m1","a-new"', "b": b',"b-only","m1","m2","m3"'}


def test_a_cache_pickles_and_deep_copies_with_a_lock_of_its_own():
    cache = EncodeCache()
    messages = tuple(text_message(n) for n in range(3))
    cache.encode_all(messages, {1: "5m"}, lambda i, m, o: jsonbytes.dumps_items([i, o]))
    for twin in (pickle.loads(pickle.dumps(cache)), copy.deepcopy(cache), copy.copy(cache)):
        assert twin.pieces() == cache.pieces()
        assert twin._lock is not cache._lock
        more = (*messages, text_message(3))
        view = twin.encode_all(more, {1: "5m"}, lambda i, m, o: jsonbytes.dumps_items([i, o]))
        assert bytes(view) == b',0,null,1,"5m",2,null,3,null'
        assert twin.hits == cache.hits + 3
    assert len(cache.pieces()) == 3


ODD_TEXT = st.sampled_from(["", "é", "\ud800", "\x00\x1f", '"\\', "\u2028", "𝄞", "a" * 40])
ODD_BYTES = st.sampled_from(
    [b"", b"\xff", b"\xc3", b"\xed\xa0\x80", b'{"a":1}', b"\x00", "é".encode()]
)


def drawn_unit(data: st.DataObject, number: int) -> tuple[Message, ...]:
    """A settled run of messages: a text turn, an image turn, or tool calls and their results."""
    kind = data.draw(st.sampled_from(["user", "assistant", "image", "tools"]), label="unit")
    text = f"u{number}" + data.draw(ODD_TEXT, label="text")
    if kind == "user":
        return (Message.user(text),)
    if kind == "assistant":
        return (Message.assistant(text),)
    if kind == "image":
        return (Message.user(Image(data=PNG + bytes([number % 256]), mime_type="image/png")),)
    calls = data.draw(st.integers(1, 2), label="calls")
    ids = [f"call_{number}_{k}" for k in range(calls)]
    arguments = data.draw(st.lists(ODD_BYTES, min_size=calls, max_size=calls), label="arguments")
    contents = data.draw(st.lists(ODD_BYTES, min_size=calls, max_size=calls), label="results")
    assistant = Message.assistant(
        *([text] if data.draw(st.booleans(), label="with text") else []),
        *(ToolCall(id=i, name="t", arguments=a) for i, a in zip(ids, arguments, strict=True)),
    )
    results = [
        ToolResult(call_id=i, tool_name="t", content=c, is_error=data.draw(st.booleans()))
        for i, c in zip(ids, contents, strict=True)
    ]
    split = data.draw(st.booleans(), label="one tool message per result")
    tools = tuple(Message.tool(r) for r in results) if split else (Message.tool(*results),)
    return (assistant, *tools, Message.user(f"after {number}"))


@pytest.mark.parametrize("provider", list(MODELS))
@settings(max_examples=40)
@given(data=st.data())
def test_tool_turns_and_odd_texts_build_the_cold_body_through_edits_and_reopens(provider, data):
    """Tool calls with any argument bytes, results with invalid UTF-8, texts with escapes and
    lone surrogates: every cached body is the cold body, through appends, edits and reopens."""
    p = get_provider(provider)
    cache = EncodeCache()
    units = [drawn_unit(data, 0)]
    for number in range(1, data.draw(st.integers(2, 7), label="builds")):
        action = data.draw(st.sampled_from(["append", "edit", "truncate", "reopen", "copy"]))
        if action == "append":
            units.append(drawn_unit(data, number))
        elif action == "edit":
            units[data.draw(st.integers(0, len(units) - 1), label="edited")] = drawn_unit(
                data, number
            )
        elif action == "truncate":
            del units[data.draw(st.integers(1, len(units)), label="kept") :]
        elif action == "reopen":
            units = [tuple(copy.deepcopy(m) for m in unit) for unit in units]
        else:
            cache = copy.copy(cache)
        request = Request(model=MODELS[provider], messages=sum(units, ()))
        assert p.build_body(request, cache=cache) == p.build_body(request)


def test_a_list_changed_in_place_after_a_build_is_not_taken_for_the_stored_history():
    cache = EncodeCache()
    history = [text_message(0)]
    cache.encode_all(history, {}, lambda i, m, o: jsonbytes.dumps_items([i]))  # type: ignore[arg-type]
    history.append(text_message(1))
    assert cache.known(history) == 1  # type: ignore[arg-type]
    view = cache.encode_all(history, {}, lambda i, m, o: jsonbytes.dumps_items([i]))  # type: ignore[arg-type]
    assert bytes(view) == b",0,1"
