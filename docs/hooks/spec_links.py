"""MkDocs hook: every ``SPEC A12`` citation on a page becomes a link to its design anchor.

Docstrings and error messages cite requirements as ``SPEC A12``, ``SPEC S1–S6`` or
``SPEC A3, A5``; mkdocstrings renders them as plain text. :func:`on_page_content` rewrites each
id after ``SPEC`` (and each further id of its range or list) into
``<a href="…/design/#a12">A12</a>``, relative to the page, outside ``<a>``, ``<pre>`` and
heading elements. The ids are those the design page has anchors for (``{#a12}``); an id it
lacks is left as text (``tests/docs/test_design_ids.py`` fails on it first).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Final

_ID: Final = r"[MPUAFCBSVR]\d{1,2}"
_SEP: Final = r"(?:\s*[–-]\s*|,\s*|\s+and\s+|\s+or\s+)"
CITATION: Final = re.compile(rf"\bSPEC(?:\s|&nbsp;)+{_ID}(?:{_SEP}{_ID})*\b")
"""``SPEC`` followed by one id, or a range or list of them."""
_ONE: Final = re.compile(rf"\b{_ID}\b")
_TAG: Final = re.compile(r"(<[^>]*>)")
_SKIP: Final = ("a", "pre", "h1", "h2", "h3", "h4", "h5", "h6", "script", "style")
_ANCHOR: Final = re.compile(r"\{#([a-z]\d{1,2})\}")
_DESIGN: Final = "design.md"


def anchors(design: Path) -> frozenset[str]:
    """Return the ids ``design`` has anchors for, upper case (``A12``)."""
    return frozenset(a.upper() for a in _ANCHOR.findall(design.read_text(encoding="utf-8")))


def link_citations(html: str, href: str, known: frozenset[str]) -> str:
    """Return ``html`` with each cited id in text turned into ``<a href="{href}#id">``.

    Args:
        html: A rendered page (or part of one).
        href: The design page's URL relative to the page (``../design/``).
        known: The ids that have an anchor; others stay text.
    """

    def one(match: re.Match[str]) -> str:
        ident = match.group(0)
        if ident not in known:
            return ident
        return f'<a class="spec-link" href="{href}#{ident.lower()}">{ident}</a>'

    def citation(match: re.Match[str]) -> str:
        return _ONE.sub(one, match.group(0))

    out: list[str] = []
    depth: dict[str, int] = dict.fromkeys(_SKIP, 0)
    for piece in _TAG.split(html):
        if piece.startswith("<"):
            name = piece.strip("</>").split(None, 1)[0].lower() if piece.strip("</>") else ""
            if name in depth and not piece.endswith("/>"):
                depth[name] += -1 if piece.startswith("</") else 1
            out.append(piece)
        elif any(count > 0 for count in depth.values()):
            out.append(piece)
        else:
            out.append(CITATION.sub(citation, piece))
    return "".join(out)


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    """MkDocs event: link the citations of every page but the design page itself."""
    from mkdocs.utils import get_relative_url

    if page.file.src_uri == _DESIGN:
        return html
    design = files.get_file_from_path(_DESIGN)
    if design is None:
        return html
    known = anchors(Path(config["docs_dir"]) / _DESIGN)
    href = get_relative_url(design.url, page.url)
    return link_citations(html, href, known)
