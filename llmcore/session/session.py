"""The session lifecycle an agent loop drives (SPEC S1–S6).

::

    with Session.start(workspace, app="my-agent", ask=yes_no, runner=runner) as session:
        runner.system = session.system_prompt(BASE_PROMPT)
        for line in user_lines():
            runner.run_turn(session.conversation, line)
            session.record_turn()          # saved after each completed turn

* **Start-up** (S2): the temporary files of saves that were killed are removed
  (:meth:`~llmcore.session.store.SessionStore.remove_leftovers`), then
  :func:`~llmcore.session.startup.find_previous` offers the last session of
  this project; ``say`` shows ``Previous session found (last active: YYYY-MM-DD HH:MM UTC)``
  and ``ask("Resume previous session? [Y/n]")`` decides. Yes keeps the id and files, rebuilds
  the trimmed history (:func:`~llmcore.session.summary.rebuild_history`), checks drift (S4) and
  builds the resume block once (S3). No starts a new session; the old file stays, and
  :func:`~llmcore.session.listing.list_sessions` (``llmcore chat --list``) still lists it.
  ``session_id=`` resumes that saved session without asking (``llmcore chat --session ID``).
  An exited terminal's pointer that offered a session is removed when this one resumes it, or,
  after a No, at this session's first save.
* **An empty session is not kept**: a new session that has had no turn is not written at exit,
  so opening and leaving without a message never hides the previous session.
* **Saving**: after each completed turn (:meth:`Session.record_turn`), on ``/save``
  (:meth:`Session.save`) and at exit (:meth:`Session.close`, also from ``with`` on an
  exception or ``KeyboardInterrupt``), unless the session was just reset. ``/save`` and exit
  make the extraction call (:mod:`~llmcore.session.summary`) when a runner is configured.
* **Reset** (S5 ``/reset``, ``/new``): :meth:`Session.reset`; ``/compact``:
  :meth:`Session.compact`; ``/resume``: :attr:`Session.resume_block`.
* **Checkpoints** (S5): :meth:`Session.checkpoint`, :meth:`Session.checkpoints`,
  :meth:`Session.restore`.

:attr:`Session.conversation` is an :class:`llmcore.archive.Conversation` the runner advances in
place; :meth:`Session.restore` replaces it, so read the attribute at each turn.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from llmcore.archive import Conversation, ConversationState
from llmcore.compaction import CompactionOutcome, run_compaction
from llmcore.errors import LLMCoreError, SessionError
from llmcore.runner import Runner, TurnResult

from .checkpoints import CheckpointInfo, Checkpoints
from .drift import Drift, build_manifest, detect_drift, file_sha256
from .listing import list_sessions
from .paths import ProjectPaths, check_session_id, new_session_id, safe_relative
from .record import Phase, SessionRecord, format_time
from .resume import build_resume_block, display_time
from .startup import find_previous, process_alive
from .store import NO_FILE, SessionStore
from .summary import Extraction, extract, rebuild_history, split_history

__all__ = ["RESUME_QUESTION", "SaveOutcome", "Session"]

RESUME_QUESTION = "Resume previous session? [Y/n]"
"""The question ``ask`` is given at start-up."""


def _now() -> datetime:
    return datetime.now(UTC)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


@dataclass(frozen=True, slots=True, kw_only=True)
class SaveOutcome:
    """What a save did."""

    path: Path
    """The session file written."""
    extraction: Extraction | None = None
    """The extraction call's result (with its usage and cost), if one was made."""
    extraction_failure: str | None = None
    """Why the extraction call failed (the previous summary was kept), if it did."""


class Session:
    """One terminal agent session (see the module doc); made by :meth:`start`."""

    def __init__(
        self,
        *,
        workspace: Path,
        store: SessionStore,
        pid: int,
        clock: Callable[[], datetime],
        token: Callable[[int], str] | None,
        runner: Runner | None,
        spec_file: str,
        template_dir: str | None,
    ) -> None:
        self.workspace = workspace
        self.store = store
        self.pid = pid
        self.clock = clock
        self.runner = runner
        """The :class:`~llmcore.runner.Runner` of the extraction call, or ``None`` (no call)."""
        self.spec_file = spec_file
        self.template_dir = template_dir
        self._token = token
        self._release: int | None = None
        """An exited terminal's pointer to remove when this one first writes its own."""
        self.resume_block = ""
        """The resume-context block (S3): set once at resume, ``""`` otherwise and after reset."""
        self.drift: Drift | None = None
        """The drift found at resume (S4), ``None`` for a new session."""
        self._new_state()

    def _new_state(self) -> None:
        self.session_id = new_session_id(self._token) if self._token else new_session_id()
        self.created_at = format_time(self.clock())
        self.conversation = Conversation()
        self.summary: str | None = None
        self.decisions: tuple[str, ...] = ()
        self.tracked: set[str] = set()
        self.checkpoint_count = 0
        self.phase: Phase | None = None
        self.base = NO_FILE
        self.suppressed = False
        """``True`` after :meth:`reset` until the next completed turn or explicit save."""

    # ------------------------------------------------------------------ start-up

    @classmethod
    def start(
        cls,
        workspace: Path,
        *,
        app: str,
        ask: Callable[[str], bool],
        say: Callable[[str], None] = _stderr,
        config: Path | None = None,
        runner: Runner | None = None,
        pid: int | None = None,
        clock: Callable[[], datetime] = _now,
        alive: Callable[[int], bool] = process_alive,
        token: Callable[[int], str] | None = None,
        spec_file: str = "agent_spec.md",
        template_dir: str | None = None,
        session_id: str | None = None,
    ) -> Session:
        """Start the session of ``workspace``: resume the previous one or begin a new one (S2).

        Args:
            workspace: The project folder.
            app: The application name (``<config>/<app>/projects/…``).
            ask: Asked :data:`RESUME_QUESTION`; ``True`` resumes.
            say: Shows one line (the found session, a refused or unreadable file).
            config: Overrides the platform's config folder.
            runner: Makes the extraction call at ``/save`` and exit; ``None``: no call.
            pid: This terminal's process id (default: ``os.getpid()``).
            clock: Current UTC time (injected by tests).
            alive: Whether a pid still runs (another terminal's pointer is left alone).
            token: Random hex of n bytes for new ids (injected by tests).
            spec_file: The agent specification file, workspace-relative.
            template_dir: A template folder ``/reset`` offers to delete, workspace-relative.
            session_id: Resume this saved session without asking (``None``: offer the
                previous one, S2).

        Raises:
            SessionIdError: ``session_id`` is not 12 lowercase hex digits.
            SessionNotFoundError: No saved session has ``session_id`` (the known ids named).
            SessionReadError: The file of ``session_id`` is corrupt, a symlink or unreadable.
        """
        paths = ProjectPaths.for_workspace(workspace, app=app, config=config)
        session = cls(
            workspace=workspace.resolve(),
            store=SessionStore(paths),
            pid=os.getpid() if pid is None else pid,
            clock=clock,
            token=token,
            runner=runner,
            spec_file=spec_file,
            template_dir=template_dir,
        )
        session.store.remove_leftovers(alive, session.pid)  # a killed save's temporary files
        if session_id is not None:
            session._resume_chosen(check_session_id(session_id, "--session"), say)
            return session
        found = find_previous(session.store, session.pid, alive=alive, say=say)
        if found is not None:
            last = display_time(found.loaded.record.updated_at)
            say(f"Previous session found (last active: {last})")
            if found.pointer_pid != session.pid:  # an exited terminal's: taken or declined
                session._release = found.pointer_pid
            if ask(RESUME_QUESTION):
                session._resume(found.loaded.record, found.loaded.base)
                session._take_pointer(say)
        return session

    def _resume_chosen(self, session_id: str, say: Callable[[str], None]) -> None:
        loaded = self.store.load(session_id)
        if loaded is None:
            raise list_sessions(self.store).not_found(session_id, str(self.store.paths.sessions))
        self._resume(loaded.record, loaded.base)
        self._take_pointer(say)

    def _take_pointer(self, say: Callable[[str], None]) -> None:
        """Point this terminal's pointer at the session; drop the exited one it replaces."""
        try:
            self._write_pointer()
        except (SessionError, OSError) as exc:  # the agent still starts
            say(f"The session pointer could not be updated: {exc}")

    def _write_pointer(self) -> None:
        self.store.write_pointer(self.pid, self.session_id)
        if self._release is not None:
            self.store.delete_pointer(self._release)
            self._release = None

    def _resume(self, record: SessionRecord, base: str) -> None:
        self._adopt(record)
        self.created_at = record.created_at
        self.base = base
        self.drift = detect_drift(self.workspace, record.manifest)
        self.resume_block = build_resume_block(record, self.drift)

    def _adopt(self, record: SessionRecord) -> None:
        self.session_id = record.session_id
        state = ConversationState(
            history=rebuild_history(record.compacted_history_summary, record.recent_messages)
        )
        self.conversation = Conversation(state)
        self.summary = record.summary
        self.decisions = record.decisions
        self.tracked = {path for path, _ in record.file_manifest}
        self.checkpoint_count = record.checkpoint_count
        self.phase = record.phase

    @property
    def saved(self) -> bool:
        """Whether the session has a file on disk that auto-save keeps (not after a reset)."""
        return self.base != NO_FILE and not self.suppressed

    # ------------------------------------------------------------------ the prompt

    def system_prompt(self, base: str | Sequence[str]) -> tuple[str, ...]:
        """Return the system prompt blocks: ``base``, then the resume block if there is one."""
        blocks = (base,) if isinstance(base, str) else tuple(base)
        return (*blocks, self.resume_block) if self.resume_block else blocks

    def track(self, *paths: str) -> None:
        """Add workspace files to the manifest (unsafe paths are skipped, S6)."""
        self.tracked.update(str(p) for path in paths if (p := safe_relative(path)) is not None)

    # ------------------------------------------------------------------ saving

    def _record(self) -> SessionRecord:
        spec = self.spec_file if file_sha256(self.workspace, self.spec_file) else None
        compacted, tail = split_history(self.conversation.history)
        names = self.tracked | ({spec} if spec else set())
        return SessionRecord(
            session_id=self.session_id,
            created_at=self.created_at,
            updated_at=format_time(self.clock()),
            agent_spec_path=spec,
            file_manifest=tuple(sorted(build_manifest(self.workspace, names).items())),
            summary=self.summary,
            decisions=self.decisions,
            recent_messages=tail,
            compacted_history_summary=compacted,
            checkpoint_count=self.checkpoint_count,
            phase=self.phase,
        )

    def _extract(self) -> tuple[Extraction | None, str | None]:
        if self.runner is None or not self.conversation.history:
            return None, None
        try:
            result = extract(self.runner, self.conversation.history)
        except LLMCoreError as exc:
            return None, str(exc)
        if result.summary:
            self.summary, self.decisions = result.summary, result.decisions
        return result, None

    def save(self, *, summarize: bool = True) -> SaveOutcome:
        """Save now (``/save``): extraction call (if a runner and ``summarize``), file, pointer.

        Re-enables auto-save after a reset.

        Raises:
            SessionConflictError: Another process saved this session since; its save is kept.
            SessionWriteError: Nothing could be written.
        """
        extraction, failure = self._extract() if summarize else (None, None)
        self.base = self.store.save(self._record(), self.base)
        self._write_pointer()
        self.suppressed = False
        return SaveOutcome(
            path=self.store.paths.session_file(self.session_id),
            extraction=extraction,
            extraction_failure=failure,
        )

    def record_turn(self, result: TurnResult | None = None) -> SaveOutcome:
        """Call after each completed turn: ends a reset's suppression and saves (no model call).

        Args:
            result: A turn run on ``conversation.state`` (a value, so the conversation did not
                change while it ran): its state becomes the conversation first. ``None``: the
                turn already advanced :attr:`conversation`.

        Raises:
            SessionConflictError: Another process saved this session since; its save is kept.
            SessionWriteError: Nothing could be written (the turn stays in memory).
        """
        if result is not None:
            self.conversation = Conversation(result.state)
        return self.save(summarize=False)

    def close(self, *, summarize: bool = True) -> SaveOutcome | None:
        """Auto-save at exit (normal, Ctrl+C or crash).

        Not after a reset (S2), nor for a new session that was never saved and has no turn:
        an empty session never becomes the previous one.
        """
        if self.suppressed or (self.base == NO_FILE and not self.conversation.history):
            return None
        return self.save(summarize=summarize)

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if error is None:
            self.close()
            return
        try:
            self.close(summarize=not isinstance(error, KeyboardInterrupt))
        except LLMCoreError as exc:  # the original error propagates; the save failure is said
            _stderr(f"The session could not be saved: {exc}")

    # ------------------------------------------------------------------ reset

    def _deletable(self) -> list[tuple[str, Path]]:
        found = []
        for name in (self.spec_file, self.template_dir):
            relative = safe_relative(name) if name else None
            if relative is None:
                continue
            path = self.workspace / relative
            if path.is_symlink() or path.is_file() or path.is_dir():
                found.append((str(relative), path))
        return found

    def reset(self, confirm: Callable[[str], bool]) -> list[str]:
        """``/reset`` (``/new``): return the workspace paths deleted (S5).

        Asks ``confirm("Delete <path>? [y/N]")`` for the spec file and template folder if they
        exist (a symlink is only unlinked); then, always: clears the history, deletes the
        session file, its checkpoints and this process's pointer, starts a new id with no
        resume block, and suppresses auto-save until the next completed turn or save.
        """
        deleted = []
        for name, path in self._deletable():
            if not confirm(f"Delete {name}? [y/N]"):
                continue
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
            deleted.append(name)
        old = self.session_id
        self.store.delete(old)
        Checkpoints(self.store.paths, old).delete_all()
        self.store.delete_pointer(self.pid)
        self._new_state()
        self.resume_block = ""
        self.drift = None
        self.suppressed = True
        return deleted

    # ------------------------------------------------------------------ compaction

    def compact(self, runner: Runner) -> CompactionOutcome:
        """``/compact``: one summarization call (SPEC C1–C3), then save (no extraction call).

        The compacted history's summary and kept turns become ``compacted_history_summary``
        and ``recent_messages`` of the session file.

        Raises:
            LLMCoreError: Compaction is not offered (two turns or fewer) or ``runner`` has no
                transport; nothing changed.
        """
        outcome = run_compaction(self.conversation, runner)
        if outcome.ok:
            self.save(summarize=False)
        return outcome

    # ------------------------------------------------------------------ checkpoints

    def checkpoint(self) -> int:
        """Write the session as it stands as the next checkpoint, save, return its number."""
        record = self._record()
        number = Checkpoints(self.store.paths, self.session_id).write(record)
        self.checkpoint_count = number
        self.save(summarize=False)
        return number

    def checkpoints(self) -> list[CheckpointInfo]:
        """Return the checkpoint listing (``/checkpoint``), oldest first."""
        return Checkpoints(self.store.paths, self.session_id).list()

    def restore(self, number: int) -> None:
        """Restore checkpoint ``number`` (``/checkpoint N``) and save; the id stays.

        Raises:
            SessionError: No such checkpoint, or it cannot be read (nothing changed).
        """
        record = Checkpoints(self.store.paths, self.session_id).load(number)
        if record.session_id != self.session_id:
            raise SessionError("the checkpoint belongs to another session")
        count = self.checkpoint_count
        self._adopt(record)
        self.checkpoint_count = max(count, record.checkpoint_count)
        self.save(summarize=False)
