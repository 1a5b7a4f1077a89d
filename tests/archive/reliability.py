"""The archive's reliability harness: kills, OS-level faults, two savers, reads during saves, and
mutated files (SPEC A7–A9, A12). ``benchmarks/bench_reliability.py`` runs it at full size; the
test suite runs a small sample of each (``tests/archive/test_reliability.py``).

Every scenario returns a :class:`Row` counting, over its cases:

* **torn** — ``conversation.json`` is neither the old nor the new archive's bytes (or a loaded
  state is neither), or a mutated file changed the folder;
* **lost** — a save reported success and its update is not on disk (two savers), or a
  conversation that loaded with its images lost one;
* **deleted_referenced** — an image the ``conversation.json`` on disk names is missing or wrong;
* **leftovers** — after the next successful save, the folder is not exactly the clean archive;
* **unexpected** — any exception other than the documented typed ones;
* **hangs** — a save or open that took longer than :data:`HANG_SECONDS`.

Kills and faults are placed at file-system call indices (every index of a save), so a run's
cases do not depend on timing; only :func:`random_kills` kills after random delays.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import multiprocessing
import os
import random
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llmcore.archive import ArchiveStore, Conversation, ConversationState, Item, encode
from llmcore.archive.fs import FileSystem
from llmcore.archive.images import kept_images
from llmcore.errors import ArchiveBusyError, ArchiveConflictError, ArchiveWriteError
from llmcore.messages import Message

from .helpers import FIXTURE, conversation, images_intact, png, snapshot, turn
from .mutations import Mutator

HANG_SECONDS = 2.0
"""A save or an open slower than this counts as a hang."""


@dataclass
class Row:
    """One scenario's counts (see the module docstring)."""

    scenario: str
    cases: int = 0
    torn: int = 0
    lost: int = 0
    deleted_referenced: int = 0
    leftovers: int = 0
    unexpected: int = 0
    hangs: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    outcomes: dict[str, int] = field(default_factory=dict)
    """How the cases ended, where that varies (e.g. saved / conflict for two savers)."""

    def note(self, text: str) -> None:
        if len(self.notes) < 5:
            self.notes.append(text)

    @property
    def clean(self) -> bool:
        """Whether every loss column is 0 (hangs are timing; the benchmark reports them)."""
        counts = (self.torn, self.lost, self.deleted_referenced, self.leftovers, self.unexpected)
        return not any(counts)


# ------------------------------------------------------------------------------ the versions


def _grown(base: ConversationState, index: int) -> ConversationState:
    conv = Conversation(base)
    conv.end_turn(
        messages=turn(index, image=png(b"grown %d" % index)), provider="anthropic", model="m"
    )
    return conv.state


def _shrunk(base: ConversationState) -> ConversationState:
    conv = Conversation(base)
    conv.compact(
        summary=Message.user("# Conversation so far\nsummary"),
        keep_from=len(base.history) - 4,
        notice=Item.make(id="compacted", type="notice", text="compacted"),
        kept_turn_starts=[1],
    )
    return conv.state


SCENARIOS: dict[str, tuple[ConversationState | None, ConversationState]] = {
    "fresh": (None, conversation(3)),
    "grow": (conversation(3), _grown(conversation(3), 50)),
    "shrink": (conversation(4), _shrunk(conversation(4))),
}
"""Save kinds: (the archive before, or ``None`` for no folder; the conversation saved)."""


def _bytes_of(state: ConversationState) -> bytes:
    return encode(state, kept_images=kept_images(state.history).kept)


class _NoSync(FileSystem):
    """The harness's own set-up and checks skip fsync (only the saves under test make them)."""

    def fsync(self, fd: int) -> None:
        pass

    def fsync_dir(self, path: Path) -> None:
        pass

    def fsync_file(self, path: Path) -> None:
        pass


def _prepare(folder: Path, old: ConversationState | None) -> None:
    if folder.exists():
        shutil.rmtree(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    if old is not None:
        ArchiveStore(folder, fs=_NoSync()).write(old)


def _check_archive(folder: Path, allowed: dict[bytes, ConversationState], row: Row, what: str):
    """Count a torn or image-less archive; return the state on disk (``None`` if no file).

    ``allowed`` maps the acceptable bytes to their state; ``b""`` allows no file at all.
    """
    path = folder / "conversation.json"
    if not path.exists():
        if b"" not in allowed:
            row.torn += 1
            row.note(f"{what}: conversation.json is missing")
        return None
    data = path.read_bytes()
    if data not in allowed:
        row.torn += 1
        row.note(f"{what}: conversation.json is neither version")
        return None
    if not images_intact(folder, data):
        row.deleted_referenced += 1
        row.note(f"{what}: an image it names is missing or wrong")
    return allowed[data]


def _next_save_is_clean(folder: Path, new: ConversationState, clean: dict, row: Row, what: str):
    try:
        ArchiveStore(folder, fs=_NoSync()).write(new)
    except Exception as exc:  # noqa: BLE001 - the harness counts whatever escapes
        row.unexpected += 1
        row.note(f"{what}: the next save raised {exc!r}")
        return
    if snapshot(folder) != clean:
        row.leftovers += 1
        row.note(f"{what}: the next save left {sorted(set(snapshot(folder)) ^ set(clean))}")


def _clean_snapshot(work: Path, new: ConversationState) -> dict[str, bytes]:
    reference = work / "reference" / "agent"
    _prepare(reference, None)
    ArchiveStore(reference, fs=_NoSync()).write(new)
    return snapshot(reference)


# ----------------------------------------------------------------- SIGKILL at every call index


class _Counting(FileSystem):
    """Counts every file-system call; at call ``kill_at`` (1-based) kills its own process."""

    def __init__(self, kill_at: int | None = None) -> None:
        self.count = 0
        self.kill_at = kill_at

    def __getattribute__(self, name: str) -> Any:
        attr = super().__getattribute__(name)
        if name.startswith("_") or name in {"count", "kill_at"} or not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            self.count += 1
            if self.count == self.kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return attr(*args, **kwargs)

        return call


def count_calls(folder: Path, old: ConversationState | None, new: ConversationState) -> int:
    """Return how many file-system calls one save of ``new`` over ``old`` makes."""
    _prepare(folder, old)
    fs = _Counting()
    ArchiveStore(folder, fs=fs).write(new)
    return fs.count


def _run_killed(folder: Path, new: ConversationState, kill_at: int | None, delay: float) -> int:
    """Fork a saver of ``new``; kill it at call ``kill_at`` or after ``delay`` s; its status."""
    pid = os.fork()
    if pid == 0:  # the saver
        code = 0
        try:
            ArchiveStore(folder, fs=_Counting(kill_at)).write(new)
        except BaseException:  # noqa: BLE001 - report through the exit status
            code = 3
        os._exit(code)
    if kill_at is None:
        time.sleep(delay)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    return status


def kill_at_every_call(work: Path, kind: str) -> Row:
    """SIGKILL the saver before each file-system call of one save of scenario ``kind``."""
    old, new = SCENARIOS[kind]
    row = Row(f"SIGKILL at each call: {kind}")
    started = time.perf_counter()
    folder = work / kind / "agent"
    total = count_calls(folder, old, new)
    allowed = _allowed(old, new)
    clean = _clean_snapshot(work / kind, new)
    for n in range(1, total + 2):
        _prepare(folder, old)
        status = _run_killed(folder, new, n, 0.0)
        row.cases += 1
        killed = os.WIFSIGNALED(status)
        if (n <= total) != killed or (not killed and os.WEXITSTATUS(status) != 0):
            row.unexpected += 1
            row.note(f"call {n}: the saver ended with status {status}")
        what = f"{kind}, killed at call {n}"
        state = _check_archive(folder, allowed, row, what)
        if state is not None and ArchiveStore(folder, fs=_NoSync()).load().state != state:
            row.torn += 1
            row.note(f"{what}: loads as something else")
        _next_save_is_clean(folder, new, clean, row, what)
    row.seconds = time.perf_counter() - started
    return row


def random_kills(work: Path, kills: int, seed: int, max_delay: float = 0.01) -> Row:
    """SIGKILL savers after random delays, cycling the three scenarios (timing-dependent)."""
    rnd = random.Random(seed)
    row = Row("SIGKILL at random moments")
    started = time.perf_counter()
    plans = {kind: _random_plan(work, kind) for kind in SCENARIOS}
    for index in range(kills):
        kind = rnd.choice(sorted(SCENARIOS))
        old, new = SCENARIOS[kind]
        allowed, clean = plans[kind]
        folder = work / "random" / "agent"
        _prepare(folder, old)
        _run_killed(folder, new, None, rnd.uniform(0, max_delay))
        row.cases += 1
        what = f"random kill {index} ({kind})"
        _check_archive(folder, allowed, row, what)
        _next_save_is_clean(folder, new, clean, row, what)
    row.seconds = time.perf_counter() - started
    return row


def _random_plan(work: Path, kind: str) -> tuple[dict[bytes, Any], dict[str, bytes]]:
    old, new = SCENARIOS[kind]
    return _allowed(old, new), _clean_snapshot(work / f"random-{kind}", new)


def _allowed(old: ConversationState | None, new: ConversationState) -> dict[bytes, Any]:
    """The archives a kill may leave: the old one (``b""``: no file) or the new one."""
    return {_bytes_of(new): new, (b"" if old is None else _bytes_of(old)): old}


# -------------------------------------------------------------- OS-level faults at every call

_OS_CALLS = (
    "open",
    "write",
    "writev",
    "fsync",
    "close",
    "replace",
    "unlink",
    "rmdir",
    "mkdir",
    "listdir",
    "lstat",
    "fstat",
)


@contextlib.contextmanager
def _os_faults(fail_at: int | None, error: int) -> Iterator[list[str]]:
    """Patch ``os`` (and ``fcntl.flock``) so call ``fail_at`` raises ``error``; yields names."""
    calls: list[str] = []
    originals = {name: getattr(os, name) for name in _OS_CALLS}
    flock = fcntl.flock

    def wrap(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            if len(calls) == fail_at:
                if name == "close":
                    real(*args, **kwargs)  # the descriptor is freed even when close fails
                if name == "write":  # a full disk stops a write half way
                    real(args[0], bytes(args[1])[: len(args[1]) // 2])
                if name == "writev":
                    real(args[0], [b"".join(args[1])[: sum(map(len, args[1])) // 2]])
                raise OSError(error, os.strerror(error) + " (injected)")
            return real(*args, **kwargs)

        return call

    try:
        for name, real in originals.items():
            setattr(os, name, wrap(name, real))
        fcntl.flock = wrap("flock", flock)
        yield calls
    finally:
        for name, real in originals.items():
            setattr(os, name, real)
        fcntl.flock = flock


def os_faults(work: Path, kind: str, error: int) -> Row:
    """Fail each ``os`` call of one save of ``kind`` with ``error``, one index at a time."""
    old, new = SCENARIOS[kind]
    row = Row(f"{errno.errorcode[error]} at each os call: {kind}")
    started = time.perf_counter()
    folder = work / f"faults-{kind}" / "agent"
    clean = _clean_snapshot(work / f"faults-{kind}", new)
    old_bytes = None if old is None else _bytes_of(old)
    n = 0
    while True:
        n += 1
        _prepare(folder, old)
        before = snapshot(folder)
        with _os_faults(n, error) as calls:
            outcome = _save_outcome(folder, new)
        failed = len(calls) >= n
        row.cases += failed
        what = (
            f"{kind}, {errno.errorcode[error]} at os call {n} ({calls[n - 1] if failed else '-'})"
        )
        if outcome == "raised":
            if snapshot(folder) != before:
                row.torn += 1
                row.note(f"{what}: raised but the archive changed")
        elif outcome == "written":
            data = (folder / "conversation.json").read_bytes()
            if data != _bytes_of(new) or not images_intact(folder, data):
                row.deleted_referenced += not images_intact(folder, data)
                row.torn += data not in (_bytes_of(new), old_bytes)
                row.note(f"{what}: returned but the new archive is not whole")
        else:
            row.unexpected += 1
            row.note(f"{what}: {outcome}")
        _next_save_is_clean(folder, new, clean, row, what)
        if not failed:
            break
    row.seconds = time.perf_counter() - started
    return row


def _save_outcome(folder: Path, new: ConversationState) -> str:
    try:
        ArchiveStore(folder).write(new)
    except ArchiveWriteError:
        return "raised"
    except Exception as exc:  # noqa: BLE001 - the harness counts whatever escapes
        return f"unexpected {exc!r}"
    return "written"


# ------------------------------------------------------------------ two processes, one folder


def _saver_process(folder: str, who: int, rounds: int, barrier: Any, results: Any) -> None:
    """Each round: open, wait for the other, change, wait, save at once; report the outcome."""
    for index in range(rounds):
        conv = ArchiveStore(Path(folder)).open()
        barrier.wait()
        if who == 0:
            image = png(b"round %d" % index)
            conv.end_turn(messages=turn(1000 + index, image=image), provider="p", model="m")
        elif len(conv.history) > 8:
            conv.compact(  # the other shrinks: its save removes images the first one may need
                summary=Message.user(f"# Conversation so far\nround {index}"),
                keep_from=len(conv.history) - 4,
                notice=Item.make(id=f"c{index}", type="notice", text="compacted"),
                kept_turn_starts=[1],
            )
        else:
            conv.set_queued([f"round {index}"])
        barrier.wait()
        started = time.perf_counter()
        try:
            ArchiveStore(Path(folder)).save(conv)
            outcome = "saved"
        except ArchiveConflictError:
            outcome = "conflict"
        except ArchiveBusyError:
            outcome = "busy"
        except Exception as exc:  # noqa: BLE001 - reported to the parent
            outcome = f"unexpected {exc!r}"
        took = time.perf_counter() - started
        results.put((index, who, outcome, took, _bytes_of(conv.state)))
        barrier.wait()


def two_savers(work: Path, rounds: int) -> Row:
    """Two processes open the same archive and save different changes at once, ``rounds`` times."""
    row = Row("2 processes save 1 folder")
    started = time.perf_counter()
    folder = work / "two" / "agent"
    _prepare(folder, conversation(2))
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(3)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_saver_process, args=(str(folder), who, rounds, barrier, results))
        for who in (0, 1)
    ]
    for proc in procs:
        proc.start()
    for _ in range(rounds):
        barrier.wait()  # both opened
        barrier.wait()  # both changed; they save now
        got = [results.get(timeout=120) for _ in procs]
        _judge_round(folder, got, row)
        barrier.wait()
    for proc in procs:
        proc.join(60)
    row.seconds = time.perf_counter() - started
    return row


def _judge_round(folder: Path, got: list[tuple], row: Row) -> None:
    row.cases += 1
    index = got[0][0]
    saved = [data for _, _, outcome, _, data in got if outcome == "saved"]
    for _, who, outcome, took, _ in got:
        row.outcomes[outcome] = row.outcomes.get(outcome, 0) + 1
        if outcome.startswith("unexpected"):
            row.unexpected += 1
            row.note(f"round {index}, process {who}: {outcome}")
        row.hangs += took > HANG_SECONDS
    disk = (folder / "conversation.json").read_bytes()
    if len(saved) == 2 and saved[0] != saved[1]:
        row.lost += 1
        row.note(f"round {index}: both saves reported success")
    elif saved and disk != saved[0]:
        row.lost += 1
        row.note(f"round {index}: the successful save is not on disk")
    if disk not in {data for *_, data in got} and not saved:
        pass  # neither saved (both conflicted with an earlier round's state): nothing changed
    if not images_intact(folder, disk):
        row.deleted_referenced += 1
        row.note(f"round {index}: an image conversation.json names is missing")


# ---------------------------------------------------------------------- reads during saves


def _writer_process(folder: str, versions: list[ConversationState], stop: Any) -> None:
    """Save the versions in turn, pausing up to 2 ms between saves.

    An agent saves once per turn; a save loop with no pause at all keeps the lock nearly all
    the time and readers then wait until their lock timeout (a busy notice, never a half read).
    """
    store = ArchiveStore(Path(folder))
    rnd = random.Random(os.getpid())
    index = 0
    while not stop.is_set():
        index = (index + 1) % len(versions)
        store.write(versions[index])
        time.sleep(rnd.uniform(0, 0.002))


def reads_during_saves(work: Path, reads: int) -> Row:
    """One process saves versions in a loop; this one opens the archive ``reads`` times."""
    row = Row("opens during saves")
    started = time.perf_counter()
    folder = work / "reads" / "agent"
    versions = [conversation(k + 1, image_size=4096 + 512 * k) for k in range(6)]
    versions += [_shrunk(conversation(6))]
    _prepare(folder, versions[0])
    ctx = multiprocessing.get_context("fork")
    stop = ctx.Event()
    writer = ctx.Process(target=_writer_process, args=(str(folder), versions, stop))
    writer.start()
    try:
        for index in range(reads):
            t0 = time.perf_counter()
            try:
                loaded = ArchiveStore(folder).load()
            except Exception as exc:  # noqa: BLE001 - counted
                row.unexpected += 1
                row.note(f"read {index}: {exc!r}")
                continue
            row.hangs += time.perf_counter() - t0 > HANG_SECONDS
            row.cases += 1
            if loaded.notices:
                row.unexpected += 1
                row.note(f"read {index}: {loaded.notices[0].reason}")
            elif loaded.state not in versions:
                row.torn += 1
                row.note(f"read {index}: the loaded conversation is no saved version")
    finally:
        stop.set()
        writer.join(60)
    row.seconds = time.perf_counter() - started
    return row


# ------------------------------------------------------------------- mutated conversation.json


def mutated_opens(work: Path, count: int, seed: int, save_every: int = 10) -> Row:
    """Open ``count`` mutated files; every ``save_every``-th is also saved back untouched."""
    row = Row("mutated conversation.json")
    started = time.perf_counter()
    base = work / "mutations" / "base"
    _prepare(base, conversation(2, image_size=256))
    mutator = Mutator(
        json.loads(FIXTURE.read_bytes()), json.loads((base / "conversation.json").read_bytes())
    )
    rnd = random.Random(seed)
    folder = work / "mutations" / "case"
    shutil.copytree(base, folder)
    target = folder / "conversation.json"
    for index in range(count):
        data = mutator.mutate(rnd)
        target.unlink()
        target.write_bytes(data)
        row.cases += 1
        t0 = time.perf_counter()
        try:
            conv = ArchiveStore(folder).open()
            if index % save_every == 0 and conv.keeps_unreadable:
                before = snapshot(folder, lock=True)
                ArchiveStore(folder).save(conv)
                if snapshot(folder, lock=True) != before:
                    row.torn += 1
                    row.note(f"mutation {index}: saving an unreadable archive changed it")
        except Exception as exc:  # noqa: BLE001 - counted
            row.unexpected += 1
            row.note(f"mutation {index}: {exc!r}")
        row.hangs += time.perf_counter() - t0 > HANG_SECONDS
        if target.read_bytes() != data:
            row.torn += 1
            row.note(f"mutation {index}: opening changed conversation.json")
    row.seconds = time.perf_counter() - started
    return row


def run_all(
    work: Path,
    *,
    random_count: int,
    rounds: int,
    reads: int,
    mutations: int,
    seed: int,
    progress: Callable[[Row], None] = lambda row: None,
) -> list[Row]:
    """Run every scenario; return the rows in table order (``progress`` sees each)."""
    steps: list[Callable[[], Row]] = [
        lambda kind=kind: kill_at_every_call(work, kind) for kind in SCENARIOS
    ]
    if random_count:
        steps.append(lambda: random_kills(work, random_count, seed))
    steps.extend(
        lambda kind=kind, error=error: os_faults(work, kind, error)
        for error in (errno.ENOSPC, errno.EIO, errno.EACCES)
        for kind in SCENARIOS
    )
    steps.append(lambda: two_savers(work, rounds))
    steps.append(lambda: reads_during_saves(work, reads))
    steps.append(lambda: mutated_opens(work, mutations, seed))
    rows = []
    for step in steps:
        rows.append(step())
        progress(rows[-1])
    return rows
