"""The built-in workspace tools of ``llmcore chat``: list, read, write and view files (SPEC S6).

The four tools are the ones the emulator's built-in agent script calls
(:data:`llmcore.emulator.AGENT_TOOLS`: ``list_files``, ``read_file``, ``write_file``,
``view_image``), run over a real folder. Every path is confined to the workspace: it must be
relative with no ``..`` component (:func:`llmcore.session.safe_relative`) and is opened one
component at a time without following symlinks (``O_NOFOLLOW``), so a symlink anywhere on the
path — inside or pointing out of the workspace — is refused. A refused path, a missing file or
bad arguments give an error *result* the model sees; the tools never raise.

``list_files`` lists regular files (not symlinks), skipping folders whose name starts with
``.`` (``.git``, ``.venv``), at most :data:`MAX_LISTED` lines. ``read_file`` returns at most
:data:`MAX_READ` bytes. It leaves out running commands and deleting files.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any, Final

from llmcore.emulator import AGENT_TOOLS
from llmcore.messages import Image
from llmcore.runner import FunctionTool, ToolOutput
from llmcore.session import safe_relative
from llmcore.session.drift import read_inside

__all__ = ["MAX_LISTED", "MAX_READ", "WorkspaceTools"]

MAX_LISTED: Final = 2000
"""Most files ``list_files`` names."""
MAX_READ: Final = 1 << 20
"""Most bytes ``read_file`` returns (1 MiB); larger files are refused."""

_FLAGS: Final = os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
_MIME: Final = {b"\x89PNG": "image/png", b"\xff\xd8\xff": "image/jpeg", b"GIF8": "image/gif"}


def _error(text: str) -> ToolOutput:
    return ToolOutput(content=text, is_error=True)


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
        if name == "list_files":
            self._announce(name, "")
            return ToolOutput(content=self.list_files())
        path = arguments.get("path")
        if not isinstance(path, str):
            return _error("missing argument: path")
        self._announce(name, path)
        relative = safe_relative(path)
        if relative is None:
            return _error(f"refused path outside the workspace: {path}")
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

    def list_files(self) -> str:
        """Return one ``path<TAB>size`` line per regular file, sorted by path."""
        lines = []
        for root, folders, files in os.walk(self.workspace, followlinks=False):
            folders[:] = sorted(f for f in folders if not f.startswith("."))
            for name in files:
                full = Path(root, name)
                info = full.lstat()
                if stat.S_ISREG(info.st_mode):
                    lines.append(f"{full.relative_to(self.workspace).as_posix()}\t{info.st_size}")
        lines.sort()
        return "".join(f"{line}\n" for line in lines[:MAX_LISTED])

    def read_file(self, relative: PurePosixPath, *, image: bool = False) -> ToolOutput:
        """Return the file's bytes (or, for ``view_image``, a line and the attached image)."""
        data = read_inside(self.workspace, relative)
        if data is None:
            return _error(f"no such file: {relative}")
        if len(data) > MAX_READ:
            return _error(f"file too large: {relative} ({len(data)} bytes)")
        self.touched.add(str(relative))
        if not image:
            return ToolOutput(content=data)
        mime = next((m for magic, m in _MIME.items() if data.startswith(magic)), None)
        if mime is None:
            return _error(f"not an image: {relative}")
        text = f"attached {relative} ({mime}, {len(data)} bytes)"
        return ToolOutput(content=text, images=(Image(data=data, mime_type=mime),))

    def write_file(self, relative: PurePosixPath, content: str) -> ToolOutput:
        """Create or replace the file (parent folders made), never through a symlink."""
        data = content.encode("utf-8")
        try:
            folder = os.open(self.workspace, os.O_RDONLY | os.O_DIRECTORY | _FLAGS)
            folder = _enter_parents(folder, relative.parts[:-1])
            try:
                fd = os.open(
                    relative.parts[-1],
                    os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _FLAGS,
                    0o644,
                    dir_fd=folder,
                )
            finally:
                os.close(folder)
            with os.fdopen(fd, "wb") as file:
                file.write(data)
        except OSError as exc:
            return _error(f"cannot write {relative}: {exc.strerror}")
        self.touched.add(str(relative))
        return ToolOutput(content=f"wrote {len(data)} bytes to {relative}")


def _enter_parents(folder: int, parts: tuple[str, ...]) -> int:
    """Walk into (making) each folder of ``parts`` under fd ``folder``; return the last fd.

    Takes ownership of ``folder``: every fd but the returned one is closed, also on errors.
    """
    for part in parts:
        try:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o755, dir_fd=folder)
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | _FLAGS, dir_fd=folder)
        finally:
            os.close(folder)
        folder = inner
    return folder
