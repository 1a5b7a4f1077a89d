"""The resume-context block injected into the system prompt (SPEC S3).

Built once, when a session is resumed, from the saved record and the drift found then; the
session keeps the string and returns it unchanged for the rest of the run, so the system
prompt is byte-identical from the first request after the resume on (the prompt cache misses
once, at the resume, then hits). After ``/reset`` it is the empty string.

The block, as the seed document shows it::

    # Resumed Session Context
    This is a resumed session (ID: a1b2c3d4e5f6).
    Originally started: 2026-03-30 10:15 UTC
    Last active: 2026-03-31 14:22 UTC

    Agent specification file: agent_spec.md

    ## Previous Session Summary
    …

    ## Key Decisions Made
    - …

    ## File Changes Since Last Session
    - agent_spec.md: modified

    IMPORTANT: You are resuming a previous session. Review the context above
    before proceeding. If the user's request seems to continue prior work,
    use this context. If they start a new topic, proceed normally.

Where the record has nothing to say: no spec file → the line is left out; no summary →
``No summary was recorded.``; no decisions → ``- None recorded``; no tracked files →
``- No tracked files``. The file-change list starts with the unchanged count
(``- 1 tracked file unchanged``) when there is one.
"""

from __future__ import annotations

from typing import Final

from .drift import Drift
from .record import SessionRecord, parse_time

__all__ = ["CLOSING", "HEADING", "build_resume_block", "display_time"]

HEADING: Final = "# Resumed Session Context"
"""The block's first line."""
CLOSING: Final = (
    "IMPORTANT: You are resuming a previous session. Review the context above\n"
    "before proceeding. If the user's request seems to continue prior work,\n"
    "use this context. If they start a new topic, proceed normally."
)
"""The closing instruction, line breaks as in the seed."""


def display_time(stamp: str) -> str:
    """Return a stored timestamp as ``YYYY-MM-DD HH:MM UTC``."""
    return parse_time(stamp).strftime("%Y-%m-%d %H:%M UTC")


def build_resume_block(record: SessionRecord, drift: Drift) -> str:
    """Return the resume-context block for ``record`` with the ``drift`` found at resume."""
    lines = [
        HEADING,
        f"This is a resumed session (ID: {record.session_id}).",
        f"Originally started: {display_time(record.created_at)}",
        f"Last active: {display_time(record.updated_at)}",
        "",
    ]
    if record.agent_spec_path:
        lines += [f"Agent specification file: {record.agent_spec_path}", ""]
    lines += ["## Previous Session Summary", record.summary or "No summary was recorded.", ""]
    lines += ["## Key Decisions Made"]
    lines += [f"- {d}" for d in record.decisions] or ["- None recorded"]
    lines += ["", "## File Changes Since Last Session"]
    lines += [f"- {line}" for line in drift.lines()] or ["- No tracked files"]
    lines += ["", CLOSING]
    return "\n".join(lines)
