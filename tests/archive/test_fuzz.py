"""Fuzz the loader with mutated ``conversation.json`` files (SPEC A7, A8).

Every mutated file opens with at most one notice, nothing but ``ArchiveReadError`` leaves the
decoder, nothing escapes :meth:`ArchiveStore.open`, nothing hangs, and opening never changes the
folder (no mutating file-system call, identical bytes after).
"""

from __future__ import annotations

import atexit
import copy
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmcore.archive import ArchiveStore, Conversation, decode
from llmcore.errors import ArchiveReadError

from .helpers import FIXTURE, CountingFS, conversation

_DEEP = "__DEEP_NESTING__"
_RAW = "__RAW_NUMBER__"

_VALUES = [
    None,
    True,
    False,
    0,
    -1,
    1.5,
    10**30,
    -(10**30),
    1.7e308,
    "",
    "text",
    "é\u2028\x00",
    "\ud800",
    "..",
    "../../etc/passwd",
    "/etc/passwd",
    "a/b",
    "..\\..\\x",
    "0" * 63 + "/",
    "../" + "0" * 61,
    "image/png/../../x",
    "user",
    "toolCall",
    "imageOmitted",
    [],
    [1, "a"],
    [{"type": "text", "text": "x"}],
    {},
    {"type": "text"},
    {"role": "user", "content": []},
    {"a": {"b": [None]}},
    _DEEP,
    _RAW,
]


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(value, dict):
        for key, inner in value.items():
            out.extend(_paths(inner, (*prefix, key)))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            out.extend(_paths(inner, (*prefix, index)))
    return out


def _base_folder() -> tuple[Path, dict[str, Any]]:
    root = Path(tempfile.mkdtemp(prefix="archive-fuzz-"))
    atexit.register(shutil.rmtree, root, True)
    store = ArchiveStore(root / "base")
    store.save(Conversation(conversation(3)))
    doc = json.loads((root / "base" / "conversation.json").read_bytes())
    return root, doc


_ROOT, _BASE = _base_folder()
_FIXTURE_DOC = json.loads(FIXTURE.read_bytes())
_BASE_PATHS = _paths(_BASE)
_FIXTURE_PATHS = _paths(_FIXTURE_DOC)


def _set(doc: Any, path: tuple, value: Any, how: str) -> Any:
    if not path:
        return value if how == "replace" else doc
    target = doc
    for key in path[:-1]:
        target = target[key]
    last = path[-1]
    if how == "replace":
        target[last] = value
    elif how == "delete":
        del target[last]
    elif how == "add" and isinstance(target[last], dict):
        target[last]["unknownField" + str(len(target[last]))] = value
    return doc


def _serialize(doc: Any, deep: int, raw: str) -> bytes:
    text = json.dumps(doc, ensure_ascii=False)
    text = text.replace(json.dumps(_DEEP), "[" * deep + "]" * deep)
    text = text.replace(json.dumps(_RAW), raw)
    return text.encode("utf-8", "surrogatepass")


@st.composite
def mutated_files(draw: st.DrawFn) -> bytes:
    """A mutated archive file; choices come from one drawn ``Random`` to keep drawing cheap."""
    rnd = draw(st.randoms(use_true_random=False))
    use_fixture = rnd.random() < 0.5
    doc = json.loads(json.dumps(_FIXTURE_DOC if use_fixture else _BASE))
    paths = _FIXTURE_PATHS if use_fixture else _BASE_PATHS
    for _ in range(rnd.randint(1, 3)):
        path = rnd.choice(paths)
        how = rnd.choice(["replace", "replace", "delete", "add"])
        value = rnd.choice(_VALUES) if rnd.random() < 0.9 else rnd.choice(["x", "é", "\u0000"])
        try:
            doc = _set(doc, path, copy.deepcopy(value), how)
        except (KeyError, IndexError, TypeError):
            pass  # an earlier mutation removed the path
    deep = rnd.choice([1, 50, 199, 200, 201, 1000, 100_000])
    raw = rnd.choice(["1e999", "-1e999", "9" * 5000, "1" * 300, "0.1e-400", "1.5"])
    data = _serialize(doc, deep, raw)
    byte_op = rnd.choice(["none", "none", "none", "none", "truncate", "insert", "flip"])
    if byte_op == "truncate":
        data = data[: rnd.randint(0, len(data))]
    elif byte_op in ("insert", "flip"):
        at = rnd.randint(0, max(0, len(data) - 1))
        junk = rnd.choice([b"\xff", b"\xfe\xff", b"\x80", b"\xc3", b"\x00", b"}", b'"'])
        data = data[:at] + junk + data[at + (byte_op == "flip") :]
    return data


def _state_of(folder: Path) -> tuple:
    """conversation.json's bytes and every other entry's name, size and mtime."""
    entries = []
    for root, dirs, files in os.walk(folder):
        for name in sorted(dirs + files):
            info = os.lstat(os.path.join(root, name))
            entries.append((root, name, info.st_size, info.st_mtime_ns))
    return (folder / "conversation.json").read_bytes(), entries


@settings(
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(mutated_files())
def test_mutated_files_open_with_at_most_one_notice_and_change_nothing(data):
    folder = _ROOT / "case"
    if not folder.exists():
        shutil.copytree(_ROOT / "base", folder)
    target = folder / "conversation.json"
    target.unlink()  # a fresh file: rewriting in place makes ext4 flush at close (auto_da_alloc)
    target.write_bytes(data)
    before = _state_of(folder)
    started = time.perf_counter()
    try:
        decode(data)
    except ArchiveReadError as exc:
        assert exc.location is not None and exc.location.startswith("$")
    fs = CountingFS()
    conv = ArchiveStore(folder, fs=fs).open()
    assert time.perf_counter() - started < 5
    assert len(conv.notices) <= 1
    assert conv.keeps_unreadable == bool(conv.notices)
    assert fs.calls == []
    assert _state_of(folder) == before
    # A save of the untouched conversation keeps an unreadable folder byte-for-byte.
    if conv.notices:
        ArchiveStore(folder).save(conv)
        assert _state_of(folder) == before
