"""The terminal agent behind ``llmcore chat`` (SPEC R2, S1–S6).

:mod:`.tools` holds the workspace tools (list, read, write and view files inside the
workspace only); :mod:`.agent` the loop (turns, slash commands, status line); :mod:`.stream`
the streamed text. The terminal — line editing, the embedded emulator, the resume question —
is :mod:`llmcore.cli.chat`.
"""

from __future__ import annotations

from .agent import HELP, SYSTEM_PROMPT, Chat, Display, Echo, status_line
from .stream import Tapped, text_delta
from .tools import MAX_LISTED, MAX_READ, WorkspaceTools

__all__ = [
    "HELP",
    "MAX_LISTED",
    "MAX_READ",
    "SYSTEM_PROMPT",
    "Chat",
    "Display",
    "Echo",
    "Tapped",
    "WorkspaceTools",
    "status_line",
    "text_delta",
]
