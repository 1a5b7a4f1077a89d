"""A parsed body is written by orjson only where its bytes are :func:`jsonbytes.dumps`'s."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore import jsonbytes
from llmcore.audit._cassette import json_bytes, json_bytes_float_free
from llmcore.errors import EncodingError
from tests.examples import examples

_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(-(2**70), 2**70),
    st.floats(),
    st.sampled_from([0.0, -0.0, 1e-05, 1e16, 1.5, 1e300, float("inf"), float("nan")]),
    st.text(),
    st.sampled_from(["\ud800", "null", "a\u2028b", "\x00\x1f\x7f", '"\\/']),
    st.binary(max_size=4),
)
_KEYS = st.one_of(
    st.text(max_size=6), st.sampled_from(["\udfff", "null"]), st.integers(), st.none()
)
_VALUES = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_KEYS, inner, max_size=4)),
    max_leaves=20,
)
_FLOAT_FREE_VALUES = st.recursive(
    _LEAVES.filter(lambda leaf: not isinstance(leaf, float)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_KEYS, inner, max_size=4)),
    max_leaves=20,
)


def _written(value: Any, write: Callable[[Any], bytes] = jsonbytes.dumps) -> bytes | str:
    """``write``'s bytes of ``value``, or the message of the error it raises."""
    try:
        return write(value)
    except EncodingError as exc:
        return exc.message


@pytest.mark.full_count
@settings(max_examples=examples(full=2000, sample=200), deadline=None)
@given(st.dictionaries(st.text(max_size=6), _VALUES, max_size=5))
def test_json_bytes_are_jsonbytes_dumps(value: dict[str, Any]) -> None:
    """The same bytes, or the same error, for any value a YAML document can hold."""
    assert _written(value, json_bytes) == _written(value)


def test_deep_nesting_is_written_as_jsonbytes_writes_it() -> None:
    value: Any = "x"
    for _ in range(300):  # past orjson's depth limit
        value = [value]
    assert json_bytes({"a": value}) == jsonbytes.dumps({"a": value})


def _float_free(value: Any) -> bool:
    if isinstance(value, dict):
        return all(_float_free(one) for one in value.values())
    if isinstance(value, list):
        return all(_float_free(one) for one in value)
    return not isinstance(value, float)


@pytest.mark.full_count
@settings(max_examples=examples(full=2000, sample=120), deadline=None)
@given(st.dictionaries(st.text(max_size=6), _FLOAT_FREE_VALUES, max_size=5))
def test_float_free_bytes_are_jsonbytes_dumps(value: dict[str, Any]) -> None:
    """Without floats, orjson's unchecked bytes (or the same error) for any YAML value."""
    assert _float_free(value)
    assert _written(value, json_bytes_float_free) == _written(value)


def test_float_free_bytes_keep_nulls() -> None:
    value = {"a": None, "b": [True, 1, "x"]}
    assert json_bytes_float_free(value) == b'{"a":null,"b":[true,1,"x"]}' == jsonbytes.dumps(value)
