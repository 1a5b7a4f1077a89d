"""Duplicate JSON keys (issue 8 item 4): refused with the key's path, never half-read.

``json.loads`` keeps the last value of a repeated key without a word. Request files are refused
with one line naming the repeated member (SPEC R1, R2); a ``conversation.json`` with a repeated
key is unreadable (A8): one notice, and the folder kept byte for byte.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from llmcore import jsonbytes
from llmcore.archive import ArchiveStore, Conversation, ConversationState
from llmcore.cli import app
from llmcore.cli.verify import verify_command
from llmcore.errors import RequestFileError
from llmcore.jsonbytes import DuplicateKeyError
from llmcore.requestfile import load_request_file, read_json_file
from tests.archive.helpers import conversation, snapshot

# --- jsonbytes.loads(unique_keys=True) ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "key", "path"),
    [
        ('{"a":1,"a":2}', "a", "$"),
        ('{"a":1,"b":{"c":1,"c":1}}', "c", "$.b"),
        (
            '{"messages":[{},{},{"content":[{"type":"text","text":"x","text":"y"}]}]}',
            "text",
            "$.messages[2].content[0]",
        ),
        ('[[{"k":null,"k":null}]]', "k", "$[0][0]"),
        ('{"a b":{"":1,"":2}}', "", "$.a b"),
        ('{"\\u00e9":{"x":1,"x":1}}', "x", "$.é"),
    ],
)
def test_a_repeated_key_is_refused_naming_the_key_and_the_object_path(text, key, path):
    with pytest.raises(DuplicateKeyError) as info:
        jsonbytes.loads(text.encode(), unique_keys=True)
    assert (info.value.key, info.value.path) == (key, path)
    assert info.value.key_path == f"{path}.{key}"
    assert str(info.value) == f"{path}.{key}: duplicate key {json.dumps(key, ensure_ascii=False)}"
    assert isinstance(info.value, ValueError)


def test_the_first_repeat_in_document_order_is_named():
    # The inner object's second "x" comes before the outer second "a" in the text.
    text = '{"a":{"x":1,"x":2},"a":3}'
    with pytest.raises(DuplicateKeyError) as info:
        jsonbytes.loads(text, unique_keys=True)
    assert info.value.key_path == "$.a.x"
    text = '{"a":1,"a":{"x":1,"x":2}}'
    with pytest.raises(DuplicateKeyError) as info:
        jsonbytes.loads(text, unique_keys=True)
    assert info.value.key_path == "$.a"


def test_without_the_option_the_last_value_wins_as_before():
    assert jsonbytes.loads('{"a":1,"a":2}') == {"a": 2}


def test_a_repeat_followed_by_invalid_json_is_still_a_value_error():
    with pytest.raises(ValueError):
        jsonbytes.loads('[{"a":1,"a":2}, nope', unique_keys=True)


def test_unique_keys_keeps_the_other_checks():
    with pytest.raises(ValueError, match="1e999"):
        jsonbytes.loads('{"a":1e999}', finite=True, unique_keys=True)
    with pytest.raises(ValueError, match="NaN"):
        jsonbytes.loads('{"a":NaN}', unique_keys=True)
    with pytest.raises(ValueError, match="UTF-8"):
        jsonbytes.loads(b'{"a":"\xff"}', unique_keys=True)


def test_a_repeat_at_depth_is_located_without_recursion():
    depth = 600  # deeper than a recursive walk of two frames per level could go
    text = '{"a":' * depth + '{"x":1,"x":2}' + "}" * depth
    with pytest.raises(DuplicateKeyError) as info:
        jsonbytes.loads(text, unique_keys=True)
    assert info.value.path == "$" + ".a" * depth


SCALARS = st.none() | st.booleans() | st.integers() | st.text(max_size=5)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)


def _objects(value: Any, path: str = "$") -> list[tuple[dict[str, Any], str]]:
    """Every non-empty object in ``value`` with its JSON path (``too_deep``'s form)."""
    out: list[tuple[dict[str, Any], str]] = []
    if isinstance(value, dict):
        if value:
            out.append((value, path))
        for key, child in value.items():
            out += _objects(child, f"{path}.{key}")
    elif isinstance(value, list):
        for index, child in enumerate(value):
            out += _objects(child, f"{path}[{index}]")
    return out


def _write(value: Any, target: dict[str, Any] | None, key: str, extra: Any) -> str:
    """JSON text of ``value`` with one more ``key`` member, after the original, in ``target``."""
    if isinstance(value, list):
        return "[" + ",".join(_write(v, target, key, extra) for v in value) + "]"
    if not isinstance(value, dict):
        return json.dumps(value)
    members = []
    for k, v in value.items():
        members.append(json.dumps(k) + ":" + _write(v, target, key, extra))
        if value is target and k == key:
            members.append(json.dumps(k) + ":" + _write(extra, None, key, extra))
    return "{" + ",".join(members) + "}"


@settings(max_examples=200, deadline=None)
@given(st.data(), VALUES.filter(lambda v: bool(_objects(v))), VALUES)
def test_any_injected_repeat_is_refused_at_its_path(data, value, extra):
    target, path = data.draw(st.sampled_from(_objects(value)))
    key = data.draw(st.sampled_from(sorted(target)))
    text = _write(value, target, key, extra)
    assert json.loads(text) is not None  # still JSON; the standard parser would take it
    with pytest.raises(DuplicateKeyError) as info:
        jsonbytes.loads(text.encode(), unique_keys=True)
    assert (info.value.key, info.value.path) == (key, path)


@settings(max_examples=200, deadline=None)
@given(VALUES)
def test_without_repeats_the_result_equals_json_loads(value):
    text = json.dumps(value)
    parsed = jsonbytes.loads(text.encode(), unique_keys=True)
    assert parsed == json.loads(text)
    assert json.dumps(parsed) == text  # key order kept


# --- request files ---------------------------------------------------------------------------

DUPLICATED = '{"model":"m","messages":[{"role":"user","role":"user","content":"hi"}]}'
DUPLICATED_LINE = '$.messages[0].role: duplicate key "role"'


def _one_line_error(code: int, err: str) -> str:
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("llmcore: "), err
    assert "Traceback" not in err
    return err.strip()


def test_read_json_file_names_the_repeated_member(tmp_path):
    path = tmp_path / "r.json"
    path.write_text('{"model":"a","params":{"maxTokens":1},"model":"b"}')
    with pytest.raises(RequestFileError) as info:
        read_json_file(path)
    assert info.value.location == f"{path}: $.model"
    assert info.value.message == 'duplicate key "model"'
    with pytest.raises(RequestFileError, match=r"\$\.model: duplicate key"):
        load_request_file(path)


@pytest.mark.parametrize("command", ["body", "import"])
def test_body_and_import_refuse_a_repeated_key_in_one_line(tmp_path, command):
    path = tmp_path / "r.json"
    path.write_text(DUPLICATED)
    result = CliRunner().invoke(app, [command, str(path), "--provider", "anthropic"])
    assert _one_line_error(result.exit_code, result.stderr) == f"llmcore: {path}: {DUPLICATED_LINE}"
    assert result.stdout == ""


def test_import_refuses_a_repeated_key_inside_request_raw(tmp_path):
    path = tmp_path / "case.json"
    path.write_text(json.dumps({"request": {}, "request_raw": DUPLICATED}))
    result = CliRunner().invoke(app, ["import", str(path), "--provider", "anthropic"])
    assert _one_line_error(result.exit_code, result.stderr) == (
        f'llmcore: {path}: $.request_raw: duplicate key "role" at $.messages[0].role of the '
        "request_raw text"
    )


def test_verify_refuses_a_request_file_with_a_repeated_key(tmp_path, capsys):
    folder = tmp_path / "agent"
    ArchiveStore(folder).save(Conversation(conversation(2)))
    before = snapshot(folder)
    path = tmp_path / "r.json"
    path.write_text(DUPLICATED)
    assert verify_command(folder, path, None) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    line = _one_line_error(2, captured.err)
    assert line.endswith(f"{path}: {DUPLICATED_LINE}")
    assert snapshot(folder) == before


# --- the archive (A8) --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "where"),
    [
        (b'"formatVersion": 1,', b'"formatVersion": 1,\n  "formatVersion": 1,', "$.formatVersion"),
        (b'"role": "user"', b'"role": "assistant",\n      "role": "user"', "$.history[0].role"),
        (
            b'"type": "text"',
            b'"type": "text",\n          "type": "text"',
            "$.history[0].content[0].type",
        ),
    ],
)
def test_a_conversation_with_a_repeated_key_is_unreadable_and_kept(tmp_path, old, new, where):
    folder = tmp_path / "agent"
    ArchiveStore(folder).save(Conversation(conversation(2)))
    file = folder / "conversation.json"
    data = file.read_bytes()
    assert old in data
    file.write_bytes(data.replace(old, new, 1))
    before = snapshot(folder)

    store = ArchiveStore(folder)
    loaded = store.load()
    assert loaded.state == ConversationState()
    assert loaded.notice is not None
    key = where.rsplit(".", 1)[1]
    assert loaded.notice.reason.endswith(f'conversation.json: {where}: duplicate key "{key}"')
    conv = store.open()
    assert len(conv.notices) == 1 and conv.keeps_unreadable
    assert store.save(conv).action == "kept_unreadable"
    assert snapshot(folder) == before


def test_verify_of_an_archive_with_a_repeated_key_is_one_line(tmp_path, capsys):
    folder = tmp_path / "agent"
    ArchiveStore(folder).save(Conversation(conversation(2)))
    file = folder / "conversation.json"
    file.write_bytes(
        file.read_bytes().replace(
            b'"formatVersion": 1,', b'"formatVersion": 1, "formatVersion": 1,', 1
        )
    )
    before = snapshot(folder)
    assert verify_command(folder, None, "anthropic") == 2
    line = _one_line_error(2, capsys.readouterr().err)
    assert '$.formatVersion: duplicate key "formatVersion"' in line
    assert snapshot(folder) == before


def test_a_request_file_path_in_the_error_is_the_given_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("r.json").write_text(DUPLICATED)
    result = CliRunner().invoke(app, ["body", "r.json", "-p", "openai-chat"])
    assert _one_line_error(result.exit_code, result.stderr) == f"llmcore: r.json: {DUPLICATED_LINE}"
