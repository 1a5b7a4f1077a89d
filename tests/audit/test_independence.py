"""SPEC V4: the auditor reads wire bodies on its own; it imports no provider or model code."""

from __future__ import annotations

import ast
from pathlib import Path

import llmcore.audit

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = {
    "llmcore.jsonbytes",
    "llmcore.tokens",
    "llmcore.errors",
    "llmcore._lazy",
    "llmcore._words",
}


def _llmcore_imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("llmcore"):
            if node.module == "llmcore":
                found.update(f"llmcore.{alias.name}" for alias in node.names)
            else:
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("llmcore"))
    return found


def test_auditor_imports_only_generic_helpers():
    files = sorted((ROOT / "llmcore" / "audit").glob("*.py")) + [
        ROOT / "llmcore" / "cli" / "audit.py"
    ]
    for path in files:
        foreign = {m for m in _llmcore_imports(path) if not m.startswith("llmcore.audit")} - ALLOWED
        assert not foreign, f"{path.name} imports {sorted(foreign)}"


def test_exported_names():
    assert len(set(llmcore.audit.__all__)) == len(llmcore.audit.__all__)
    for name in llmcore.audit.__all__:
        assert hasattr(llmcore.audit, name)
