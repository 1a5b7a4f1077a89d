r"""The built-in workspace tools of ``llmcore chat``: list, read, write and view files (SPEC S6).

The four tools are the ones the emulator's built-in agent script calls
(:data:`llmcore.emulator.AGENT_TOOLS`: ``list_files``, ``read_file``, ``write_file``,
``view_image``), run over a real folder. Every path is confined to the workspace: it must be
relative with no ``..`` component (:func:`llmcore.session.safe_relative`) and is opened one
component at a time without following symlinks (``O_NOFOLLOW``), so a symlink anywhere on the
path — inside or pointing out of the workspace — is refused. A refused path, a missing file, a
file that is not what the tool handles, or bad arguments give an error *result* the model sees;
the tools never raise.

* ``read_file`` / ``view_image`` read through :func:`llmcore.safeio.read_regular`: a FIFO,
  device, socket or folder is refused without being opened; a file over :data:`MAX_READ` bytes
  is refused by its size before any byte is read (a sparse 3 GiB file costs one ``fstat``); a
  file with more than one hard link is refused, since its other name may be outside the
  workspace and reading it would show an outside file.
* ``write_file`` writes a temporary file in the target's folder and renames it over the target,
  so an existing hard link is replaced, never written through (the file it shared its bytes
  with, perhaps outside, is unchanged). It replaces only a regular file: a FIFO, device,
  socket, symlink or folder in its place is refused, never opened. Content that is not
  encodable text (a lone surrogate) is an error result.
* ``list_files`` lists regular files (not symlinks), skipping folders whose name starts with
  ``.`` (``.git``, ``.venv``), at most :data:`MAX_LISTED` lines. It walks with one open folder
  descriptor per level, no recursion of Python's and no path longer than a name, down to
  :data:`MAX_DEPTH` folders (deeper ones are not listed, and a last line says so); it looks at
  no more than :data:`MAX_SCANNED` entries. A name that is not UTF-8 is shown with backslash
  escapes (``\xff``).

It leaves out running commands and deleting files.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any, Final

from llmcore._words import plural
from llmcore.emulator import AGENT_TOOLS
from llmcore.errors import FileRefusedError
from llmcore.messages import Image
from llmcore.runner import FunctionTool, ToolOutput
from llmcore.safeio import file_kind
from llmcore.session import safe_relative
from llmcore.session.drift import read_inside

__all__ = ["MAX_DEPTH", "MAX_LISTED", "MAX_READ", "MAX_SCANNED", "WorkspaceTools"]

MAX_LISTED: Final = 2000
"""Most files ``list_files`` names."""
MAX_READ: Final = 1 << 20
"""Most bytes ``read_file`` and ``view_image`` read (1 MiB); a larger file is refused by its
size, before any byte is read."""
MAX_DEPTH: Final = 64
"""Deepest folder level ``list_files`` enters and ``write_file`` creates (the workspace is 0)."""
MAX_SCANNED: Final = 100_000
"""Most folder entries ``list_files`` looks at; past them the listing ends with a note."""

_FLAGS: Final = os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
_FOLDER: Final = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _FLAGS
_MIME: Final = {b"\x89PNG": "image/png", b"\xff\xd8\xff": "image/jpeg", b"GIF8": "image/gif"}


def _error(text: str) -> ToolOutput:
    return ToolOutput(content=text, is_error=True)


def _shown(name: str) -> str:
    """``name`` as text: bytes that are not UTF-8 and lone surrogates as backslash escapes."""
    try:
        raw = name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate outside U+DC80..U+DCFF
        raw = name.encode("utf-8", "backslashreplace")
    return raw.decode("utf-8", "backslashreplace")


def _os_error(verb: str, relative: PurePosixPath, exc: OSError) -> ToolOutput:
    """The error result of a failed read or write of ``relative``."""
    if isinstance(exc, FileRefusedError):
        return _error(f"refused: {_shown(exc.location or str(relative))}: {exc.message}")
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return _error(f"no such file: {_shown(str(relative))}")
    if exc.errno == errno.ELOOP:
        return _error(f"refused: {_shown(str(relative))} is or goes through a symbolic link")
    return _error(f"cannot {verb} {_shown(str(relative))}: {exc.strerror or exc}")


class WorkspaceTools:
    """The four tools over ``workspace``; ``on_call(name, path)`` sees each call first.

    Args:
        workspace: The folder the tools may touch.
        on_call: Called with the tool name and its path argument (``""`` for ``list_files``)
            before the tool runs (the chat shows it; tests may hold the turn there).
    """

    def __init__(self, workspace: Path, on_call: Callable[[str, str], None] | None = None) -> None:
        self.workspace = workspace.resolve()
        self.on_call = on_call
        self.touched: set[str] = set()
        """Workspace-relative paths read or written (the session tracks their drift)."""

    def function_tools(self) -> list[FunctionTool]:
        """Return the tools for a :class:`~llmcore.runner.Runner`, in AGENT_TOOLS order."""
        return [
            FunctionTool.create(t.name, t.description, dict(t.input_schema), self._bind(t.name))
            for t in AGENT_TOOLS
        ]

    def _bind(self, name: str) -> Callable[[dict[str, Any]], ToolOutput]:
        return lambda arguments: self.call(name, arguments)

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        """Run tool ``name`` with parsed ``arguments`` (errors are results, never raised)."""
        if not isinstance(arguments, dict):
            return _error(f"the arguments must be a JSON object, not {type(arguments).__name__}")
        if name == "list_files":
            self._announce(name, "")
            return self.list_output()
        path = arguments.get("path")
        if not isinstance(path, str):
            return _error("missing argument: path")
        self._announce(name, path)
        relative = safe_relative(path)
        if relative is None:
            return _error(f"refused path outside the workspace: {_shown(path)}")
        if name == "write_file":
            content = arguments.get("content")
            if not isinstance(content, str):
                return _error("missing argument: content")
            return self.write_file(relative, content)
        if name in ("read_file", "view_image"):
            return self.read_file(relative, image=name == "view_image")
        return _error(f"unknown tool: {name}")

    def _announce(self, name: str, path: str) -> None:
        if self.on_call is not None:
            self.on_call(name, path)

    def list_output(self) -> ToolOutput:
        """Return :meth:`list_files` as a result (an error result if the workspace is gone)."""
        try:
            return ToolOutput(content=self.list_files())
        except OSError as exc:
            return _error(f"cannot list the workspace: {exc.strerror or exc}")

    def list_files(self) -> str:
        """Return one ``path<TAB>size`` line per regular file, sorted by path.

        Raises:
            OSError: The workspace folder itself cannot be opened.
        """
        walk = _Walk()
        walk.folder(os.open(self.workspace, _FOLDER), "", 0)
        lines = sorted(walk.lines)[:MAX_LISTED]
        lines.extend(walk.notes())
        return "".join(f"{line}\n" for line in lines)

    def read_file(self, relative: PurePosixPath, *, image: bool = False) -> ToolOutput:
        """Return the file's bytes (or, for ``view_image``, a line and the attached image)."""
        try:
            data = read_inside(self.workspace, relative, limit=MAX_READ)
        except OSError as exc:
            return _os_error("read", relative, exc)
        except ValueError:  # a NUL or an unencodable character in a component
            return _error(f"refused path: {_shown(str(relative))} cannot name a file")
        self.touched.add(str(relative))
        if not image:
            return ToolOutput(content=data)
        mime = next((m for magic, m in _MIME.items() if data.startswith(magic)), None)
        if mime is None:
            return _error(f"not an image: {_shown(str(relative))}")
        text = f"attached {_shown(str(relative))} ({mime}, {plural(len(data), 'byte')})"
        return ToolOutput(content=text, images=(Image(data=data, mime_type=mime),))

    def write_file(self, relative: PurePosixPath, content: str) -> ToolOutput:
        """Create or replace the file (parent folders made), never through a symlink or link.

        The bytes go to a temporary file in the target's folder, renamed over the target.
        """
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError as exc:
            return _error(
                f"cannot write {_shown(str(relative))}: the content is not valid text "
                f"({exc.reason} at character {exc.start})"
            )
        if len(relative.parts) > MAX_DEPTH + 1:
            return _error(
                f"refused path: {_shown(str(relative)[:200])}… is more than {MAX_DEPTH} folders "
                "deep"
            )
        try:
            folder = _enter_parents(os.open(self.workspace, _FOLDER), relative.parts[:-1])
            try:
                _replace(folder, relative.parts[-1], data, str(relative))
            finally:
                os.close(folder)
        except OSError as exc:
            return _os_error("write", relative, exc)
        except ValueError:
            return _error(f"refused path: {_shown(str(relative))} cannot name a file")
        self.touched.add(str(relative))
        return ToolOutput(content=f"wrote {plural(len(data), 'byte')} to {_shown(str(relative))}")


def _enter_parents(folder: int, parts: tuple[str, ...]) -> int:
    """Walk into (making) each folder of ``parts`` under fd ``folder``; return the last fd.

    Takes ownership of ``folder``: every fd but the returned one is closed, also on errors.
    """
    for part in parts:
        try:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o755, dir_fd=folder)
            inner = os.open(part, _FOLDER, dir_fd=folder)
        finally:
            os.close(folder)
        folder = inner
    return folder


def _replace(folder: int, name: str, data: bytes, where: str) -> None:
    """Write ``data`` to a temporary file in ``folder`` and rename it over ``name``.

    Raises:
        FileRefusedError: ``name`` is there and is not a regular file (never opened).
        OSError: The temporary file cannot be written or renamed (it is removed).
    """
    try:
        info: os.stat_result | None = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        info = None
    if info is not None and not stat.S_ISREG(info.st_mode):
        message = f"it is {file_kind(info.st_mode)}; write_file replaces only regular files"
        raise FileRefusedError(message, location=where, code=errno.EINVAL)
    temp = f".llmcore-write-{secrets.token_hex(8)}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _FLAGS, 0o644, dir_fd=folder)
    try:
        try:
            if info is not None:
                os.fchmod(fd, stat.S_IMODE(info.st_mode))
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.rename(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=folder)
        raise


class _Walk:
    """One ``list_files`` walk: one open descriptor per level, bounded depth and entries."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.scanned = 0
        self.too_deep = 0

    def folder(self, fd: int, prefix: str, depth: int) -> None:
        """List folder ``fd`` (named ``prefix``), then its subfolders; closes ``fd``."""
        subfolders = []
        try:
            with os.scandir(fd) as entries:
                for entry in entries:
                    self.scanned += 1
                    if self.scanned > MAX_SCANNED:
                        break
                    subfolders.extend(self._entry(entry, prefix))
            for name in sorted(subfolders):
                self._enter(fd, name, prefix, depth + 1)
        finally:
            os.close(fd)

    def _entry(self, entry: os.DirEntry[str], prefix: str) -> list[str]:
        """Record a regular file; return ``[name]`` for a folder to enter, else ``[]``."""
        try:
            if entry.is_dir(follow_symlinks=False):
                return [] if entry.name.startswith(".") else [entry.name]
            info = entry.stat(follow_symlinks=False)
        except OSError:
            return []
        if stat.S_ISREG(info.st_mode):
            self.lines.append(f"{_shown(prefix + entry.name)}\t{info.st_size}")
        return []

    def _enter(self, parent: int, name: str, prefix: str, depth: int) -> None:
        if self.scanned > MAX_SCANNED:
            return
        if depth > MAX_DEPTH:
            self.too_deep += 1
            return
        try:
            fd = os.open(name, _FOLDER, dir_fd=parent)
        except OSError:
            return
        self.folder(fd, f"{prefix}{name}/", depth)

    def notes(self) -> list[str]:
        """The closing lines that say what was left out (none for an ordinary workspace)."""
        out = []
        if len(self.lines) > MAX_LISTED:
            out.append(f"({len(self.lines) - MAX_LISTED} more files not listed)")
        if self.too_deep:
            out.append(f"({self.too_deep} folders deeper than {MAX_DEPTH} levels not listed)")
        if self.scanned > MAX_SCANNED:
            out.append(f"(stopped after {MAX_SCANNED:,} entries)")
        return out
