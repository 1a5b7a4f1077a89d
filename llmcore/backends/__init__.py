"""CLI backends (SPEC B1): Claude Code and Codex CLI driven as subprocesses.

A backend runs one turn per :meth:`~llmcore.backends.base.CLIBackend.run_turn`: it starts the
program (``claude -p --output-format stream-json --verbose``; ``codex exec --json``), resumes
the program's own session on later turns, parses its event stream into panel items and usage,
and records them in a :class:`llmcore.archive.Conversation` (saved like any conversation).
After a reopen, the first turn starts a new session with a ``# Conversation so far`` preamble.

Typed errors: :class:`~llmcore.errors.BackendNotFoundError`,
:class:`~llmcore.errors.BackendExitError`, :class:`~llmcore.errors.BackendStreamError`.
"""

from __future__ import annotations

from llmcore.backends.base import (
    PREAMBLE_CHARS,
    PREAMBLE_HEADING,
    CLIBackend,
    TurnResult,
    preamble,
    transcript,
)
from llmcore.backends.claude_code import CLAUDE_ENV_VAR, ClaudeCodeBackend
from llmcore.backends.codex import CODEX_ENV_VAR, CodexBackend

__all__ = [
    "CLAUDE_ENV_VAR",
    "CODEX_ENV_VAR",
    "PREAMBLE_CHARS",
    "PREAMBLE_HEADING",
    "CLIBackend",
    "ClaudeCodeBackend",
    "CodexBackend",
    "TurnResult",
    "preamble",
    "transcript",
]
