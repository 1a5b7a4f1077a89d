"""The ``llmcore chat`` loop: turns, slash commands and the status line (SPEC S2–S5, R2).

:class:`Chat` drives a :class:`~llmcore.session.Session` and a :class:`~llmcore.runner.Runner`
over :class:`~llmcore.chat.tools.WorkspaceTools`. A line that does not start with ``/`` is a
user turn: a spinner shows while a request is out, each response's text is printed as soon as
it arrives (:class:`Echo`), and when the turn ends the session is saved and then one status
line gives the turn's usage and cost — uncached input, cache read, cache write, hit rate =
read ÷ (input + read + write) and US dollars (:func:`status_line`). The save comes first, so
a turn whose status line is on the screen is on disk (a ``kill -9`` at any instant after it
appears loses nothing); a save that fails is said in one red line and the chat goes on.

The turn runs in a worker thread under a :class:`~llmcore.chat.interrupt.TurnGuard`: Ctrl+C
is taken at one point of the main thread, the cut turn is dropped whole (the session's
conversation only changes when a turn ends), and the worker starts no tool and prints nothing
afterwards. Commands: :data:`HELP`. It leaves out the terminal (the command module gives
``read_line`` and the console) and where the model is (the runner's transport).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Final

from rich.console import Console
from rich.markup import escape
from rich.status import Status

from llmcore._words import plural
from llmcore.errors import LLMCoreError, SessionError
from llmcore.messages import Text
from llmcore.providers.base import ParsedResponse, Provider
from llmcore.runner import Runner, TurnResult
from llmcore.session import Session, user_prompts
from llmcore.transport import Transport
from llmcore.usage import Cost, Usage

from .interrupt import TurnGuard
from .prompt import SYSTEM_PROMPT
from .tools import WorkspaceTools

__all__ = ["HELP", "SYSTEM_PROMPT", "Chat", "Display", "Echo", "status_line"]

HELP: Final = (
    ("/save", "save the session now (summary call) and write a checkpoint"),
    ("/reset, /new", "forget this session: clear the history, delete its file, new id"),
    ("/checkpoint [n]", "list the checkpoints, or restore checkpoint n"),
    ("/compact", "summarize all turns but the last two (one model call)"),
    ("/resume", "show the resume-context block injected into the system prompt"),
    ("/help", "this list"),
    ("/exit", "save and leave (also Ctrl+D; Ctrl+C saves and leaves too)"),
)
"""The slash commands and what each does."""


class Echo:
    """A transport that calls ``on_response(parsed)`` as soon as each response is in."""

    def __init__(self, inner: Transport, on_response: Callable[[ParsedResponse], None]) -> None:
        self.inner = inner
        self.on_response = on_response

    def send(
        self, provider: Provider, body: bytes, *, stream: bool = False, model: str | None = None
    ) -> ParsedResponse:
        """Send through the inner transport, then report the response."""
        parsed = self.inner.send(provider, body, stream=stream, **_model(model))
        self.on_response(parsed)
        return parsed


class Display:
    """What a turn shows: a spinner while waiting, streamed text, tool lines.

    :meth:`text` gets text deltas while a response streams (:class:`~llmcore.chat.stream.Tapped`)
    and stops the spinner; :meth:`response` ends the response (printing its text if nothing
    was streamed, e.g. a JSON answer) and starts the spinner again for the next request.

    The turn's worker thread calls :meth:`text`, :meth:`response` and :meth:`line`; the main
    thread runs :meth:`waiting`. One lock orders them, and each worker call first runs
    ``check`` (default :meth:`TurnGuard.check`, which raises in the worker of an interrupted
    turn), so nothing is shown once the spinner was stopped for an interrupt.
    """

    def __init__(self, console: Console, check: Callable[[], None] = TurnGuard.check) -> None:
        self.console = console
        self._check = check
        self._lock = threading.Lock()
        self._status: Status | None = None
        self._spinning = False
        self._streamed = False

    @contextmanager
    def waiting(self, label: str = "waiting for the model…") -> Iterator[None]:
        """Show the spinner for the ``with`` block (paused while text streams)."""
        with self._lock:
            self._status = self.console.status(label, spinner="dots")
            self._spin(True)
        try:
            yield
        finally:
            with self._lock:
                self._spin(False)
                self._end_line()
                self._status = None

    def _spin(self, on: bool) -> None:
        if self._status is None or on == self._spinning:
            return
        if on:
            self._status.start()
        else:
            self._status.stop()
        self._spinning = on

    def _end_line(self) -> None:
        if self._streamed:
            self.console.print()
            self._streamed = False

    def text(self, delta: str) -> None:
        """Show a streamed text delta."""
        with self._lock:
            self._check()
            self._spin(False)
            self.console.print(escape(delta), end="", style="bold", highlight=False, soft_wrap=True)
            self._streamed = True

    def response(self, parsed: ParsedResponse) -> None:
        """A response is complete: its text if it was not streamed; the spinner again."""
        with self._lock:
            self._check()
            if not self._streamed:
                for part in parsed.content:
                    if isinstance(part, Text) and part.text.strip():
                        self._spin(False)
                        self.console.print(escape(part.text), style="bold", highlight=False)
            self._end_line()
            self._spin(True)

    def line(self, text: str, style: str = "") -> None:
        """Show one line (a tool call) between responses."""
        with self._lock:
            self._check()
            self._end_line()
            self.console.print(escape(text), style=style or None, highlight=False)


def status_line(turn: int, rounds: Sequence[tuple[Usage, Cost]]) -> str:
    """Return the status line of a turn: requests, tokens, cache hit rate and cost."""
    usage = sum((u for u, _ in rounds), Usage())
    cost = sum((c for _, c in rounds), Cost())
    prompt = usage.input + usage.cache_read + usage.cache_write
    rate = f"{usage.cache_read / prompt:.1%}" if prompt else "–"
    dollars = "cost unknown" if cost.dollars is None else f"${cost.dollars:.4f}"
    if cost.kind == "not_billed":
        dollars = "not billed"
    return (
        f"turn {turn} · {plural(len(rounds), 'request')} · "
        f"input {usage.input:,} · cache read {usage.cache_read:,} · "
        f"cache write {usage.cache_write:,} · output {usage.output:,} · "
        f"hit rate {rate} · {dollars}"
    )


class Chat:
    """One chat run: the loop state (see the module doc).

    Args:
        session: The started session.
        runner: Runs the turns (its ``system`` is set here).
        console: Where everything is printed.
        read_line: Reads one line after a prompt; raises ``EOFError`` at the end.
        compact_runner: Makes the ``/compact`` call (default: ``runner``).
        tools: The workspace tools; the files they touched join the session's manifest.
        display: Shows the turn (default: a new :class:`Display` on ``console``).
        on_reset: Called after ``/reset`` (the command removes the prompt history with it).
    """

    def __init__(
        self,
        *,
        session: Session,
        runner: Runner,
        console: Console,
        read_line: Callable[[str], str],
        compact_runner: Runner | None = None,
        tools: WorkspaceTools | None = None,
        display: Display | None = None,
        on_reset: Callable[[], None] | None = None,
    ) -> None:
        self.session = session
        self.runner = runner
        self.console = console
        self.read_line = read_line
        self.compact_runner = compact_runner or runner
        self.tools = tools
        self.display = display or Display(console)
        self.guard = TurnGuard()
        self.on_reset = on_reset
        self._refresh_prompt()

    @property
    def turns(self) -> int:
        """The session's turn count: its history's user prompts (it continues after a resume)."""
        return user_prompts(self.session.conversation.history)

    def _refresh_prompt(self) -> None:
        self.runner.system = self.session.system_prompt(SYSTEM_PROMPT)

    def say(self, text: str, style: str = "") -> None:
        """Print ``text`` (no markup) in ``style``."""
        self.console.print(escape(text), style=style or None, highlight=False)

    def loop(self) -> None:
        """Read lines until ``/exit`` or end of input."""
        while True:
            try:
                line = self.read_line("you> ").strip()
            except EOFError:
                return
            if line and not self.handle(line):
                return

    def handle(self, line: str) -> bool:
        """Run one line (a turn or a command); return ``False`` to leave."""
        if not line.startswith("/"):
            self.turn(line)
            return True
        name, _, argument = line.partition(" ")
        if name == "/exit":
            return False
        command = self._commands().get(name)
        if command is None:
            self.say(f"unknown command {name}; /help lists them", "red")
        else:
            try:
                command(argument.strip())
            except LLMCoreError as exc:
                self.say(f"{name}: {exc}", "red")
        return True

    def _commands(self) -> dict[str, Callable[[str], None]]:
        return {
            "/save": self.save,
            "/reset": self.reset,
            "/new": self.reset,
            "/checkpoint": self.checkpoint,
            "/compact": self.compact,
            "/resume": self.show_resume,
            "/help": self.help,
        }

    def turn(self, text: str) -> None:
        """Run one user turn; on success save the session, then show the status line.

        Raises:
            KeyboardInterrupt: Ctrl+C came during the turn (the turn is dropped) or while it
                was saved and shown (it is kept).
        """
        with self.guard.deferred():
            state = self.session.conversation.state
            try:
                with self.display.waiting():
                    result = self.guard.run(lambda: self.runner.run_turn(state, text))
            except LLMCoreError as exc:
                self.say(f"error: {exc}", "red")
                return
            self._track()
            problem = self._persist(result)
            self.say(self._status(result), "dim")
            if problem:
                self.say(problem, "red")

    def _persist(self, result: TurnResult) -> str | None:
        try:
            self.session.record_turn(result)
        except SessionError as exc:
            return f"The session could not be saved: {exc}"
        return None

    def _track(self) -> None:
        if self.tools is not None:
            self.session.track(*sorted(self.tools.touched))

    def _status(self, result: TurnResult) -> str:
        return status_line(self.turns, result.rounds)

    def save(self, _argument: str) -> None:
        """``/save``: the extraction call, the file, then a checkpoint."""
        self._track()
        outcome = self.session.save()
        number = self.session.checkpoint()
        extra = ""
        if outcome.extraction is not None:
            cost = outcome.extraction.cost
            extra = " (summary call: " + (
                "cost unknown)" if cost.dollars is None else f"${cost.dollars:.4f})"
            )
        elif outcome.extraction_failure:
            extra = f" (summary call failed: {outcome.extraction_failure})"
        self.say(f"Saved session {self.session.session_id}, checkpoint {number}{extra}.")

    def reset(self, _argument: str) -> None:
        """``/reset`` / ``/new``: ask before deleting the spec file, then start clean."""
        deleted = self.session.reset(confirm=self._confirm)
        if self.on_reset is not None:
            self.on_reset()
        self._refresh_prompt()
        gone = f" Deleted: {', '.join(deleted)}." if deleted else ""
        self.say(f"New session {self.session.session_id}; the old one is deleted.{gone}")

    def _confirm(self, question: str) -> bool:
        return self.read_line(question + " ").strip().lower() in ("y", "yes")

    def checkpoint(self, argument: str) -> None:
        """``/checkpoint``: list; ``/checkpoint N``: restore N."""
        if not argument:
            listing = self.session.checkpoints()
            if not listing:
                self.say("No checkpoints yet (/save writes one).")
            for info in listing:
                self.say(info.line())
            return
        if not (argument.isascii() and argument.isdigit()):
            self.say("usage: /checkpoint [n]", "red")
            return
        self.session.restore(int(argument))
        count = plural(len(self.session.conversation.history), "message")
        self.say(f"Restored checkpoint {argument}: {count} in the history.")

    def compact(self, _argument: str) -> None:
        """``/compact``: one summarization call, then save."""
        with self.display.waiting("compacting…"):
            outcome = self.session.compact(self.compact_runner)
        if not outcome.ok:
            self.say(f"not compacted: {outcome.failure}", "red")
            return
        kept = len(self.session.conversation.history)
        verb = "remains" if kept == 1 else "remain"
        self.say(f"Compacted: {plural(kept, 'message')} {verb}; saved.")

    def show_resume(self, _argument: str) -> None:
        """``/resume``: the injected resume-context block, or that there is none."""
        block = self.session.resume_block
        self.say(block if block else "No resume context (this session was not resumed).")

    def help(self, _argument: str) -> None:
        """``/help``: the commands."""
        for name, text in HELP:
            self.say(f"{name:<17} {text}")


def _model(model: str | None) -> dict[str, str]:
    """The ``model=`` argument to pass on, only when there is one (inner fakes may lack it)."""
    return {} if model is None else {"model": model}
