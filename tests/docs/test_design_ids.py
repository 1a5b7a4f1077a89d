"""Every requirement id cited in llmcore/, README.md and docs/ has its anchor in docs/design.md.

Docstrings and messages cite ids as ``SPEC A12``, ``(A6)``, ``M4`` or ranges ``S1–S6``; the
design page gives each one a heading ``### A12: … {#a12}``, so ``design.md#a12`` is a link.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs.snippets import ROOT, doc_files

DESIGN = ROOT / "docs" / "design.md"
GROUPS = "MPUAFCBSVR"
_ID = rf"[{GROUPS}]\d{{1,2}}"
_RANGE = re.compile(rf"\b({_ID})\s*[–-]\s*({_ID})\b")
_CITED = re.compile(rf"\b({_ID})\b(?!\s+control)")
"""An id; ``C0 controls`` (the C0 control characters) is not one."""
_ANCHOR = re.compile(r"\{#([a-z]\d{1,2})\}")


def anchors() -> set[str]:
    """The ids the design page has anchors for, upper case."""
    return {a.upper() for a in _ANCHOR.findall(DESIGN.read_text(encoding="utf-8"))}


def cited(text: str) -> set[str]:
    """Every id ``text`` cites, ranges expanded (``S1–S3`` → S1, S2, S3)."""
    found = set(_CITED.findall(text))
    for first, last in _RANGE.findall(text):
        if first[0] == last[0]:
            found.update(f"{first[0]}{n}" for n in range(int(first[1:]), int(last[1:]) + 1))
    return found


def sources() -> list[Path]:
    """The files scanned: the package's Python files and the documentation."""
    return [*sorted((ROOT / "llmcore").rglob("*.py")), *doc_files()]


def test_cited_parses_the_forms_in_use() -> None:
    assert cited("SPEC A12; see (A6) and M4, S1–S3, C1-C2") == {
        "A12",
        "A6",
        "M4",
        "S1",
        "S2",
        "S3",
        "C1",
        "C2",
    }
    assert cited("the C0 controls") == set()


def test_the_design_page_has_every_requirement() -> None:
    expected = {
        *(f"M{n}" for n in range(1, 6)),
        *(f"P{n}" for n in range(1, 9)),
        *(f"U{n}" for n in range(1, 4)),
        *(f"A{n}" for n in range(1, 13)),
        "F1",
        *(f"C{n}" for n in range(1, 5)),
        "B1",
        *(f"S{n}" for n in range(1, 7)),
        *(f"V{n}" for n in range(1, 8)),
        "R1",
        "R2",
    }
    assert anchors() == expected


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_cited_id_has_an_anchor(path: Path) -> None:
    missing = sorted(cited(path.read_text(encoding="utf-8")) - anchors())
    assert not missing, f"{path.relative_to(ROOT)} cites {missing}, which docs/design.md lacks"
