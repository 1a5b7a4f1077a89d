import base64
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore import _jsonwrite, jsonbytes
from llmcore.errors import EncodingError

from .examples import examples
from .strategies import tool_arguments

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(exclude_categories=["Cs"])),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)


def test_compact_insertion_order_and_utf8():
    assert (
        jsonbytes.dumps({"b": 1, "a": ["é", None, True, 1.5]})
        == '{"b":1,"a":["é",null,true,1.5]}'.encode()
    )


def test_sorted_and_indented():
    assert jsonbytes.dumps_sorted({"b": 1, "a": {"d": 0, "c": 0}}) == b'{"a":{"c":0,"d":0},"b":1}'
    assert (
        jsonbytes.dumps_sorted({"b": [1], "a": {}}, indent=1)
        == b'{\n "a": {},\n "b": [\n  1\n ]\n}'
    )


def test_raw_is_spliced_verbatim():
    assert (
        jsonbytes.dumps({"input": jsonbytes.Raw('{ "z" : 1,"a":2 }')})
        == b'{"input":{ "z" : 1,"a":2 }}'
    )


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, b"x", {1: 2}, object(), "\ud800"])
def test_refuses_values_without_a_stable_json_form(bad):
    with pytest.raises(EncodingError):
        jsonbytes.dumps([bad])


def test_loads_refuses_constants():
    with pytest.raises(ValueError):
        jsonbytes.loads("[NaN]")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b'{"a":1}', True),
        (b" {} ", True),
        (b"[]", False),
        (b'{"a":', False),
        (b"\xff", False),
        (b"", False),
    ],
)
def test_is_json_object(data, expected):
    assert jsonbytes.is_json_object(data) is expected


@pytest.mark.full_count
@settings(max_examples=examples(full=500, sample=200))
@given(json_values)
def test_round_trips_through_the_standard_parser(value):
    out = jsonbytes.dumps(value)
    assert json.loads(out) == value
    assert out == json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def test_raw_array_splices_bytes_once_and_skips_empty_items():
    value = {
        "a": "é",
        "messages": jsonbytes.RawArray([b'{"x":1}', b"", b'{"y":"\xc3\xa9"},{"z":2}']),
    }
    assert jsonbytes.dumps(value) == '{"a":"é","messages":[{"x":1},{"y":"é"},{"z":2}]}'.encode()
    assert jsonbytes.dumps({"m": jsonbytes.RawArray([])}) == b'{"m":[]}'
    with pytest.raises(EncodingError):
        jsonbytes.dumps_text({"m": jsonbytes.RawArray([b"1"])})


def test_an_integer_longer_than_python_reads_is_named_plainly():
    with pytest.raises(ValueError) as info:
        jsonbytes.loads('{"a":[' + "9" * 5000 + "]}")
    assert (
        str(info.value) == "an integer of 5000 digits is longer than the 4300 digits Python reads"
    )
    with pytest.raises(ValueError) as raw:
        int("9" * 5000)
    assert jsonbytes.long_integer(raw.value) == str(info.value)
    assert jsonbytes.long_integer(ValueError("other")) is None
    assert jsonbytes.loads("[" + "9" * 4300 + "]") == [int("9" * 4300)]


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (0, "an integer of 1 digit"),
        (9, "an integer of 1 digit"),
        (10, "an integer of 2 digits"),
        (-100, "a negative integer of 3 digits"),
        (10**4000 - 1, "an integer of 4000 digits"),
        (10**4000, "an integer of 4001 digits"),
        (int("f" * 5000, 16), "an integer of 6021 digits"),
        (1 << (1 << 21), "an integer of about 631306 digits"),
    ],
    ids=["0", "9", "10", "-100", "4000-digits", "4001-digits", "hex-5000", "2**2**21"],
)
def test_integer_size_never_converts_the_integer_to_text(value: int, shown: str) -> None:
    assert jsonbytes.integer_size(value) == shown


def test_an_integer_longer_than_python_writes_is_an_encoding_error() -> None:
    with pytest.raises(EncodingError, match="an integer of 6021 digits is longer than the 4300"):
        jsonbytes.dumps({"n": int("f" * 5000, 16)})


# Utf8: a string given as UTF-8 bytes is written exactly as the str it decodes to (P2: one
# writer, the same bytes). The reference is the str path: the standard library's C escaper,
# then UTF-8.
def str_path(data: bytes) -> bytes:
    return json.encoder.encode_basestring(data.decode("utf-8", "replace")).encode("utf-8")


special_characters = st.sampled_from(
    ["\x00", "\x1f", "\x7f", '"', "\\", "\n", "\t", "\u2028", "\u2029", "\ufffd", "é", "日", "😀"]
)
texts_with_specials = st.lists(
    st.characters(exclude_categories=["Cs"])
    | special_characters
    | st.sampled_from(["\ud800", "\udfff"]),
    max_size=40,
).map("".join)


@pytest.mark.full_count
@settings(max_examples=examples(full=1000, sample=250))
@given(
    st.binary(max_size=64) | texts_with_specials.map(lambda t: t.encode("utf-8", "surrogatepass"))
)
def test_utf8_bytes_are_written_as_their_decoded_text_is(data):
    assert jsonbytes.dumps(jsonbytes.Utf8(data)) == str_path(data)
    assert jsonbytes.dumps({"k": [jsonbytes.Utf8(data)]}) == b'{"k":[' + str_path(data) + b"]}"


@pytest.mark.full_count
@settings(max_examples=examples(full=2000, sample=150))
@given(st.binary(max_size=300))
def test_plain_utf8_is_copied_as_it_is(data):
    text = base64.b64encode(data)
    assert jsonbytes.dumps(jsonbytes.Utf8(text, plain=True)) == b'"' + text + b'"'
    assert jsonbytes.dumps(jsonbytes.Utf8(text, plain=True)) == str_path(text)


def test_utf8_edges():
    assert jsonbytes.dumps(jsonbytes.Utf8(b"")) == b'""'
    assert jsonbytes.dumps(jsonbytes.Utf8(b'a"b\\c\n\x01')) == b'"a\\"b\\\\c\\n\\u0001"'
    assert jsonbytes.dumps(jsonbytes.Utf8(b"\xff")) == '"\ufffd"'.encode()
    # an encoded lone surrogate is invalid UTF-8: replaced, never written
    assert jsonbytes.dumps(jsonbytes.Utf8(b"\xed\xa0\x80")) == '"\ufffd\ufffd\ufffd"'.encode()
    with pytest.raises(EncodingError):
        jsonbytes.dumps_text(jsonbytes.Utf8(b"x"))


@pytest.mark.full_count
@settings(max_examples=examples(full=2000, sample=100))
@given(st.lists(json_values, max_size=5))
def test_dumps_items_and_pieces_make_the_array(values):
    piece = jsonbytes.dumps_items(values)
    assert piece == b"".join(b"," + jsonbytes.dumps(v) for v in values)
    pieces = [memoryview(piece)[1:]] if piece else []
    assert jsonbytes.dumps(jsonbytes.RawArray.from_pieces(pieces)) == jsonbytes.dumps(values)


# The writer's fast paths give the bytes of the reference paths they stand in for.
def replaced(data: bytes) -> bytes:
    return data.decode("utf-8", "replace").encode("utf-8")


utf8_runs = st.lists(
    st.binary(max_size=8)
    | texts_with_specials.map(lambda t: t.encode("utf-8", "surrogatepass"))
    | st.sampled_from([b"\xf0\x9f\x98", b"\xe6\x97", b"\xc3", b"\xed\xa0\x80", b"\x80", b"\xff"]),
    max_size=12,
)


@pytest.mark.full_count
@settings(max_examples=examples(full=300, sample=100))
@given(utf8_runs, st.integers(min_value=0, max_value=3))
def test_invalid_utf8_is_repaired_as_a_full_replacing_decode_would(runs, scale):
    # Long runs too: the repair decodes again only from the first invalid byte on.
    data = b"".join(runs) * (1 + 1000 * scale)
    assert _jsonwrite._valid_utf8(data) == replaced(data)
    assert jsonbytes.dumps(jsonbytes.Utf8(data)) == str_path(data)


@pytest.mark.full_count
@settings(max_examples=examples(full=300, sample=120))
@given(json_values)
def test_compact_writer_matches_the_general_writer(value):
    # dumps takes the exact-type fast paths; dumps_sorted(indent=None) on a value without dicts
    # of several keys goes through the general per-type checks: same bytes where order agrees.
    wrapped = {"k": value, "t": [True, False, None, 0, -(2**70), 1.5, jsonbytes.Utf8(b"x\n")]}
    compact = jsonbytes.dumps(wrapped)
    assert json.loads(compact) == json.loads(jsonbytes.dumps_sorted(wrapped))
    assert compact == json.dumps(
        {"k": value, "t": [True, False, None, 0, -(2**70), 1.5, "x\n"]},
        ensure_ascii=False,
        separators=(",", ":"),
        allow_nan=False,
    ).encode("utf-8")


# dumps_float_free: message values go through orjson's C escaper, with Raw and Utf8 spliced as
# this module writes them. The bytes must be the writer's own, for every value it can be given.
float_free_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | texts_with_specials
    | json_values.map(lambda v: jsonbytes.Raw(json.dumps(v)))
    | utf8_runs.map(lambda runs: jsonbytes.Utf8(b"".join(runs)))
    | texts_with_specials.map(
        lambda t: jsonbytes.Utf8(t.encode("utf-8", "replace"), valid=True)  # vouched valid
    )
    | st.binary(max_size=40).map(lambda d: jsonbytes.Utf8(base64.b64encode(d), plain=True)),
    lambda children: (
        st.lists(children, max_size=4)
        | st.lists(children, max_size=3).map(tuple)
        | st.dictionaries(texts_with_specials, children, max_size=4)
    ),
    max_leaves=20,
)


@pytest.mark.full_count
@settings(max_examples=examples(full=3000, sample=120))
@given(st.lists(float_free_values, max_size=4))
def test_the_float_free_writer_writes_the_writers_bytes(values):
    try:
        expected = jsonbytes.dumps(values)
    except EncodingError:  # a lone surrogate in a str or key: refused either way
        with pytest.raises(EncodingError):
            jsonbytes.dumps_float_free(values)
        return
    assert jsonbytes.dumps_float_free(values) == expected


def test_orjson_escapes_every_code_point_as_the_standard_library_does():
    import itertools

    import orjson

    text = "".join(map(chr, itertools.chain(range(0xD800), range(0xE000, 0x110000))))
    assert orjson.dumps(text) == json.encoder.encode_basestring(text).encode("utf-8")


def test_message_values_are_written_by_orjson_and_the_rest_by_the_writer(monkeypatch):
    values = [{"role": "user", "content": [{"type": "text", "text": 'a"\n'}]}, True, 7]
    expected = jsonbytes.dumps(values)

    def refuse(value, *, indent=None):
        raise AssertionError("the pure writer was used")

    monkeypatch.setattr(jsonbytes, "dumps", refuse)
    assert jsonbytes.dumps_float_free(values) == expected
    # what orjson cannot write as the writer does goes to the writer, whole array at once
    for odd in ([2**70], [{"k": object()}], ["\ud800"], [{1: "non-string key"}]):
        with pytest.raises(AssertionError, match="pure writer"):
            jsonbytes.dumps_float_free(odd)


def reference_is_json_object(data: bytes) -> bool:
    try:
        return isinstance(jsonbytes.loads(data), dict)
    except (ValueError, RecursionError):
        return False


@pytest.mark.full_count
@settings(max_examples=examples(full=3000, sample=400))
@given(
    tool_arguments()
    | st.binary(max_size=24)
    | json_values.map(lambda v: json.dumps({"v": v}, ensure_ascii=False).encode())
)
def test_is_json_object_answers_as_loads_does(data):
    assert jsonbytes.is_json_object(data) is reference_is_json_object(data)


@pytest.mark.parametrize(
    "data",
    [
        b'{"a":1e999}',  # orjson refuses (infinity); loads reads it
        b'{"a":"\\ud800"}',  # a lone-surrogate escape: orjson refuses; loads reads it
        b'{"n":' + b"9" * 400 + b"}",  # a long integer: orjson refuses; loads reads it
        b'{"n":' + b"9" * 5000 + b"}",  # longer than Python reads: not an object
        b"\xef\xbb\xbf{}",  # a byte order mark: refused by both
        b'{"a":NaN}',
        b'{"a":' + b"[" * 600 + b"]" * 600 + b"}",  # deep, within the recursion limit
        b'{"a":' + b"[" * 1010 + b"]" * 1010 + b"}",  # within orjson's depth limit, not loads'
    ],
)
def test_is_json_object_edges_agree_with_loads(data):
    assert jsonbytes.is_json_object(data) is reference_is_json_object(data)


def test_a_build_without_orjson_pybase64_and_the_c_writer_gives_the_same_bytes(tmp_path):
    # orjson and pybase64 are dependencies and the C writer an optional extension, each with a
    # pure-Python fallback; the fallbacks must write the same body.
    import subprocess
    import sys

    script = tmp_path / "build.py"
    script.write_text(
        "import sys\n"
        "if sys.argv[1] == 'without':\n"
        "    sys.modules['orjson'] = None\n"
        "    sys.modules['pybase64'] = None\n"
        "    sys.modules['llmcore.providers._speedups'] = None\n"
        "from llmcore import Image, Message, ToolCall, ToolResult, get_provider\n"
        "from llmcore.request import Request\n"
        "png = b'\\x89PNG\\r\\n\\x1a\\n' + bytes(range(256)) * 9\n"
        "history = (\n"
        "    Message.user('see \"this\"\\n\\u2028 😀', Image(data=png, mime_type='image/png')),\n"
        "    Message.assistant(ToolCall(id='c1', name='f', arguments=b'{\"a\": 1e999}')),\n"
        "    Message.tool(ToolResult(call_id='c1', tool_name='f', content=b'x\\xff\"\\\\\\x01')),\n"
        ")\n"
        "for name in ('anthropic', 'openai-chat', 'openai-responses'):\n"
        "    body = get_provider(name).build_body(Request(model='m', messages=history))\n"
        "    sys.stdout.write(body.hex() + '\\n')\n"
        "import llmcore.jsonbytes, llmcore.messages, llmcore.providers.history as h\n"
        "print(llmcore.jsonbytes._orjson is None, llmcore.messages._b64encode.__module__,\n"
        "      h._speedups is None)\n",
        encoding="utf-8",
    )
    run = {
        mode: subprocess.run(
            [sys.executable, str(script), mode], capture_output=True, text=True, check=True
        ).stdout.splitlines()
        for mode in ("with", "without")
    }
    assert run["with"][:3] == run["without"][:3]
    assert run["with"][3].split() == ["False", "pybase64._pybase64", "False"]
    assert run["without"][3].split() in (["True", "base64", "True"], ["True", "binascii", "True"])


class _Text(str):
    def __str__(self) -> str:
        return "other"


class _Number(int):
    def __repr__(self) -> str:
        return "0"


class _Object(dict):  # type: ignore[type-arg]
    pass


def _nested(depth: int) -> list[object]:
    value: list[object] = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    "values",
    [
        [_Text("a\n"), {_Text("k"): _Text("v")}],  # str subclasses: the writer's bytes
        [_Number(3), _Object(a=_Number(1)), [True, False, None]],
        [2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 10**40],
        [{1: "int key"}],
        [{None: 1}],
        [_nested(250)],
        [_nested(253)],
        [_nested(254)],  # orjson's limit: the writer takes over
        [_nested(255)],  # beyond MAX_DEPTH: refused either way
        [jsonbytes.Raw("NaN"), jsonbytes.Raw("{bad"), jsonbytes.Raw("")],  # spliced as given
        [jsonbytes.Raw("\ud800")],
        [jsonbytes.Utf8(b"a\xffb\x00")],
        ["\ud800"],
        [{"\udfff": 1}],
        [b"bytes"],
        [{1, 2}],
        [(1, (2,))],
    ],
)
def test_odd_values_get_the_writers_bytes_or_its_error(values):
    try:
        expected = jsonbytes.dumps(values)
    except EncodingError as error:
        with pytest.raises(EncodingError) as fast:
            jsonbytes.dumps_float_free(values)
        assert fast.value.message == error.message
        return
    assert jsonbytes.dumps_float_free(values) == expected


def around_writer(inner: bytes, calls: list[tuple[bytes, bytes]]):
    def write(before: bytes, after: bytes) -> bytes:
        calls.append((before, after))
        return before + inner + after

    return write


def test_an_array_written_around_gets_the_text_before_and_after_it():
    calls: list[tuple[bytes, bytes]] = []
    array = jsonbytes.RawArray.written_around(around_writer(b"[1,2]", calls))
    body = {"a": "x", "m": array, "u": jsonbytes.Utf8(b"\xc3\xa9"), "z": [True]}
    assert jsonbytes.dumps(body) == b'{"a":"x","m":[1,2],"u":"\xc3\xa9","z":[true]}'
    assert calls == [(b'{"a":"x","m":', b',"u":"\xc3\xa9","z":[true]}')]
    assert (
        jsonbytes.dumps(body, indent=1)
        == b'{\n "a": "x",\n "m": [1,2],\n "u": "\xc3\xa9",\n "z": [\n  true\n ]\n}'
    )
    with pytest.raises(EncodingError, match="only be written as bytes"):
        jsonbytes.dumps_text(body)


def test_of_two_arrays_written_around_the_second_is_written_alone_and_copied():
    first: list[tuple[bytes, bytes]] = []
    second: list[tuple[bytes, bytes]] = []
    one = jsonbytes.RawArray.written_around(around_writer(b"[1]", first))
    two = jsonbytes.RawArray.written_around(around_writer(b"[2]", second))
    assert jsonbytes.dumps([one, "s", two]) == b'[[1],"s",[2]]'
    assert first == [(b"[", b',"s",[2]]')]
    assert second == [(b"", b"")]
