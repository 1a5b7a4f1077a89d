"""Shared plumbing of the CLI backends (SPEC B1): subprocess, JSON-lines events, turn bookkeeping.

A CLI backend drives a coding agent's command-line program (Claude Code, Codex CLI) as a
subprocess, one process per turn. The program keeps the model history itself; llmcore keeps
only the panel: each turn appends a ``user`` item (the usual message, never the preamble),
the items parsed from the program's event stream, and one usage round, through
:meth:`llmcore.archive.Conversation.end_turn` — so the panel is saved like any conversation's.

**Resume and reopen.** Within one backend object the program's own session is resumed on later
turns (its id is kept in memory, :attr:`CLIBackend.session_id`). A conversation reopened from
disk cannot resume it: the first turn after a reopen starts a new session whose message is
:func:`preamble` + the usual message — ``# Conversation so far``, a newline, the last
:data:`PREAMBLE_CHARS` code points of the restored transcript (:func:`transcript`), a blank
line, then the message. The preamble goes only to the program's argument list.

**Failures.** A missing executable, a non-zero exit and a stream that ends before the turn's
final event each raise one :class:`~llmcore.errors.BackendError` subclass with a one-line
message; the turn is still recorded (the user item, whatever streamed, one ``failure`` item),
so the panel shows what happened.

This module leaves out each program's argument list and event shapes (``claude_code.py``,
``codex.py``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Final

from llmcore import jsonbytes
from llmcore.archive import Conversation
from llmcore.archive.state import Item
from llmcore.errors import (
    BackendError,
    BackendExitError,
    BackendNotFoundError,
    BackendStreamError,
)
from llmcore.usage import Cost, Usage

__all__ = [
    "PREAMBLE_CHARS",
    "PREAMBLE_HEADING",
    "STDERR_GRACE_SECONDS",
    "STDERR_TAIL_CHARS",
    "CLIBackend",
    "Event",
    "ParsedTurn",
    "TurnResult",
    "find_executable",
    "preamble",
    "run_events",
    "transcript",
]

PREAMBLE_CHARS: Final = 20_000
"""How many characters (Unicode code points) of the restored transcript the preamble keeps."""
PREAMBLE_HEADING: Final = "# Conversation so far"
"""The preamble's first line (SPEC B1)."""
STDERR_TAIL_CHARS: Final = 2_000
"""How much of the program's standard error a :class:`BackendExitError` keeps."""
STDERR_GRACE_SECONDS: Final = 5.0
"""How long to wait, after the program exited, for its standard error to end (a helper
process it started may keep the pipe open)."""

Event = dict[str, Any]
"""One parsed JSON line of a program's event stream."""


def transcript(items: Sequence[Item]) -> str:
    """Return the transcript text of panel items: their user and assistant texts, in order.

    Format: one paragraph per ``user`` or ``assistant`` item with a non-empty ``text`` field,
    ``User: <text>`` or ``Assistant: <text>``, paragraphs joined by a blank line. Other item
    types (tools, thinking, notices, failures, cards) are left out.

    Args:
        items: The panel items, oldest first.
    """
    labels = {"user": "User", "assistant": "Assistant"}
    parts: list[str] = []
    for item in items:
        if item.type not in labels:
            continue
        text = item.fields().get("text")
        if isinstance(text, str) and text:
            parts.append(f"{labels[item.type]}: {text}")
    return "\n\n".join(parts)


def preamble(restored_transcript: str) -> str:
    """Return the preamble put before the first message after a reopen (SPEC B1).

    ``# Conversation so far``, a newline, the last :data:`PREAMBLE_CHARS` code points of
    ``restored_transcript``, then a blank line; the usual message follows it.
    """
    return f"{PREAMBLE_HEADING}\n{restored_transcript[-PREAMBLE_CHARS:]}\n\n"


def find_executable(name: str, env_var: str, env: Mapping[str, str] | None = None) -> str:
    """Return the program to run: ``$env_var`` if set, else ``name`` on ``PATH``, else ``name``.

    A name that is nowhere is returned as is, so running it raises
    :class:`~llmcore.errors.BackendNotFoundError` with that name.
    """
    environ = os.environ if env is None else env
    configured = environ.get(env_var)
    if configured:
        return configured
    return shutil.which(name, path=environ.get("PATH")) or name


def _drain(stream: IO[bytes], sink: list[bytes]) -> None:
    """Collect ``stream`` into ``sink`` until its end, then close it (runs on a thread)."""
    try:
        for chunk in iter(lambda: stream.read(8192), b""):
            sink.append(chunk)
    except (OSError, ValueError):  # pragma: no cover - the pipe broke; keep what arrived
        pass
    finally:
        stream.close()


def _event(line: bytes) -> Event | None:
    try:
        value = jsonbytes.loads(line)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def run_events(
    argv: Sequence[str],
    *,
    provider: str,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    on_event: Callable[[Event], None] | None = None,
) -> tuple[list[Event], int, str]:
    """Run a program and collect the JSON objects it prints, one per line, as they come.

    Standard input is closed (``/dev/null``); standard error is collected on a thread. A line
    that is not a JSON object (a banner, a line cut by a crash) is skipped.

    Args:
        argv: The program and its arguments.
        provider: The backend's name, for errors.
        cwd: The working directory (default: the current one).
        env: The whole environment (default: the current one).
        on_event: Called with each event as it arrives (e.g. to show progress).

    Returns:
        (events in order, exit status — negative for a signal —, standard error text).

    Raises:
        BackendNotFoundError: The executable does not exist or cannot be run.
    """
    try:
        process = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=None if env is None else dict(env),
        )
    except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
        raise BackendNotFoundError(
            f"{provider}: cannot run {argv[0]!r}: {exc.strerror or exc}",
            provider=provider,
            executable=argv[0],
        ) from exc
    assert process.stdout is not None and process.stderr is not None
    errors: list[bytes] = []
    reader = threading.Thread(target=_drain, args=(process.stderr, errors), daemon=True)
    reader.start()
    events: list[Event] = []
    try:
        for line in process.stdout:
            event = _event(line)
            if event is None:
                continue
            events.append(event)
            if on_event is not None:
                on_event(event)
    except BaseException:  # on_event raised, or an interrupt: do not leave the program running
        process.kill()
        raise
    finally:
        process.stdout.close()
        status = process.wait()
    # a helper process the program started may hold stderr open: wait for it a little only
    reader.join(timeout=STDERR_GRACE_SECONDS)
    return events, status, b"".join(list(errors)).decode("utf-8", "replace")


def _tail(text: str) -> str:
    return text.strip()[-STDERR_TAIL_CHARS:]


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no output on stderr"


@dataclass(slots=True, kw_only=True)
class ParsedTurn:
    """What a program's event stream said about one turn (filled by the backend's parser)."""

    items: list[Item] = field(default_factory=list)
    """Panel items, in stream order (the user item is not among them)."""
    usage: Usage | None = None
    """The turn's usage summed over its requests, ``None`` if the final event is missing."""
    cost: Cost = field(default_factory=lambda: Cost(kind="unknown"))
    """The turn's cost."""
    session_id: str | None = None
    """The program's session (Claude Code) or thread (Codex) id, once the stream named it."""
    model: str = ""
    """The model the program used, when the stream names it."""
    finished: bool = False
    """Whether the turn's final event arrived."""
    error: str | None = None
    """The program's own error message for a failed turn."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnResult:
    """One finished turn of a CLI backend."""

    items: tuple[Item, ...]
    """The items the turn added, the ``user`` item first."""
    usage: Usage
    """The turn's usage (tokens; the program's sum over the turn's requests)."""
    cost: Cost
    """The turn's cost."""
    session_id: str | None
    """The session or thread id later turns resume."""
    sent: str
    """The message the program received (with the preamble on the first turn after a reopen)."""
    argv: tuple[str, ...]
    """The command line that ran."""


class CLIBackend(ABC):
    """A coding agent's CLI as a conversation backend (SPEC B1); one subprocess per turn.

    Args:
        conversation: The host conversation; each turn ends with
            :meth:`~llmcore.archive.Conversation.end_turn` (no history messages).
        restored: Whether ``conversation`` was reopened from disk. ``None`` (the default)
            decides from the conversation: it already has panel items. A restored
            conversation's first turn starts a new session with the :func:`preamble` built
            from the items it had here.
        executable: The program (default: :meth:`default_executable`).
        cwd: The program's working directory (default: the current one).
        env: Variables added to (or replacing) the current environment.
        model: The model to ask for (``None``: the program's default).
        extra_args: More arguments, put before the message.
        on_event: Called with each event as it arrives.
        new_id: Makes panel item ids (default: random UUID strings).
    """

    provider: str = ""
    """The backend's name, recorded as the conversation's provider."""

    def __init__(
        self,
        conversation: Conversation,
        *,
        restored: bool | None = None,
        executable: str | None = None,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        model: str | None = None,
        extra_args: Sequence[str] = (),
        on_event: Callable[[Event], None] | None = None,
        new_id: Callable[[], str] | None = None,
    ) -> None:
        self.conversation = conversation
        items = conversation.state.items
        self.restored = bool(items) if restored is None else restored
        self._restored_items = items if self.restored else ()
        self.env = {**os.environ, **(env or {})}
        self.executable = executable or self.default_executable(self.env)
        self.cwd = None if cwd is None else Path(cwd)
        self.model = model
        self.extra_args = tuple(extra_args)
        self.on_event = on_event
        self.new_id = new_id or (lambda: str(uuid.uuid4()))
        self.session_id: str | None = None
        """The session (thread) id later turns resume; ``None`` until a turn named one."""

    @classmethod
    @abstractmethod
    def default_executable(cls, env: Mapping[str, str]) -> str:
        """Return the program to run when none is given."""

    @abstractmethod
    def argv(self, message: str, resume: str | None) -> list[str]:
        """Return the command line for one turn sending ``message``, resuming ``resume``."""

    @abstractmethod
    def parse(self, events: Sequence[Event]) -> ParsedTurn:
        """Return what the turn's events say (items, usage, session id, end, error)."""

    def message_for(self, message: str) -> str:
        """Return what the program receives for the usual ``message`` (SPEC B1).

        The preamble comes first when the conversation was restored and no session of this
        backend exists yet; otherwise the message alone.
        """
        if self.restored and self.session_id is None:
            return preamble(transcript(self._restored_items)) + message
        return message

    def run_turn(self, message: str) -> TurnResult:
        """Send ``message`` as one turn; record its items and usage in the conversation.

        Args:
            message: The usual message (what the user typed, with any context the host adds).

        Returns:
            The turn's items, usage, cost and session id.

        Raises:
            BackendNotFoundError: The executable is missing.
            BackendExitError: The program exited with a non-zero status; the message is its
                own error, else the last line of its standard error.
            BackendStreamError: The stream ended before the turn's final event.
        """
        sent = self.message_for(message)
        argv = self.argv(sent, self.session_id)
        user = Item.make(id=self.new_id(), type="user", text=message)
        try:
            events, status, stderr = run_events(
                argv, provider=self.provider, cwd=self.cwd, env=self.env, on_event=self.on_event
            )
        except BackendError as exc:
            self._record([user], ParsedTurn(), exc)
            raise
        parsed = self.parse(events)
        if parsed.session_id is not None:
            self.session_id = parsed.session_id
        error = self._failure(parsed, status, stderr)
        self._record([user, *parsed.items], parsed, error)
        if error is not None:
            raise error
        return TurnResult(
            items=(user, *parsed.items),
            usage=parsed.usage or Usage(),
            cost=parsed.cost,
            session_id=self.session_id,
            sent=sent,
            argv=tuple(argv),
        )

    def _failure(self, parsed: ParsedTurn, status: int, stderr: str) -> BackendError | None:
        if status != 0:
            why = parsed.error or _last_line(stderr)
            return BackendExitError(
                f"{self.provider} exited with status {status}: {why}",
                provider=self.provider,
                status=status,
                stderr_tail=_tail(stderr),
            )
        if parsed.error is not None:
            return BackendError(f"{self.provider}: {parsed.error}", provider=self.provider)
        if not parsed.finished:
            return BackendStreamError(
                f"{self.provider}: the event stream ended mid-turn (no final event)",
                provider=self.provider,
            )
        return None

    def _record(self, items: list[Item], parsed: ParsedTurn, error: BackendError | None) -> None:
        if error is not None:
            items.append(Item.make(id=self.new_id(), type="failure", text=error.message))
        rounds = [] if parsed.usage is None else [(parsed.usage, parsed.cost)]
        self.conversation.end_turn(
            messages=(),
            provider=self.provider,
            model=parsed.model or self.model or "",
            items=items,
            rounds=rounds,
        )
