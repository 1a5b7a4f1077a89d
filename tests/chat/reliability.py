"""The chat surface's reliability rows: junk in the sessions folder, SIGKILL at every step of a
turn, Ctrl+C at every step of a turn (SPEC S2, S6, R2). ``benchmarks/bench_reliability.py``
runs them at full size beside the archive's rows; ``tests/chat/test_reliability.py`` runs a
sample of each.

A turn runs as ``llmcore chat`` runs it (:func:`llmcore.cli.chat.run_chat`: the session, the
display on a terminal console, the workspace tools), in a forked child, over a mock transport
answered by the emulator's engine (its built-in agent script, streamed). Steps are counted, not
timed:

* **SIGKILL** — a step is an ``os`` call (open, write, fsync, replace, unlink, mkdir, chmod,
  listdir, …), an ``fcntl.flock`` or a write to the terminal; the child kills itself right
  before step ``k`` of the second turn, for every ``k`` until the turn ends;
* **Ctrl+C** — a step is a Python function call in any thread (``sys.setprofile``); at call
  ``k`` of the second turn the child sends itself SIGINT.

Columns (:class:`ChatRow`, the archive harness's :class:`~tests.archive.reliability.Row` plus
two): **torn** — the session file is unreadable, or holds a turn that was cut; **lost** — the
turn's status line was shown but the turn is not on disk, or the first turn is gone (junk:
the valid session was not offered); **leftovers** — a temporary file survives the next start;
**unexpected** — a traceback, an exit code other than 0/130, or a next start that does not
resume; **hangs** — a child still running after :data:`SAFETY` seconds (a safety net; it is
killed and counted); **escapes** — a file outside the workspace and the config folder changed;
**peak RSS over baseline** — the largest child (or start-up) peak resident size above a clean
run's, bytes.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import random
import resource
import shutil
import signal
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from llmcore.cli.chat import APP, ChatSetup, run_chat
from llmcore.session import ProjectPaths, Session
from llmcore.transport import HTTPTransport
from tests.archive.reliability import HANG_SECONDS, Row

SAFETY = 60.0
"""Seconds a case's child may run before it counts as a hang (a safety net, not a timing)."""
MODEL = "claude-sonnet-4-6"
_OS_CALLS = (
    "open", "write", "read", "fsync", "close", "replace", "rename", "unlink", "rmdir", "mkdir",
    "chmod", "fchmod", "listdir", "scandir", "lstat", "fstat",
)  # fmt: skip


@dataclass
class ChatRow(Row):
    """A chat row: the archive columns plus escapes and peak RSS over baseline (bytes)."""

    escapes: int = 0
    peak_rss_over_baseline: int = 0

    @property
    def clean(self) -> bool:
        """Every loss, escape and traceback column is 0 (hangs are counted, never timed)."""
        return super().clean and not self.escapes and not self.hangs


# ------------------------------------------------------------------------------- the set-up


def _transport() -> HTTPTransport:
    from llmcore.emulator.engine import Engine

    engine = Engine()

    def handle(request: httpx.Request) -> httpx.Response:
        prepared = engine.anthropic_messages(request.content, "harness")
        prepared.commit()
        headers = {"content-type": "text/event-stream"}
        return httpx.Response(200, headers=headers, content=b"".join(prepared.events))

    client = httpx.Client(transport=httpx.MockTransport(handle))
    return HTTPTransport(
        client=client,
        base_urls={"anthropic": "http://emulator.invalid"},
        api_keys={"anthropic": "harness"},
    )


@dataclass(frozen=True)
class Place:
    """One case's folders."""

    root: Path

    @property
    def workspace(self) -> Path:
        return self.root / "ws"

    @property
    def config(self) -> Path:
        return self.root / "cfg"

    @property
    def outside(self) -> Path:
        return self.root / "outside"

    @property
    def paths(self) -> ProjectPaths:
        return ProjectPaths.for_workspace(self.workspace, app=APP, config=self.config)


def _fresh(root: Path) -> Place:
    place = Place(root)
    if root.exists():
        shutil.rmtree(root)
    place.workspace.mkdir(parents=True)
    (place.workspace / "agent_spec.md").write_text("# Agent spec\n\nv1\n")
    (place.workspace / "app.py").write_text("print('hello')\n")
    place.outside.mkdir()
    (place.outside / "secret.txt").write_text("outside the workspace\n")
    return place


def _lines(*texts: str) -> Callable[[str], str]:
    queue = list(texts)

    def read_line(prompt: str) -> str:
        if not queue:
            raise EOFError
        return queue.pop(0)

    return read_line


def _chat(place: Place, out: Any, read_line: Callable[[str], str]) -> int:
    from rich.console import Console

    console = Console(file=out, force_terminal=True, width=160, highlight=False, no_color=True)
    setup = ChatSetup(
        workspace=place.workspace, config_dir=place.config, provider="anthropic", model=MODEL,
        console=console, read_line=read_line, resume=True,
    )  # fmt: skip
    with _transport() as transport:
        return run_chat(setup, transport, "harness")


def _first_turn(place: Place) -> None:
    """Run and save the first turn (in this process)."""
    with open(os.devnull, "w") as out:
        code = _chat(place, out, _lines("first question"))
    assert code == 0, code


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _user_texts(place: Place) -> list[str] | None:
    """The user texts of the one session on disk; ``None`` if it cannot be read."""
    files = [p for p in place.paths.sessions.glob("*.json") if not p.name.startswith("active_")]
    if len(files) != 1:
        return None
    try:
        record = json.loads(files[0].read_bytes())
        return [
            block["text"]
            for message in record["recent_messages"]
            if message["role"] == "user"
            for block in message["content"]
            if block["type"] == "text"
        ]
    except (ValueError, KeyError, TypeError):
        return None


# --------------------------------------------------------------------------- the step hooks


class _Steps:
    """Counts steps once armed; runs ``act`` right before step ``at`` (1-based)."""

    def __init__(self, at: int | None, act: Callable[[], None]) -> None:
        self.at = at
        self.act = act
        self.count = 0
        self.armed = False

    def step(self) -> None:
        if not self.armed:
            return
        self.count += 1
        if self.count == self.at:
            self.act()


class _CountingFile:
    """A terminal stand-in: each write is a step, then goes to the real file (line-buffered)."""

    def __init__(self, real: Any, steps: _Steps) -> None:
        self.real = real
        self.steps = steps

    def write(self, text: str) -> int:
        if not _refresher():  # the spinner's own redraws come at times, not at steps
            self.steps.step()
        written = self.real.write(text)
        self.real.flush()
        return int(written)

    def flush(self) -> None:
        self.real.flush()

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        return int(self.real.fileno())


def _refresher() -> bool:
    import threading

    return type(threading.current_thread()).__name__ == "_RefreshThread"  # rich.live's


def _patch_os(steps: _Steps) -> None:
    """Make every ``os`` call of :data:`_OS_CALLS` and ``fcntl.flock`` a step (child only)."""

    def wrap(real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            steps.step()
            return real(*args, **kwargs)

        return call

    for name in _OS_CALLS:
        setattr(os, name, wrap(getattr(os, name)))
    fcntl.flock = wrap(fcntl.flock)  # type: ignore[assignment]


def _profile(steps: _Steps) -> None:
    """Make every Python function call, in every thread, a step (child only)."""

    def hook(frame: Any, event: str, arg: Any) -> None:
        if event != "call":
            return
        if _refresher():  # the spinner's redraws come at times, not at steps: not counted
            sys.setprofile(None)
            return
        steps.step()

    sys.setprofile(hook)
    import threading

    threading.setprofile(hook)


def _second_turn(steps: _Steps) -> Callable[[str], str]:
    """Lines: ``second question`` (arming the steps as it is read), then the end of input."""
    fed = False

    def read_line(prompt: str) -> str:
        nonlocal fed
        if fed:
            steps.armed = False
            raise EOFError
        fed = True
        steps.armed = True
        return "second question"

    return read_line


@dataclass
class _Outcome:
    status: int | None
    output: str
    steps: int
    rss: int


def _run_child(place: Place, kind: str, at: int | None) -> _Outcome:
    """Fork a chat that runs the second turn with step ``at`` hooked (``kind``: kill, sigint)."""
    out_path = place.root / "out.txt"
    count_path = place.root / "steps.txt"
    pid = os.fork()
    if pid == 0:  # the chat
        code = 70
        try:
            with open(out_path, "w") as real:
                if kind == "kill":
                    steps = _Steps(at, lambda: os.kill(os.getpid(), signal.SIGKILL))
                    _patch_os(steps)
                else:  # as in a terminal's foreground (a background job ignores SIGINT)
                    signal.signal(signal.SIGINT, signal.default_int_handler)
                    steps = _Steps(at, lambda: signal.raise_signal(signal.SIGINT))
                code = _child_chat(place, real, steps, kind)
            count_path.write_text(str(steps.count))
        except BaseException:  # noqa: BLE001 - the traceback goes into the output
            import traceback

            with open(out_path, "a") as real:
                real.write("Traceback (harness child)\n" + traceback.format_exc())
        os._exit(code)
    status, rss = _wait(pid)
    output = out_path.read_text("utf-8", "replace") if out_path.exists() else ""
    counted = count_path.read_text() if count_path.exists() else "0"
    for path in (out_path, count_path):
        path.unlink(missing_ok=True)
    return _Outcome(status=status, output=output, steps=int(counted), rss=rss)


def _child_chat(place: Place, real: Any, steps: _Steps, kind: str) -> int:
    out = _CountingFile(real, steps)
    read_line = _second_turn(steps)
    if kind == "sigint":
        _profile(steps)
    try:
        return _chat(place, out, read_line)
    finally:
        sys.setprofile(None)


def _wait(pid: int) -> tuple[int | None, int]:
    """Wait for child ``pid``: (status, or ``None`` if it hung and was killed; peak RSS bytes)."""
    deadline = time.monotonic() + SAFETY
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            return status, usage.ru_maxrss * 1024
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            _, _, usage = os.wait4(pid, 0)
            return None, usage.ru_maxrss * 1024
        time.sleep(0.01)  # polling a child's exit; the verdict never depends on this pace


# ------------------------------------------------------------------------------ the judging


def _judge(place: Place, outcome: _Outcome, row: ChatRow, what: str, baseline: int) -> None:
    row.cases += 1
    row.peak_rss_over_baseline = max(row.peak_rss_over_baseline, outcome.rss - baseline)
    if outcome.status is None:
        row.hangs += 1
        row.note(f"{what}: still running after {SAFETY:.0f} s")
    elif "Traceback" in outcome.output:
        row.unexpected += 1
        row.note(f"{what}: traceback: {outcome.output.splitlines()[-1][:120]}")
    elif os.WIFEXITED(outcome.status) and os.WEXITSTATUS(outcome.status) not in (0, 130):
        row.unexpected += 1
        row.note(f"{what}: exit code {os.WEXITSTATUS(outcome.status)}")
    shown = "turn 2 ·" in outcome.output  # the session's second turn (the first ran before)
    texts = _user_texts(place)
    if texts is None:
        row.torn += 1
        row.note(f"{what}: the session file cannot be read")
    else:
        if "first question" not in texts:
            row.lost += 1
            row.note(f"{what}: the first turn is gone")
        if shown and "second question" not in texts:
            row.lost += 1
            row.note(f"{what}: the status line was shown but the turn is not on disk")
        cut = "Interrupted" in outcome.output and not shown
        if cut and "second question" in texts:
            row.torn += 1
            row.note(f"{what}: the cut turn was kept")
    if _snapshot(place.outside) != {"secret.txt": b"outside the workspace\n"}:
        row.escapes += 1
        row.note(f"{what}: a file outside the workspace changed")
    _next_start(place, row, what)


def _next_start(place: Place, row: ChatRow, what: str) -> None:
    said: list[str] = []
    try:
        session = Session.start(
            place.workspace, app=APP, ask=lambda q: True, say=said.append, config=place.config
        )
    except Exception as exc:  # noqa: BLE001 - the harness counts whatever escapes
        row.unexpected += 1
        row.note(f"{what}: the next start raised {exc!r}")
        return
    if not session.resume_block or any("Ignored" in line for line in said):
        row.unexpected += 1
        row.note(f"{what}: the next start did not resume ({said})")
    left = [p.name for p in place.paths.sessions.rglob("*.tmp")]
    if left:
        row.leftovers += 1
        row.note(f"{what}: the next start left {left}")


def _baseline(place: Place, kind: str) -> _Outcome:
    _restore(place)
    return _run_child(place, kind, None)


GONE = 2**22 + 4321
"""A pid above Linux's ``pid_max``: never a running process."""


def _prepared(work: Path, name: str) -> tuple[Place, dict[str, bytes]]:
    """A saved first turn whose pointer is an exited terminal's (so every child resumes it)."""
    place = _fresh(work / name)
    _first_turn(place)
    mine = place.paths.pointer_file(os.getpid())
    mine.rename(place.paths.pointer_file(GONE))
    return place, _snapshot(place.config)


_SAVED: dict[Path, dict[str, bytes]] = {}


def _restore(place: Place) -> None:
    """Put the config folder back as it stood after the first turn."""
    shutil.rmtree(place.config)
    for relative, data in _SAVED[place.root].items():
        target = place.config / relative
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        target.write_bytes(data)
    for folder in (place.config, *place.config.rglob("*")):
        if folder.is_dir():
            folder.chmod(0o700)


def _cases(total: int, stride: int) -> Iterator[int]:
    yield from range(1, total + 2, max(1, stride))
    if stride > 1:
        yield total + 1


def steps_of_a_turn(work: Path, kind: str, *, stride: int = 1) -> ChatRow:
    """Kill (``kind="kill"``) or interrupt (``"sigint"``) the second turn at every ``stride``-th
    step, and once after its last step."""
    label = "SIGKILL at each step of a turn" if kind == "kill" else "Ctrl+C at each step of a turn"
    row = ChatRow(label + (f" (every {stride}th)" if stride > 1 else ""))
    started = time.perf_counter()
    place, saved = _prepared(work, f"steps-{kind}")
    _SAVED[place.root] = saved
    clean = _baseline(place, kind)
    if clean.status is None or not os.WIFEXITED(clean.status) or os.WEXITSTATUS(clean.status):
        row.unexpected += 1
        row.note(f"the clean run ended with {clean.status}: {clean.output[-200:]}")
        return row
    row.outcomes["steps in the turn"] = clean.steps
    seen: set[int] = set()
    for at in _cases(clean.steps, stride):
        if at in seen:
            continue
        seen.add(at)
        _restore(place)
        outcome = _run_child(place, kind, at)
        ended = (
            "killed"
            if outcome.status is not None and os.WIFSIGNALED(outcome.status)
            else ("interrupted" if "Interrupted" in outcome.output else "completed")
        )
        row.outcomes[ended] = row.outcomes.get(ended, 0) + 1
        _judge(place, outcome, row, f"{kind} at step {at}", clean.rss)
    row.seconds = time.perf_counter() - started
    return row


# ------------------------------------------------------------------------ junk in the folder


_JUNK_NAMES = (
    "active_1180591620717411303424.json", "active_².json", "active_٣.json", "active_007.json",
    "active_0.json", "active_-5.json", "active_.json", "active_2147483648.json",
    "active_12 .json", "active_1\n2.json", "active_\udcff.json", "active_99999999999.json",
)  # fmt: skip


def _junk_contents(rnd: random.Random) -> bytes:
    choices: list[Callable[[], bytes]] = [
        lambda: b"[" * rnd.choice((1_000, 100_000)),
        lambda: b"{" * 50_000,
        lambda: b'{"session_id": ' * 5_000,
        lambda: bytes(rnd.randrange(256) for _ in range(rnd.randrange(64))),
        lambda: b'{"session_id": "../../../../etc/passwd"}',
        lambda: b'{"session_id": 1e999}',
        lambda: b'{"session_id": "aaaaaaaaaaaa", "x": 1}',
        lambda: b'{"session_id": "bbbbbbbbbbbb"}',
        lambda: b"\xef\xbb\xbf{}",
        lambda: b"",
        lambda: json.dumps({"session_id": "c" * 12}).encode() + b"\x00",
    ]
    return rnd.choice(choices)()


def _junk_session(rnd: random.Random) -> bytes:
    choices: list[Callable[[], bytes]] = [
        lambda: b"[" * 100_000,
        lambda: b'{"schema_version": 3, "recent_messages": ' + b"[" * 50_000,
        lambda: b'{"schema_version": 3}',
        lambda: bytes(rnd.randrange(256) for _ in range(rnd.randrange(128))),
        lambda: b'{"schema_version": 99}',
    ]
    return rnd.choice(choices)()


def junk_in_the_sessions_folder(work: Path, count: int, seed: int) -> ChatRow:
    """Start sessions over a folder holding a valid session and ``count`` sets of junk files."""
    row = ChatRow("junk in the sessions folder")
    started = time.perf_counter()
    rnd = random.Random(seed)
    place = _fresh(work / "junk")
    _first_turn(place)
    sessions = place.paths.sessions
    valid = {p.name: p.read_bytes() for p in sessions.iterdir() if p.is_file()}
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    for index in range(count):
        for path in sessions.iterdir():
            if path.name not in valid:
                path.unlink()
        junk = _place_junk(sessions, rnd)
        _judge_start(place, junk, row, f"junk set {index}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    row.peak_rss_over_baseline = max(0, peak - baseline)
    row.seconds = time.perf_counter() - started
    return row


def _place_junk(sessions: Path, rnd: random.Random) -> dict[str, bytes]:
    junk: dict[str, bytes] = {}
    for _ in range(rnd.randrange(1, 4)):
        name = rnd.choice(_JUNK_NAMES)
        junk[name] = _junk_contents(rnd)
    if rnd.random() < 0.5:  # a dead terminal's pointer to a junk session file
        junk["active_3999999.json"] = b'{"session_id": "dddddddddddd"}\n'
        junk["dddddddddddd.json"] = _junk_session(rnd)
    for name, data in junk.items():
        with contextlib.suppress(OSError):
            (sessions / name).write_bytes(data)
    return {n: d for n, d in junk.items() if (sessions / n).exists()}


def _judge_start(place: Place, junk: dict[str, bytes], row: ChatRow, what: str) -> None:
    row.cases += 1
    said: list[str] = []
    t0 = time.perf_counter()
    try:
        session = Session.start(
            place.workspace, app=APP, ask=lambda q: True, say=said.append,
            config=place.config, alive=lambda pid: False,
        )  # fmt: skip
    except Exception as exc:  # noqa: BLE001 - counted
        row.unexpected += 1
        row.note(f"{what}: Session.start raised {exc!r}")
        return
    row.hangs += time.perf_counter() - t0 > HANG_SECONDS
    if any("\n" in line for line in said):
        row.unexpected += 1
        row.note(f"{what}: a message of more than one line")
    if not session.resume_block:
        row.lost += 1
        row.note(f"{what}: the valid session was not offered ({said})")
    for name, data in junk.items():
        path = place.paths.sessions / name
        if not path.exists() or path.read_bytes() != data:
            row.torn += 1
            row.note(f"{what}: {name!r} changed")
    if _snapshot(place.outside) != {"secret.txt": b"outside the workspace\n"}:
        row.escapes += 1


def run_all(
    work: Path, *, junk: int, seed: int, stride: int = 1, progress: Callable[[Row], None]
) -> list[ChatRow]:
    """Every chat row, in table order (``progress`` sees each)."""
    rows = []
    for step in (
        lambda: junk_in_the_sessions_folder(work, junk, seed),
        lambda: steps_of_a_turn(work, "kill", stride=1),
        lambda: steps_of_a_turn(work, "sigint", stride=stride),
    ):
        rows.append(step())
        progress(rows[-1])
    return rows
