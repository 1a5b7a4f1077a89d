"""The API reference turns every ``SPEC X`` citation into a link to docs/design.md (issue 22).

mkdocs.yml runs the hook ``docs/hooks/spec_links.py`` on each rendered page; these tests run
its rewrite on rendered-like HTML and on every citation in the package's docstrings and error
messages, so each one becomes a link whose anchor the design page has.
"""

from __future__ import annotations

import importlib.util
import re
from types import ModuleType

from tests.docs.snippets import ROOT
from tests.docs.test_design_ids import DESIGN, anchors, cited


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("spec_links", ROOT / "docs/hooks/spec_links.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOOK = _hook()
KNOWN = HOOK.anchors(DESIGN)
_LINK = re.compile(r'<a class="spec-link" href="\.\./design/#([a-z]\d{1,2})">([A-Z]\d{1,2})</a>')


def test_the_hook_is_configured() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "hooks:\n  - docs/hooks/spec_links.py" in config


def test_single_ids_ranges_and_lists_become_links() -> None:
    html = "<p>Byte-exact (SPEC A12); sessions SPEC S1–S3 and SPEC A3, A5.</p>"
    out = HOOK.link_citations(html, "../design/", KNOWN)
    assert _LINK.findall(out) == [
        ("a12", "A12"), ("s1", "S1"), ("s3", "S3"), ("a3", "A3"), ("a5", "A5"),
    ]  # fmt: skip
    assert out.startswith("<p>Byte-exact (SPEC <a ")


def test_code_spans_are_linked_but_links_pre_and_headings_are_not() -> None:
    html = (
        '<p><code>SPEC M4</code></p><a href="x">SPEC M4</a><pre>SPEC M4</pre>'
        "<h2>SPEC M4</h2><p>SPEC Z9 and SPEC M99</p>"
    )
    out = HOOK.link_citations(html, "../design/", KNOWN)
    assert _LINK.findall(out) == [("m4", "M4")]
    assert '<a href="x">SPEC M4</a><pre>SPEC M4</pre><h2>SPEC M4</h2>' in out
    assert out.endswith("<p>SPEC Z9 and SPEC M99</p>")


def test_every_citation_in_the_package_becomes_a_link_to_an_existing_anchor() -> None:
    count = 0
    for path in sorted((ROOT / "llmcore").rglob("*.py")):
        for match in HOOK.CITATION.finditer(path.read_text(encoding="utf-8")):
            text = match.group(0)
            linked = {ident for anchor, ident in _LINK.findall(HOOK.link_citations(
                f"<p>{text}</p>", "../design/", KNOWN)) if anchor == ident.lower()}  # fmt: skip
            ends = set(re.findall(r"[A-Z]\d{1,2}", text[4:]))
            assert linked == ends, f"{path.relative_to(ROOT)}: {text!r} links {sorted(linked)}"
            assert linked <= anchors() and cited(text) <= anchors()
            count += 1
    assert count > 100  # the package cites requirements throughout
