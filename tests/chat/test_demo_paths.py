"""The file names the chat demo model recognizes in the user's line (``llmcore.chat.demo``).

A name with an extension is a file whatever the length of its stem (``a.txt`` as well as
``notes.txt``), alone or in a path; abbreviations (``e.g.``) and numbers (``3.5``) are not.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore import jsonbytes
from llmcore.chat.demo import DEMO_SCRIPT
from tests.examples import examples


def _first_calls(line: str) -> list[tuple[str, dict[str, str]]]:
    """The tool calls of the demo's first move on ``line`` (an Anthropic Messages request)."""
    body = {"tools": [{}], "messages": [{"role": "user", "content": line}]}
    reply = DEMO_SCRIPT.reply_to("anthropic", body, line, 0)
    return [(call.name, jsonbytes.loads(call.arguments)) for call in reply.tool_calls]


@pytest.mark.parametrize(
    ("named", "path"),
    [
        ("a.txt", "a.txt"),
        ("b.md", "b.md"),
        ("./a.txt", "a.txt"),
        ("dir/b.txt", "dir/b.txt"),
        ("notes.txt", "notes.txt"),
        ("x.c", "x.c"),
        ("a.7z", "a.7z"),
    ],
)
def test_a_named_file_is_read_and_written_whatever_its_stem(named: str, path: str) -> None:
    assert _first_calls(f"read {named}") == [("read_file", {"path": path})]
    assert _first_calls(f"please look at {named}.") == [("read_file", {"path": path})]
    assert _first_calls(f"write {named}: x") == [("write_file", {"path": named, "content": "x\n"})]


def test_several_short_names_are_read_in_one_round() -> None:
    assert _first_calls("compare a.txt, b.md and dir/c.py") == [
        ("read_file", {"path": "a.txt"}),
        ("read_file", {"path": "b.md"}),
        ("read_file", {"path": "dir/c.py"}),
    ]


@pytest.mark.parametrize(
    "line",
    [
        "list the files, e.g. the big ones",
        "i.e. what is here",
        "python 3.5 or 2.0?",
        "U.S.A. ok",
        "see you at 9 a.m. then",
    ],
)
def test_abbreviations_and_numbers_are_not_file_names(line: str) -> None:
    assert _first_calls(line) == [("list_files", {})]


_STEM = st.text("abcxyzAZ019_-", min_size=1, max_size=6).filter(lambda s: s[-1].isalnum())
_EXTENSION = st.text("abcmdtxyzPY0123", min_size=1, max_size=5).filter(
    lambda s: any(c.isalpha() for c in s)
)


@pytest.mark.full_count
@settings(max_examples=examples(full=2000, sample=300))
@given(
    folders=st.lists(st.text("abcz09_", min_size=1, max_size=4), max_size=2),
    stem=_STEM,
    extension=_EXTENSION,
)
def test_every_name_with_an_extension_is_recognized(
    folders: list[str], stem: str, extension: str
) -> None:
    path = "/".join([*folders, f"{stem}.{extension}"])
    assert _first_calls(f"read {path}") == [("read_file", {"path": path})]
    assert _first_calls(f"write {path}: text") == [
        ("write_file", {"path": path, "content": "text\n"})
    ]
