"""The terminal agent behind ``llmcore chat`` (SPEC R2, S1–S6).

:mod:`.tools` holds the workspace tools (list, read, write and view files inside the
workspace only); :mod:`.agent` the loop (turns, slash commands, status line); :mod:`.stream`
the streamed text; :mod:`.prompt` the system prompt; :mod:`.demo` the model the embedded
emulator answers with (it reads what the user typed and the files the user names). The
terminal — line editing, the embedded emulator, the resume question — is
:mod:`llmcore.cli.chat`.
"""

from __future__ import annotations

from .agent import HELP, SYSTEM_PROMPT, Chat, Display, Echo, status_line
from .demo import DEMO_SCRIPT, DemoScript
from .stream import Tapped, text_delta
from .tools import MAX_LISTED, MAX_READ, WorkspaceTools

__all__ = [
    "DEMO_SCRIPT",
    "HELP",
    "MAX_LISTED",
    "MAX_READ",
    "SYSTEM_PROMPT",
    "Chat",
    "DemoScript",
    "Display",
    "Echo",
    "Tapped",
    "WorkspaceTools",
    "status_line",
    "text_delta",
]
