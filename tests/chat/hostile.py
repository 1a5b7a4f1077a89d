"""The chat surface's rows of the reliability harness: hostile tool calls and placed files.

Each case runs in a forked child (so a hang is caught and killed, and its memory is its own):
the child resets its peak RSS (``/proc/self/clear_refs``), makes the call, and reports the
result's summary and its peak RSS over the RSS it started from. Rows (``bench_reliability.py``
runs the full counts; ``tests/chat/test_hostile_harness.py`` a sample):

* ``tools: <category>`` — every case of a category (paths, links, special files, sizes,
  encodings, arguments, deep trees) × every tool (``list_files``, ``read_file``,
  ``write_file``, ``view_image``), each in a fresh workspace beside an ``outside`` folder;
* ``tools: fuzzed paths`` — random paths built of ``..``, ``.``, separators, NULs, surrogates,
  long names and links, × the three tools that take a path;
* ``placed files`` — a FIFO, socket, device, sparse 3 GiB file and folder where a session file,
  pointer, ``conversation.json``, request file or tracked file is read, and ``llmcore verify``.

Columns: cases; escapes (an outside file read into a result, or changed, or created); lost
(a workspace file changed by a refused call, or a reported write not on disk); unexpected
(the call raised: a traceback); hangs (no answer in :data:`HANG_SECONDS`); peak RSS over
baseline (MiB, the largest of the row). Every column but the last must be 0, and the last
under :data:`RSS_LIMIT_MIB`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import random
import select
import shutil
import signal
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llmcore.chat.tools import MAX_READ, WorkspaceTools
from tests.special_files import (
    make_deep_tree,
    make_fifo,
    make_null_device,
    make_sparse,
    remove_deep_tree,
    unblock,
    unix_socket,
)

HANG_SECONDS = 20.0
"""A case that has not answered after this long is a hang (the fixed code answers in ms)."""
RSS_LIMIT_MIB = 64.0
"""Most peak RSS over baseline any hostile case may take."""
SECRET = b"OUTSIDE-SECRET-7f3a"
KEEP = b"keep me\n"
TOOLS = ("list_files", "read_file", "write_file", "view_image")
GIB = 1024**3


@dataclass
class HostileRow:
    """One row of the chat-surface table."""

    scenario: str
    cases: int = 0
    escapes: int = 0
    lost: int = 0
    unexpected: int = 0
    hangs: int = 0
    peak_rss_mib: float = 0.0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        """Whether every loss, escape, hang and traceback column is 0 and RSS is in bounds."""
        bad = self.escapes + self.lost + self.unexpected + self.hangs
        return bad == 0 and self.peak_rss_mib < RSS_LIMIT_MIB

    def note(self, what: str) -> None:
        if len(self.notes) < 20:
            self.notes.append(what)


# --- running one call in a child -------------------------------------------------------------


def _status(key: str) -> int:
    """``VmRSS`` / ``VmHWM`` of this process in bytes (0 where /proc has none)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _reset_peak() -> int:
    """Reset this process's peak RSS to its RSS now (Linux ``clear_refs`` 5); return that."""
    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")
    return _status("VmRSS")


def in_child(call: Callable[[], dict[str, Any]], fifos: tuple[Path, ...] = ()) -> dict[str, Any]:
    """Run ``call()`` in a forked child; return its dict plus ``peak`` (bytes) or the failure.

    The answer has ``raised`` (the child's exception, a traceback) or ``hang`` (no answer in
    :data:`HANG_SECONDS`: the child is killed and the ``fifos`` unblocked).
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns, whatever happens
        try:
            os.close(read_end)
            try:
                base = _reset_peak()
                answer = call()
                answer["peak"] = max(0, _status("VmHWM") - base)
            except BaseException as exc:  # reported, counted as a traceback
                answer = {"raised": f"{type(exc).__name__}: {exc!r}"[:300]}
            data = json.dumps(answer).encode()
            while data:
                data = data[os.write(write_end, data) :]
        finally:
            os._exit(0)
    os.close(write_end)
    try:
        return _collect(pid, read_end, fifos)
    finally:
        os.close(read_end)


def _collect(pid: int, read_end: int, fifos: tuple[Path, ...]) -> dict[str, Any]:
    chunks = []
    deadline = time.monotonic() + HANG_SECONDS
    while True:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([read_end], [], [], max(0.0, left))
        if not ready:
            os.kill(pid, signal.SIGKILL)
            for fifo in fifos:
                unblock(fifo)
            os.waitpid(pid, 0)
            return {"hang": True}
        chunk = os.read(read_end, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.waitpid(pid, 0)
    data = b"".join(chunks)
    return json.loads(data) if data else {"raised": "the child died without an answer"}


# --- the workspace of one case ---------------------------------------------------------------


@dataclass
class Place:
    """A fresh workspace beside an ``outside`` folder holding the secret."""

    root: Path
    fds: list[int] = field(default_factory=list)

    @property
    def ws(self) -> Path:
        return self.root / "ws"

    @property
    def outside(self) -> Path:
        return self.root / "outside"

    def make(self) -> None:
        self.ws.mkdir(parents=True)
        (self.outside / "dir").mkdir(parents=True)
        (self.outside / "secret.txt").write_bytes(SECRET)
        (self.outside / "dir" / "secret.txt").write_bytes(SECRET)
        (self.ws / "keep.txt").write_bytes(KEEP)
        (self.ws / "sub").mkdir()

    def outside_state(self) -> dict[str, bytes]:
        out = {}
        for path in sorted(self.outside.rglob("*")):
            info = os.lstat(path)
            out[str(path)] = path.read_bytes() if stat.S_ISREG(info.st_mode) else b"<dir>"
        return out

    def remove(self) -> None:
        for fd in self.fds:
            os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            if (self.ws / "d").is_dir():
                remove_deep_tree(self.ws)
        shutil.rmtree(self.root, ignore_errors=True)


Setup = Callable[[Place], tuple[dict[str, Any], tuple[Path, ...]]]
"""Places something hostile; returns the tool arguments and the FIFOs to unblock on a hang."""


def _target(path: str, content: Any = "written") -> dict[str, Any]:
    return {"path": path, "content": content}


def _fifo(place: Place) -> tuple[dict[str, Any], tuple[Path, ...]]:
    return _target("pipe"), (make_fifo(place.ws / "pipe"),)


def _fifo_with_reader(place: Place) -> tuple[dict[str, Any], tuple[Path, ...]]:
    fifo = make_fifo(place.ws / "pipe")
    place.fds.append(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))  # held through the case
    return _target("pipe"), (fifo,)


def _device(place: Place, minor: int) -> tuple[dict[str, Any], tuple[Path, ...]]:
    path = place.ws / "dev"
    with contextlib.suppress(OSError):
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, minor))
    if not path.exists() and not make_null_device(path):
        path.write_bytes(b"")  # no device nodes here: the case still runs, on a plain file
    return _target("dev"), ()


def _hard_link(place: Place) -> tuple[dict[str, Any], tuple[Path, ...]]:
    os.link(place.outside / "secret.txt", place.ws / "hl.txt")
    return _target("hl.txt"), ()


def _symlink(target: str, name: str = "sl", then: str = "") -> Setup:
    def setup(place: Place) -> tuple[dict[str, Any], tuple[Path, ...]]:
        os.symlink(target.format(out=place.outside, ws=place.ws), place.ws / name)
        return _target(name + then), ()

    return setup


def _file(name: str, data: bytes | int) -> Setup:
    def setup(place: Place) -> tuple[dict[str, Any], tuple[Path, ...]]:
        path = place.ws / name
        if isinstance(data, int):
            make_sparse(path, data)
        else:
            path.write_bytes(data)
        return _target(name), ()

    return setup


def _arguments(arguments: Any) -> Setup:
    return lambda place: (arguments, ())


def _path(path: str, content: Any = "written") -> Setup:
    def setup(place: Place) -> tuple[dict[str, Any], tuple[Path, ...]]:
        return _target(path.format(out=place.outside, ws=place.ws), content), ()

    return setup


def _deep(place: Place) -> tuple[dict[str, Any], tuple[Path, ...]]:
    make_deep_tree(place.ws, 1200)
    return _target("d/" * 70 + "f.txt"), ()


def _socket_case(place: Place) -> tuple[dict[str, Any], tuple[Path, ...]]:
    return _target("sock"), ()


CASES: dict[str, list[tuple[str, Setup]]] = {
    "paths": [
        ("../outside/secret.txt", _path("../outside/secret.txt")),
        ("absolute", _path("{out}/secret.txt")),
        ("sub/../../", _path("sub/../../outside/secret.txt")),
        ("backslashes", _path("..\\outside\\secret.txt")),
        ("drive letter", _path("C:secret.txt")),
        ("empty", _path("")),
        ("dot", _path(".")),
        ("NUL", _path("keep.txt\0x")),
        ("5,000-char name", _path("x" * 5000)),
        ("3,000 folders", _path("d/" * 3000 + "f")),
        ("into a file", _path("keep.txt/inner")),
        ("folder", _path("sub")),
    ],
    "links": [
        ("symlink out", _symlink("{out}/secret.txt")),
        ("symlinked folder", _symlink("{out}/dir", then="/secret.txt")),
        ("dangling symlink", _symlink("{out}/missing")),
        ("symlink loop", _symlink("sl")),
        ("symlink to /dev/zero", _symlink("/dev/zero")),
        ("hard link out", _hard_link),
    ],
    "special files": [
        ("FIFO", _fifo),
        ("FIFO with a reader", _fifo_with_reader),
        ("socket", _socket_case),
        ("char device (null)", lambda place: _device(place, 3)),
        ("char device (zero)", lambda place: _device(place, 5)),
    ],
    "sizes": [
        ("sparse 3 GiB", _file("big.bin", 3 * GIB)),
        ("MAX_READ + 1", _file("over.bin", MAX_READ + 1)),
        ("MAX_READ", _file("edge.bin", MAX_READ)),
        ("empty", _file("empty.txt", b"")),
        ("huge content", _path("big.txt", "x" * (8 << 20))),
    ],
    "encodings": [
        ("content lone surrogate", _path("s.txt", "\ud800")),
        ("content escaped byte", _path("s.txt", "ok\udcff")),
        ("content NUL", _path("s.txt", "a\0b")),
        ("non-UTF-8 bytes", _file("bin.txt", b"\xff\xfe\x00\xc3")),
        ("non-UTF-8 name", _file(os.fsdecode(b"caf\xe9.txt"), b"x")),
        ("path lone surrogate", _path("\ud800")),
    ],
    "arguments": [
        ("path int", _arguments({"path": 5, "content": "x"})),
        ("path null", _arguments({"path": None})),
        ("path list", _arguments({"path": ["keep.txt"]})),
        ("no arguments", _arguments({})),
        ("content int", _arguments({"path": "n.txt", "content": 5})),
        ("not an object", _arguments(["keep.txt"])),
    ],
    "deep trees": [("1,200 levels", _deep)],
}


@contextlib.contextmanager
def _socket_if(case: str, place: Place) -> Iterator[None]:
    if case == "socket":
        with unix_socket(place.ws / "sock"):
            yield
    else:
        yield


def _summary(tools: WorkspaceTools, name: str, arguments: Any) -> dict[str, Any]:
    out = tools.call(name, arguments)
    content = out.content if isinstance(out.content, bytes) else str(out.content).encode()
    images = b"".join(image.data for image in out.images)
    return {
        "error": out.is_error,
        "secret": SECRET in content or SECRET in images,
        "text": content[:160].decode("utf-8", "replace"),
    }


def _judge(
    row: HostileRow,
    place: Place,
    label: str,
    arguments: Any,
    got: dict[str, Any],
    outside: dict[str, bytes],
) -> None:
    row.cases += 1
    if got.get("hang"):
        row.hangs += 1
        row.note(f"{label}: hang")
        return
    if "raised" in got:
        row.unexpected += 1
        row.note(f"{label}: raised {got['raised']}")
        return
    row.peak_rss_mib = max(row.peak_rss_mib, got["peak"] / (1 << 20))
    if got["secret"] or place.outside_state() != outside:
        row.escapes += 1
        row.note(f"{label}: escaped ({got['text']})")
    if (place.ws / "keep.txt").read_bytes() != KEEP and not _targets_keep(arguments):
        row.lost += 1
        row.note(f"{label}: keep.txt changed")
    if not got["error"] and _wrote(label, arguments) and not _on_disk(place, arguments):
        row.lost += 1
        row.note(f"{label}: reported written but not on disk")


def _targets_keep(arguments: Any) -> bool:
    return isinstance(arguments, dict) and str(arguments.get("path", "")).startswith("keep.txt")


def _wrote(label: str, arguments: Any) -> bool:
    return label.endswith("write_file") and isinstance(arguments, dict)


def _on_disk(place: Place, arguments: dict[str, Any]) -> bool:
    path = place.ws / arguments["path"]
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False  # a write "into" a FIFO or device is not on disk (and never read here)
        return path.read_bytes() == arguments["content"].encode("utf-8")
    except (OSError, ValueError):
        return False


def run_case(work: Path, row: HostileRow, case: str, setup: Setup, tools: tuple[str, ...]):
    """Run one hostile case under each of ``tools``, each in a fresh workspace."""
    for tool in tools:
        place = Place(work / f"case-{row.cases}")
        place.make()
        outside = place.outside_state()
        try:
            with _socket_if(case, place):
                arguments, fifos = setup(place)
                workspace = WorkspaceTools(place.ws)
                got = in_child(functools.partial(_summary, workspace, tool, arguments), fifos)
            _judge(row, place, f"{case} × {tool}", arguments, got, outside)
        finally:
            place.remove()


def tool_rows(work: Path, progress: Callable[[HostileRow], None] = lambda row: None):
    """Every fixed case of :data:`CASES` × every tool: one row per category."""
    rows = []
    for category, cases in CASES.items():
        row = HostileRow(scenario=f"tools: {category}")
        started = time.perf_counter()
        for case, setup in cases:
            run_case(work, row, case, setup, TOOLS)
        row.seconds = time.perf_counter() - started
        progress(row)
        rows.append(row)
    return rows


_PARTS = ("..", ".", "", "sub", "keep.txt", "outside", "secret.txt", "sl", "hl.txt", "\0")
_ODD = ("\ud800", "\udcff", "x" * 300, "C:", "~", "%2e%2e", "\\..", "dir")


def _fuzzed_path(rng: random.Random) -> str:
    parts = [rng.choice(_PARTS if rng.random() < 0.8 else _ODD) for _ in range(rng.randint(1, 7))]
    path = rng.choice(("/", "\\", "//")).join(parts)
    return ("/" + path) if rng.random() < 0.1 else path


def _fuzz_setup(path: str) -> Setup:
    def setup(place: Place) -> tuple[dict[str, Any], tuple[Path, ...]]:
        os.symlink(place.outside, place.ws / "sl")
        os.link(place.outside / "secret.txt", place.ws / "hl.txt")
        return _target(path), ()

    return setup


def fuzzed_paths(work: Path, count: int, seed: int) -> HostileRow:
    """``count`` random hostile paths (with a symlink and a hard link out in the workspace)."""
    rng = random.Random(seed)
    row = HostileRow(scenario="tools: fuzzed paths")
    started = time.perf_counter()
    for _ in range(count):
        path = _fuzzed_path(rng)
        run_case(work, row, repr(path)[:60], _fuzz_setup(path), (rng.choice(TOOLS[1:]),))
    row.seconds = time.perf_counter() - started
    return row


# --- placed files: what llmcore reads that someone else can put there -------------------------

READERS = (
    "session file",
    "pointer",
    "conversation.json",
    "llmcore verify",
    "request file",
    "tracked file",
)
PLACED_KINDS = (
    "FIFO",
    "socket",
    "char device (null)",
    "char device (zero)",
    "sparse 3 GiB",
    "folder",
    "symlink to /dev/zero",
)


def _place(path: Path, kind: str) -> None:
    """Put ``kind`` at ``path`` (a socket is bound by the caller)."""
    if kind == "FIFO":
        make_fifo(path)
    elif kind.startswith("char device"):
        minor = 3 if "null" in kind else 5
        try:
            os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, minor))
        except OSError:
            make_fifo(path)  # no device nodes here: a FIFO is the other never-ending file
    elif kind == "sparse 3 GiB":
        make_sparse(path, 3 * GIB)
    elif kind == "folder":
        path.mkdir()
    elif kind == "symlink to /dev/zero":
        os.symlink("/dev/zero", path)


def _readers(root: Path) -> dict[str, tuple[Path, Callable[[], Any]]]:
    """Each reader of a placed file: the path it reads and the call (in the child)."""
    from typer.testing import CliRunner

    from llmcore.archive import ArchiveStore
    from llmcore.cli import app
    from llmcore.requestfile import load_request_file
    from llmcore.session.drift import build_manifest
    from llmcore.session.paths import ProjectPaths
    from llmcore.session.store import SessionStore

    sessions = root / "sessions"
    sessions.mkdir()
    store = SessionStore(ProjectPaths(sessions=sessions))
    archive = root / "archive"
    archive.mkdir()

    def verify() -> Any:
        result = CliRunner().invoke(app, ["verify", str(archive)])
        if result.exit_code != 2 or result.stderr.count("\n") != 1:
            raise AssertionError(f"verify: exit {result.exit_code}: {result.stderr!r}")
        return result.stderr

    return {
        "session file": (
            sessions / "abcdef012345.json",
            lambda: store.load("abcdef012345"),
        ),
        "pointer": (sessions / "active_7.json", lambda: store.read_pointer(7)),
        "conversation.json": (archive / "conversation.json", ArchiveStore(archive).load),
        "llmcore verify": (archive / "conversation.json", verify),
        "request file": (root / "request.json", lambda: load_request_file(root / "request.json")),
        "tracked file": (root / "agent_spec.md", lambda: build_manifest(root, ["agent_spec.md"])),
    }


def _typed(call: Callable[[], Any]) -> Callable[[], dict[str, Any]]:
    """``call()`` as a child's answer: a typed error (an LLMCoreError) is an answer too."""
    from llmcore.errors import LLMCoreError

    def run() -> dict[str, Any]:
        try:
            outcome = repr(call())[:160]
        except LLMCoreError as exc:
            outcome = f"{type(exc).__name__}: {exc}"[:160]
        return {"error": True, "secret": False, "text": outcome}

    return run


def placed_files(work: Path) -> HostileRow:
    """Every reader of a placed file × every kind of hostile file put where it reads."""
    row = HostileRow(scenario="placed files")
    started = time.perf_counter()
    for kind in PLACED_KINDS:
        for reader in READERS:
            place = Place(work / f"placed-{row.cases}")
            place.make()
            try:
                path, call = _readers(place.root)[reader]
                with _socket_or(kind, path):
                    _place(path, kind)
                    fifos = (path,) if kind == "FIFO" else ()
                    got = in_child(_typed(call), fifos)
                _judge(row, place, f"{kind} × {reader}", {}, got, place.outside_state())
            finally:
                place.remove()
    row.seconds = time.perf_counter() - started
    return row


@contextlib.contextmanager
def _socket_or(kind: str, path: Path) -> Iterator[None]:
    if kind == "socket":
        with unix_socket(path):
            yield
    else:
        yield


def run_all(
    work: Path,
    *,
    paths: int,
    seed: int,
    progress: Callable[[HostileRow], None] = lambda row: None,
) -> list[HostileRow]:
    """Every chat-surface row: the tool categories, ``paths`` fuzzed paths, placed files."""
    rows = tool_rows(work, progress)
    for step in (lambda: fuzzed_paths(work, paths, seed), lambda: placed_files(work)):
        row = step()
        progress(row)
        rows.append(row)
    return rows
