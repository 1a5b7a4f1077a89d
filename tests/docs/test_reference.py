"""The API reference (docs/reference/) renders every public name (issue 22).

mkdocstrings renders a module's ``__all__``; these tests check that each public module is on a
reference page, so a new public name is documented from its docstring without a docs change.
"""

from __future__ import annotations

import importlib
import pkgutil
import re

import llmcore
from tests.docs.snippets import ROOT

_DIRECTIVE = re.compile(r"^::: (\S+)", re.MULTILINE)


def rendered() -> set[str]:
    """The dotted names the reference pages render with ``::: name``."""
    names: set[str] = set()
    for page in (ROOT / "docs" / "reference").glob("*.md"):
        names.update(_DIRECTIVE.findall(page.read_text(encoding="utf-8")))
    return names


def public_packages() -> list[str]:
    """Every llmcore subpackage (a folder with ``__init__.py``) that declares ``__all__``."""
    out = []
    for info in pkgutil.iter_modules(llmcore.__path__, "llmcore."):
        if info.ispkg and not info.name.rsplit(".", 1)[1].startswith("_"):
            module = importlib.import_module(info.name)
            if hasattr(module, "__all__") and info.name != "llmcore.cli":
                out.append(info.name)
    return sorted(out)


def test_the_top_level_names_are_rendered() -> None:
    assert "llmcore" in rendered()


def test_every_home_of_a_top_level_name_is_rendered() -> None:
    homes = set(llmcore._HOMES.values())
    assert homes <= rendered(), sorted(homes - rendered())


def test_every_public_subpackage_is_rendered() -> None:
    packages = public_packages()
    assert "llmcore.archive" in packages and "llmcore.audit" in packages
    assert set(packages) <= rendered(), sorted(set(packages) - rendered())
