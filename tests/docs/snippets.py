"""Code blocks of README.md and docs/: extraction and the rules the docs follow.

A fenced block whose info string is ``python``, ``sh``, ``bash``, ``shell`` or ``console`` is a
*runnable* block. Two HTML comments, alone on the last non-blank line before the fence, change
how it runs:

- ``<!-- not-run: REASON -->``: the block is not run (it installs packages, needs a live API
  key, reads a terminal, or is an excerpt); the reason is required.
- ``<!-- continues -->``: the block runs after the runnable block before it in the same file
  (and the blocks that one continues), in the same folder; a Python block that continues a
  Python block runs in the same interpreter, after it (it may use its names).

Everything else is run: Python blocks by the test's interpreter, shell blocks by bash with
``-e`` and ``-o pipefail``, each unit in a fresh temporary folder that links the repository's
``cassettes``, ``docs`` and ``examples``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNNABLE = {"python": "python", "py": "python", "sh": "sh", "bash": "sh", "shell": "sh"}
CONSOLE = "console"
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>```+|~~~+)\s*(?P<info>[^\s`]*)")
_NOT_RUN = re.compile(r"^<!--\s*not-run\s*(?::\s*(?P<reason>.*?))?\s*-->$")
_CONTINUES = re.compile(r"^<!--\s*continues\s*-->$")


@dataclass(frozen=True)
class Block:
    """One fenced code block."""

    path: Path
    line: int
    """1-based line of the opening fence."""
    language: str
    """``python``, ``sh`` or another info string as written."""
    code: str
    not_run: str | None = None
    """The reason given in a ``not-run`` comment; ``""`` when the comment has none."""
    continues: bool = False

    @property
    def name(self) -> str:
        """``docs/guides/archive.md:42``."""
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def runnable(self) -> bool:
        """Whether the block is of a language the test runs and is not marked not-run."""
        return self.kind is not None and self.not_run is None

    @property
    def kind(self) -> str | None:
        """``python`` or ``sh`` for blocks the test can run, else ``None``."""
        if self.language == CONSOLE:
            return "sh"
        return RUNNABLE.get(self.language)

    @property
    def script(self) -> str:
        """The code to run: for a console block, its ``$ `` lines."""
        if self.language != CONSOLE:
            return self.code
        return "\n".join(line[2:] for line in self.code.splitlines() if line.startswith("$ "))


def doc_files() -> list[Path]:
    """README.md and every Markdown file under docs/, sorted."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(path: Path) -> list[Block]:
    """Return the fenced blocks of ``path`` in order, with their markers."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if match is None:
            index += 1
            continue
        fence, start = match.group("fence"), index
        end = start + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        marker = _marker(lines, start)
        not_run = _NOT_RUN.match(marker)
        out.append(
            Block(
                path=path,
                line=start + 1,
                language=match.group("info").lower(),
                code="\n".join(lines[start + 1 : end]) + "\n",
                not_run=None if not_run is None else (not_run.group("reason") or ""),
                continues=_CONTINUES.match(marker) is not None,
            )
        )
        index = end + 1
    return out


def _marker(lines: list[str], fence: int) -> str:
    """The last non-blank line before the fence, stripped."""
    for line in reversed(lines[:fence]):
        if line.strip():
            return line.strip()
    return ""


def units() -> list[list[Block]]:
    """Runnable blocks grouped into units: a block and the ``continues`` blocks after it.

    A unit whose code is the same as an earlier one's (README.md repeats blocks of the guides)
    is run once.
    """
    out: list[list[Block]] = []
    seen: set[tuple[tuple[str | None, str], ...]] = set()
    for unit in _all_units():
        key = tuple((block.kind, block.code) for block in unit)
        if key not in seen:
            seen.add(key)
            out.append(unit)
    return out


def _all_units() -> list[list[Block]]:
    out: list[list[Block]] = []
    for path in doc_files():
        current: list[Block] = []
        for block in blocks(path):
            if not block.runnable:
                continue
            if block.continues and current:
                current.append(block)
                continue
            if current:
                out.append(current)
            current = [block]
        if current:
            out.append(current)
    return out


def steps(unit: list[Block]) -> list[Block]:
    """The unit's blocks as run: consecutive Python blocks joined into one script."""
    out: list[Block] = []
    for block in unit:
        if out and block.kind == "python" and out[-1].kind == "python":
            last = out[-1]
            out[-1] = Block(
                path=last.path, line=last.line, language="python", code=last.code + block.code
            )
        else:
            out.append(block)
    return out
