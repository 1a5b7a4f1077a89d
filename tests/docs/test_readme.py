"""README.md is a landing page (issue 22): short, the set-up commands first, a library example early.

The example itself runs in ``test_snippets.py``; here its place, the page's length and its links.
"""

from __future__ import annotations

import re

from tests.docs.snippets import ROOT, blocks

README = ROOT / "README.md"
MAX_LINES = 150
EXAMPLE_BY_LINE = 40
SETUP = (
    "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[all]' && llmcore bench\n"
    ". .venv/bin/activate && pip install -e '.[dev]' && python -m pytest -n 2 -q\n"
)
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_readme_is_at_most_150_lines() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines; move detail into docs/"


def test_readme_starts_with_the_two_setup_commands() -> None:
    first = blocks(README)[0]
    assert first.language == "sh" and first.code == SETUP


def test_a_runnable_library_example_within_the_first_40_lines() -> None:
    python = [b for b in blocks(README) if b.kind == "python" and b.runnable]
    assert python, "README.md has no runnable Python block"
    example = python[0]
    assert example.line <= EXAMPLE_BY_LINE, (
        f"the first Python example starts at line {example.line}"
    )
    assert "import llmcore" in example.code or "from llmcore" in example.code
    assert 10 <= len(example.code.splitlines()) <= 25


def test_every_relative_link_of_the_readme_names_a_file_that_exists() -> None:
    targets = _LINK.findall(README.read_text(encoding="utf-8"))
    relative = [t for t in targets if "://" not in t and not t.startswith("#")]
    assert "docs/quickstart.md" in relative and "docs/design.md" in relative
    assert "benchmarks/bench_peers.png" in relative
    missing = [t for t in relative if not (ROOT / t.split("#", 1)[0]).is_file()]
    assert not missing, missing


def test_the_readme_links_every_guide() -> None:
    text = README.read_text(encoding="utf-8")
    guides = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs" / "guides").glob("*.md"))
    unlinked = [g for g in guides if f"]({g}" not in text]
    assert not unlinked, unlinked
