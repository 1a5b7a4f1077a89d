"""The emulator is an oracle of its own (SPEC V4): it reads wire bodies and counts tokens itself.

No module of ``llmcore.emulator`` imports the provider modules it checks nor the auditor's
token count (``llmcore.tokens``, which the auditor uses), so one estimate's error cannot hide
itself on both sides of ``llmcore bench``'s comparison.
"""

from __future__ import annotations

import ast
from pathlib import Path

import llmcore.emulator

FORBIDDEN = ("llmcore.providers", "llmcore.tokens", "llmcore.audit")


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_no_emulator_module_imports_the_providers_the_auditor_or_its_token_count() -> None:
    folder = Path(llmcore.emulator.__file__).parent
    modules = sorted(folder.glob("*.py"))
    assert len(modules) > 15
    offending = {
        path.name: sorted(
            name
            for name in _imports(path)
            if name.startswith(FORBIDDEN) or name == "llmcore.tokens"
        )
        for path in modules
    }
    assert {name: found for name, found in offending.items() if found} == {}
