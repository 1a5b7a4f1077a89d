"""``llmcore chat [--workspace DIR] [--live --provider P [--model M]] [--no-history] …``.

The terminal agent of SPEC S1–S6 (R2): a session per workspace (``llmcore.session``, app name
``llmcore-chat``), the built-in workspace tools (:mod:`llmcore.chat.tools`) and the loop of
:mod:`llmcore.chat.agent`. Where the model is:

* default — the emulator (:class:`llmcore.emulator.Emulator`) started in-process on loopback
  with the demo model (:data:`llmcore.chat.demo.DEMO_SCRIPT`: it answers what the user types
  and works on the files the user names; it writes only a file the user asked for): no key,
  nothing leaves the machine;
* ``--live --provider P [--model M]`` — the real API (key from ``ANTHROPIC_API_KEY``,
  ``OPENAI_API_KEY``, ``OPENROUTER_API_KEY``, ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``; Bedrock
  Converse signs with the AWS chain or sends ``AWS_BEARER_TOKEN_BEDROCK``);
* ``--base-url URL`` — any compatible endpoint (the key from the same variable, or ``none``);
* ``--endpoint vertex|bedrock|azure`` — the provider's API on a cloud (:mod:`llmcore.cloud`;
  settings and credentials from the environment, ``--base-url`` for its host).

Whichever it is, the credentials and settings the first request needs are resolved before the
first prompt (:meth:`llmcore.transport.HTTPTransport.prepare`, nothing sent): a missing key,
token, AWS credential chain or cloud setting is one line naming it, exit 2.

With a terminal, lines are read with prompt_toolkit (line editing; history in the project's
folder, ``<project>/history``: each line scrubbed of secrets, the file 0600, removed by
``/reset``; ``--no-history`` keeps none, :mod:`llmcore.chat.history`); otherwise from
standard input, each line written after its prompt (``you> hi``) as a terminal shows it, and
output lines are not wrapped. ``--resume``/``--no-resume`` answers the resume question without
asking; without a terminal to ask on (piped input) it is not asked: the previous session
resumes, and one status line says so (:data:`NOT_A_TERMINAL`). ``--list`` prints the
project's saved sessions (id, last active, messages, summary line; newest first) and exits;
``--session ID`` resumes that one (an unknown id is one line naming the known ones, exit 2). A
session opened and left without a message is not kept. The status line's turn number is the
session's (it continues after a resume). ``--workspace`` must be a folder, and ``--config-dir``
one or a path that can become one (else one line, exit 2). Ctrl+C (at the prompt or mid-turn)
and Ctrl+D leave, saving the session (a turn cut short is not kept); exit code 130 after
Ctrl+C.

Test hook: with ``LLMCORE_CHAT_TEST_HOLD=PATH`` in the environment, each tool call waits until
``PATH`` exists, so a test can interrupt a turn while it is running.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Final

import typer

from llmcore._words import plural
from llmcore.cli._common import (
    BaseUrlOption,
    EndpointOption,
    ModelOption,
    base_url_transport,
    cloud_transport,
    fail,
    require_extra,
)
from llmcore.errors import LLMCoreError
from llmcore.providers import PROVIDER_NAMES, get_provider

if TYPE_CHECKING:
    from rich.console import Console

    from llmcore.chat import Display
    from llmcore.session import Session
    from llmcore.transport import HTTPTransport, Transport

__all__ = ["APP", "ChatSetup", "chat", "register", "run_chat"]

APP: Final = "llmcore-chat"
"""The session folder's application name: ``<config>/llmcore-chat/projects/…``."""
HOLD_ENV: Final = "LLMCORE_CHAT_TEST_HOLD"
NOT_A_TERMINAL: Final = "Input is not a terminal: resuming it (--no-resume starts a new one)."
"""The status line that replaces the resume question when standard input is not a terminal."""


@contextmanager
def _endpoint(
    name: str, live: bool, base_url: str | None, cloud: str | None = None, model: str = ""
) -> Iterator[tuple[HTTPTransport, str]]:
    """Yield the transport and a description of where it sends, its credentials checked.

    Raises:
        typer.Exit: The credentials or settings the first request needs are missing (code 2,
            one line naming the variable or the chain that was tried).
    """
    from llmcore.transport import HTTPTransport

    if cloud:
        with cloud_transport(name, cloud, base_url) as transport:
            _check_credentials(transport, name, model, f"--endpoint {cloud}")
            yield transport, f"{cloud} endpoint"
        return
    if base_url:
        with base_url_transport(name, base_url) as transport:
            _check_credentials(transport, name, model, "--base-url")
            yield transport, base_url
        return
    if live:
        with HTTPTransport() as transport:
            _check_credentials(transport, name, model, "--live")
            yield transport, "live API"
        return
    require_extra("chat", "emulator")
    from llmcore.chat.demo import DEMO_SCRIPT
    from llmcore.emulator import Emulator

    with (
        Emulator(script=DEMO_SCRIPT) as emulator,
        HTTPTransport(
            base_urls={name: emulator.base_url}, api_keys={name: "emulator"}
        ) as transport,
    ):
        yield transport, "embedded emulator"


def _check_credentials(transport: HTTPTransport, name: str, model: str, option: str) -> None:
    """Resolve what the first request needs before the first prompt (``prepare``, no send).

    Raises:
        typer.Exit: A missing key, token, credential chain or cloud setting (code 2).
    """
    try:
        transport.prepare(get_provider(name), model=model, stream=True)
    except LLMCoreError as exc:
        raise fail(f"{option}: {exc.message}") from None


def _line_reader(
    history: Path, keep: bool
) -> tuple[Callable[[str], str], Callable[[], None] | None]:
    """prompt_toolkit on a terminal (with the history file if ``keep``), else :func:`_plain_line`.

    Returns the line reader and what ``/reset`` calls to forget the history (or ``None``).
    """
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return _plain_line, None
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import InMemoryHistory

    from llmcore.chat.history import PromptHistory

    stored: PromptHistory | None = None
    if keep:
        try:
            stored = PromptHistory(history)
        except LLMCoreError:  # an unusable folder: the prompt keeps no history
            stored = None
    prompt: PromptSession[str] = PromptSession(history=stored or InMemoryHistory())
    return (lambda text: prompt.prompt(text)), (stored.clear if stored else None)


def _plain_line(prompt: str) -> str:
    """Read a line without a terminal, then write the prompt and the line as one line.

    A terminal shows what was typed after the prompt and ends the line; piped input is not
    echoed, so ``input(prompt)`` would run the next output onto the prompt's line
    (``you>   ↳ list_files``) and leave a bare prompt at the end. Written after the read, the
    transcript reads as a terminal's: ``you> hi``, and nothing once the input has ended.

    Raises:
        EOFError: The input has ended.
    """
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    line = line.removesuffix("\n")
    sys.stdout.write(f"{prompt}{line}\n")
    sys.stdout.flush()
    return line


def _on_call(display: Display) -> Callable[[str, str], None]:
    from llmcore.chat.interrupt import TurnGuard

    hold = os.environ.get(HOLD_ENV)

    def show(name: str, path: str) -> None:
        display.line(f"  ↳ {name} {path}".rstrip(), "cyan")
        while hold and not os.path.exists(hold):
            TurnGuard.check()
            time.sleep(0.05)

    return show


def _ask_resume(setup: ChatSetup, say: Callable[[str], None]) -> Callable[[str], bool]:
    """The answer to the resume question (``[Y/n]``: yes is the default).

    ``--resume``/``--no-resume`` if given; else, with no terminal to ask on, the default, said
    in one line (:data:`NOT_A_TERMINAL`; a piped first line is the first message, not the
    answer); else the user's line ("", ``y``, ``yes``: yes; end of input: the default).
    """

    def ask(question: str) -> bool:
        if setup.resume is not None:
            return setup.resume
        if not setup.interactive:
            say(NOT_A_TERMINAL)
            return True
        try:
            return setup.read_line(question + " ").strip().lower() in ("", "y", "yes")
        except EOFError:
            return True

    return ask


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatSetup:
    """What one ``llmcore chat`` run is given besides where the model is."""

    workspace: Path
    """The project folder."""
    config_dir: Path | None
    """Overrides the platform's config folder."""
    provider: str
    """The provider name."""
    model: str
    """The model name."""
    console: Console
    """Where everything is printed."""
    read_line: Callable[[str], str]
    """Reads one line after a prompt; raises ``EOFError`` at the end."""
    resume: bool | None = None
    """The answer to the resume question, or ``None`` to ask."""
    session_id: str | None = None
    """Resume this saved session without asking (``--session``)."""
    forget_history: Callable[[], None] | None = None
    """What ``/reset`` calls to remove the prompt history, if there is one."""
    interactive: bool = True
    """Standard input is a terminal, so the resume question can be asked; if not, the default
    (resume) is taken without reading a line."""


def chat_command(
    *,
    workspace: Path,
    config_dir: Path | None,
    live: bool,
    provider: str,
    model: str | None,
    base_url: str | None,
    resume: bool | None,
    history: bool = True,
    endpoint: str | None = None,
    session_id: str | None = None,
    list_sessions: bool = False,
) -> int:
    """Run ``llmcore chat``; return the exit code (0, or 130 after Ctrl+C).

    Raises:
        typer.Exit: Bad options, or a missing API key (code 2, one line printed).
        SessionError: ``session_id`` is not a saved session's (the known ids named) or its
            file cannot be read; the session folder cannot be listed.
    """
    if list_sessions:
        return _list(workspace, config_dir)
    if provider not in PROVIDER_NAMES:
        raise fail(f"--provider: unknown provider {provider!r}; one of {', '.join(PROVIDER_NAMES)}")
    _check_folders(workspace, config_dir)
    from rich.console import Console

    from llmcore.bench import LIVE_MODELS
    from llmcore.session import ProjectPaths

    console = Console(highlight=False, soft_wrap=not sys.stdout.isatty())  # a file: whole lines
    paths = ProjectPaths.for_workspace(workspace, app=APP, config=config_dir)
    read_line, forget = _line_reader(paths.sessions.parent / "history", history)
    setup = ChatSetup(
        workspace=workspace, config_dir=config_dir, provider=provider,
        model=model or LIVE_MODELS[provider], console=console, read_line=read_line,
        resume=resume, forget_history=forget, session_id=session_id,
        interactive=sys.stdin.isatty(),
    )  # fmt: skip
    try:
        with _endpoint(provider, live, base_url, endpoint, setup.model) as (transport, where):
            return run_chat(setup, transport, where)
    except KeyboardInterrupt:  # while the endpoint starts or stops
        console.print("\nInterrupted.", highlight=False)
        return 130


def _check_folders(workspace: Path, config_dir: Path | None) -> None:
    """Check ``--workspace`` and ``--config-dir`` before anything starts.

    Raises:
        typer.Exit: The workspace is not a folder, or the config folder is not one and cannot
            become one (it, or the nearest of its parents that exists, is not a folder); code 2,
            one line.
    """
    if not workspace.is_dir():
        raise fail(f"--workspace: {workspace}: not a folder")
    if config_dir is None:
        return
    existing = next((p for p in (config_dir, *config_dir.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise fail(f"--config-dir: {config_dir}: not a folder")


def _list(workspace: Path, config_dir: Path | None) -> int:
    """``--list``: one line per saved session of ``workspace``'s project, newest first."""
    _check_folders(workspace, config_dir)
    from llmcore.session import ProjectPaths, SessionStore, list_sessions

    store = SessionStore(ProjectPaths.for_workspace(workspace, app=APP, config=config_dir))
    listing = list_sessions(store)
    if not listing.sessions:
        print(f"No saved sessions for {workspace.resolve()}.")
    else:
        print(f"{'session':<12}  {'last active':<20}  {'messages':>12}  summary")
        for info in listing.sessions:
            print(info.line().rstrip())
        print("Resume one with: llmcore chat --session ID")
    for problem in listing.problems:
        print(f"not listed: {problem}", file=sys.stderr)
    return 0


def run_chat(setup: ChatSetup, transport: Transport, where: str) -> int:
    """Run the chat over ``transport`` (``where`` describes it); return 0, or 130 after Ctrl+C."""
    started: list[Session] = []
    try:
        _run(setup, transport, where, started)
    except KeyboardInterrupt:
        saved = bool(started) and not started[0].suppressed
        setup.console.print(f"\nInterrupted{'; session saved' if saved else ''}.", highlight=False)
        return 130
    return 0


def _run(setup: ChatSetup, transport: Transport, where: str, started: list[Session]) -> None:
    from rich.markup import escape

    from llmcore.chat import Chat, Display, Echo, Tapped, WorkspaceTools
    from llmcore.runner import Runner
    from llmcore.session import Session

    console, provider, model = setup.console, setup.provider, setup.model

    def say(line: str) -> None:
        console.print(escape(line), highlight=False)

    display = Display(console)
    tools = WorkspaceTools(setup.workspace, on_call=_on_call(display))
    runner = Runner(
        provider=Tapped.of(get_provider(provider), display.text),
        model=model,
        transport=Echo(transport, display.response),
        tools=tools.function_tools(),
        stream=True,
    )
    plain = Runner(provider=provider, model=model, transport=transport)
    session = Session.start(
        setup.workspace,
        app=APP,
        ask=_ask_resume(setup, say),
        say=say,
        config=setup.config_dir,
        runner=plain,
        session_id=setup.session_id,
    )
    started.append(session)
    with session:
        chat = Chat(
            session=session, runner=runner, console=console, read_line=setup.read_line,
            tools=tools, compact_runner=plain, display=display, on_reset=setup.forget_history,
        )  # fmt: skip
        head = f"New session {session.session_id}"
        if session.resume_block:
            count = len(session.conversation.history)
            head = f"Resumed session {session.session_id} ({plural(count, 'message')} of history)"
        say(f"{head} · {provider} {model} · {where} · /help")
        chat.loop()
    if session.saved:
        say(f"Session {session.session_id} saved.")
    elif not session.suppressed:
        say("Nothing to save: no message in this session.")


def chat(
    workspace: Annotated[
        Path,
        typer.Option(
            "--workspace", "-w", metavar="DIR", help="The project folder (default: here)."
        ),
    ] = Path(),
    config_dir: Annotated[
        Path | None,
        typer.Option(
            "--config-dir", metavar="DIR", help="Sessions under this folder instead of the user's."
        ),
    ] = None,
    live: Annotated[
        bool, typer.Option("--live", metavar="", help="Use the real API of --provider.")
    ] = False,
    provider: Annotated[
        str,
        typer.Option(
            "--provider", "-p", metavar="PROVIDER", help=f"One of: {', '.join(PROVIDER_NAMES)}."
        ),
    ] = "anthropic",
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    endpoint: EndpointOption = None,
    resume: Annotated[
        bool | None,
        typer.Option(
            "--resume/--no-resume", metavar="", help="Answer the resume question without asking."
        ),
    ] = None,
    history: Annotated[
        bool,
        typer.Option(
            "--history/--no-history",
            metavar="",
            help="Keep the prompt history (scrubbed, 0600) in the project folder.",
            show_default=False,
        ),
    ] = True,
    session_id: Annotated[
        str | None,
        typer.Option("--session", metavar="ID", help="Resume this saved session (ids: --list)."),
    ] = None,
    list_sessions: Annotated[
        bool,
        typer.Option(
            "--list", metavar="", help="List the saved sessions of the workspace and exit."
        ),
    ] = False,
) -> None:
    """A terminal agent over a folder, with saved sessions; a demo model by default."""
    try:
        code = chat_command(
            workspace=workspace, config_dir=config_dir, live=live, provider=provider,
            model=model, base_url=base_url, resume=resume, history=history, endpoint=endpoint,
            session_id=session_id, list_sessions=list_sessions,
        )  # fmt: skip
    except LLMCoreError as exc:
        raise fail(str(exc)) from None
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    """Add ``chat`` to ``app``."""
    app.command("chat")(chat)
