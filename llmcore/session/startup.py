"""Finding the previous session at start-up (SPEC S2, S6, "Two terminals", "Bad files").

Each terminal process has its own pointer ``active_<pid>.json``. At start-up the candidates
are, in order: this process's own pointer (a process that starts twice under the same pid), then
the pointers of processes that are no longer running (the terminals that exited); pointers of
running processes belong to other terminals and are left alone, so two terminals never take
each other's session. Of the readable candidates, the one saved last is offered.

Every problem is one line through ``say`` and the file is left as it is: a pointer naming
something that is not a session id (``../x``) is refused before any path is built; a corrupt,
too deeply nested or newer-schema session file or pointer is reported and kept byte-for-byte;
a pointer to a missing file is ignored; ``active_….json`` files whose name is not a pointer's
(``active_².json``, a pid beyond :data:`~llmcore.session.store.PID_MAX`) are named in one line
and never read; a ``sessions`` folder that is a symlink is refused in one line. The agent
always starts — with a new session when nothing is offered.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from llmcore._words import plural
from llmcore.errors import SessionError

from .store import Loaded, SessionStore, shown_name

__all__ = ["Found", "find_previous", "process_alive"]


def process_alive(pid: int) -> bool:
    """Return whether process ``pid`` is running (signal 0); pids ≤ 0 count as gone."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OSError, OverflowError):  # OverflowError: beyond the platform's pid_t
        return False
    return True


@dataclass(frozen=True, slots=True, kw_only=True)
class Found:
    """The session offered for resuming."""

    loaded: Loaded
    """Its file's content and base."""
    pointer_pid: int
    """The pid whose pointer named it (taken over on resume if it is another process's)."""


def find_previous(
    store: SessionStore,
    pid: int,
    *,
    alive: Callable[[int], bool] = process_alive,
    say: Callable[[str], None],
) -> Found | None:
    """Return the session to offer, or ``None`` (see the module doc)."""
    try:
        scan = store.pointer_scan()
    except SessionError as exc:
        say(f"Ignored the saved sessions: {exc}")
        return None
    except OSError as exc:
        say(f"Ignored the saved sessions: {store.paths.sessions}: {exc.strerror}")
        return None
    if scan.refused:
        names = ", ".join(shown_name(name) for name in scan.refused[:3])
        more = f" and {len(scan.refused) - 3} more" if len(scan.refused) > 3 else ""
        say(
            f"Ignored {plural(len(scan.refused), 'file')} in {store.paths.sessions} that are not "
            f"pointers (active_<pid>.json): {names}{more}"
        )
    others = [p for p in scan.pids if p != pid and not alive(p)]
    candidates = [pid, *others]
    best: Found | None = None
    for candidate in candidates:
        try:
            session_id = store.read_pointer(candidate)
            loaded = None if session_id is None else store.load(session_id)
        except SessionError as exc:
            say(f"Ignored a saved session: {exc}")
            continue
        if loaded is None:
            continue
        if best is None or loaded.record.updated_at > best.loaded.record.updated_at:
            best = Found(loaded=loaded, pointer_pid=candidate)
    return best
