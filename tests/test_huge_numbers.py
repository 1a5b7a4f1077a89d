"""Huge numbers are a clear, typed error naming the field (issue 18 item 9).

``"temperature": 1`` followed by 400 zeros is valid JSON and Python reads it as an exact
integer; ``math.isfinite`` on it raised ``OverflowError``, a traceback from ``llmcore body``,
``llmcore import`` and ``Params(...)``. Every numeric field is checked the same way.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from llmcore.cli import app
from llmcore.errors import InvalidRequestError, RequestFileError
from llmcore.request import MAX_JSON_INTEGER, Params
from llmcore.requestfile import load_request_file

from .examples import examples

HUGE = "1" + "0" * 400
"""Valid JSON; no IEEE 754 binary64 number holds it."""

FIELDS = (("temperature", "temperature"), ("top_p", "topP"))


@pytest.mark.parametrize(("field", "key"), FIELDS)
@pytest.mark.parametrize("sign", [1, -1])
def test_params_refuse_an_integer_no_float_holds(field, key, sign):
    with pytest.raises(InvalidRequestError) as err:
        Params(**{field: sign * 10**400})
    assert err.value.location == f"params.{key}"
    assert "401 digits is too large for a JSON number" in err.value.message


def test_params_refuse_max_tokens_past_the_interoperable_integers():
    Params(max_tokens=MAX_JSON_INTEGER)  # the largest accepted
    for value in (MAX_JSON_INTEGER + 1, 10**400):
        with pytest.raises(InvalidRequestError) as err:
            Params(max_tokens=value)
        assert err.value.location == "params.maxTokens"
        assert "RFC 8259" in err.value.message
    with pytest.raises(InvalidRequestError, match="at least 1, not a negative integer of 401"):
        Params(max_tokens=-(10**400))


@pytest.mark.full_count
@settings(max_examples=examples(full=2000, sample=300))
@given(st.integers(min_value=-(10**320), max_value=10**320))
def test_any_integer_temperature_is_accepted_or_a_typed_error(value):
    try:
        params = Params(temperature=value)
    except InvalidRequestError as exc:
        assert exc.location == "params.temperature"
        assert abs(value) > 1.7976931348623157e308
    else:
        assert params.temperature == value


@pytest.mark.parametrize("key", ["temperature", "topP", "maxTokens"])
def test_a_request_file_with_a_huge_integer_names_the_key(tmp_path, key):
    path = tmp_path / "r.json"
    path.write_text(f'{{"model":"m","params":{{"{key}":{HUGE}}}}}')
    with pytest.raises(RequestFileError) as err:
        load_request_file(path)
    assert err.value.location == f"{path}: $.params.{key}"


def _one_line(args: list[str]) -> str:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, (result.stdout, result.stderr, result.exception)
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("llmcore: ")
    assert "Traceback" not in result.stderr and result.stdout == ""
    return result.stderr.strip()


@pytest.mark.parametrize("key", ["temperature", "topP", "maxTokens"])
def test_llmcore_body_gives_one_line_naming_the_key(tmp_path, key):
    path = tmp_path / "r.json"
    path.write_text(f'{{"model":"m","params":{{"{key}":{HUGE}}}}}')
    line = _one_line(["body", str(path), "-p", "anthropic"])
    assert line.startswith(f"llmcore: {path}: $.params.{key}: ")


@pytest.mark.parametrize(
    ("provider", "body"),
    [
        ("anthropic", '{"model":"m","max_tokens":5,"messages":[],"temperature":%s}'),
        ("openai-chat", '{"model":"m","messages":[],"top_p":%s}'),
        ("openai-responses", '{"model":"m","input":[],"temperature":%s}'),
        ("anthropic", '{"model":"m","max_tokens":%s,"messages":[]}'),
    ],
)
def test_llmcore_import_gives_one_line_naming_the_key(tmp_path, provider, body):
    path = tmp_path / "body.json"
    path.write_text(body % HUGE)
    line = _one_line(["import", str(path), "-p", provider])
    assert line.startswith(f"llmcore: {path}: ")
    assert any(word in line for word in ("temperature", "topP", "top_p", "max_tokens", "maxTokens"))
