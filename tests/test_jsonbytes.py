import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore import jsonbytes
from llmcore.errors import EncodingError

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


@settings(max_examples=500)
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
