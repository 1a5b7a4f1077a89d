"""Mutated ``conversation.json`` files for the archive fuzz test and the reliability harness.

:class:`Mutator` turns a valid archive document into a damaged one: values replaced by others of
every JSON type (and by path tricks, lone surrogates, deep nesting, huge numbers), keys deleted,
unknown keys added, a key duplicated, bytes truncated, inserted or flipped.
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

_DEEP = "__DEEP_NESTING__"
_RAW = "__RAW_NUMBER__"
_DUP = "__DUPLICATE_KEY__"

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
    elif how == "duplicate" and isinstance(target[last], dict) and target[last]:
        key = next(iter(target[last]))
        target[last][_DUP] = copy.deepcopy(target[last][key])
        target[last][_DUP + "name"] = key
    return doc


def _serialize(doc: Any, deep: int, raw: str) -> bytes:
    text = json.dumps(doc, ensure_ascii=False)
    text = text.replace(json.dumps(_DEEP), "[" * deep + "]" * deep)
    text = text.replace(json.dumps(_RAW), raw)
    while json.dumps(_DUP + "name") in text:  # the duplicate takes the first key's name
        head, _, tail = text.partition(json.dumps(_DUP + "name") + ": ")
        name, end = json.JSONDecoder().raw_decode(tail)
        text = head.replace(json.dumps(_DUP), json.dumps(name), 1) + tail[end:]
        text = text.replace(", }", "}")
    return text.encode("utf-8", "surrogatepass")


class Mutator:
    """Damages copies of valid archive documents.

    Args:
        docs: Parsed ``conversation.json`` documents to start from.
    """

    def __init__(self, *docs: Any) -> None:
        self.docs = [(doc, _paths(doc)) for doc in docs]

    def mutate(self, rnd: random.Random) -> bytes:
        """Return the bytes of one damaged file; every choice comes from ``rnd``."""
        base, paths = rnd.choice(self.docs)
        doc = json.loads(json.dumps(base))
        for _ in range(rnd.randint(1, 3)):
            path = rnd.choice(paths)
            how = rnd.choice(["replace", "replace", "delete", "add", "duplicate"])
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
