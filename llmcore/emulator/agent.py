r"""The built-in agent script: a coding agent working over a tiny fixture workspace (SPEC V2).

The emulator's default script (:data:`AGENT_SCRIPT`) is 24 assistant turns that call four tools
the **client** implements over :data:`AGENT_WORKSPACE` (or with :class:`AgentWorkspace`, a
reference implementation). Tool definitions, in neutral form (name, description, JSON schema of
the arguments) — :data:`AGENT_TOOLS`:

============  ===============================================  ==================================
name          arguments (JSON schema ``properties``)           result
============  ===============================================  ==================================
list_files    ``{}``                                           one ``path<TAB>size`` line per
                                                               file, sorted by path
read_file     ``{"path": string}``                             the file's bytes; a missing file
                                                               is an error result
                                                               ``no such file: <path>``
write_file    ``{"path": string, "content": string}``          ``wrote <n> bytes to <path>``
                                                               (UTF-8 bytes of ``content``)
view_image    ``{"path": string}``                             text ``attached <path> (<mime>,
                                                               <n> bytes)``; the image goes into
                                                               the next user message (SPEC M2)
============  ===============================================  ==================================

The session exercises: parallel calls (turn 3), a tool result over 10 KB (``data/big.log``,
12,288 bytes, turns 5 and 23), an image (``images/logo.png``, a 128×128 PNG of about 49 KB,
turn 7), an error result (turn 12), non-ASCII and unusually spaced argument bytes (turns 9, 15,
21). Text turns (4, 6, 8, 11, 14, 17, 20, 22, 24) end a user turn; the client then sends its next
user message. The replies do not depend on what the tools return.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from llmcore import jsonbytes
from llmcore.emulator.script import Reply, Script, ScriptedCall

__all__ = [
    "AGENT_SCRIPT",
    "AGENT_TOOLS",
    "AGENT_WORKSPACE",
    "AgentTool",
    "AgentWorkspace",
    "ToolOutcome",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentTool:
    """A tool of the built-in agent, in neutral form."""

    name: str
    """The tool name the script calls."""
    description: str
    """One sentence for the model."""
    input_schema: MappingProxyType[str, Any]
    """JSON schema of the arguments object."""

    def schema_json(self) -> bytes:
        """Return the input schema as compact JSON bytes (keys in the order shown)."""
        return jsonbytes.dumps(_thaw(self.input_schema))


def _thaw(value: Any) -> Any:
    if isinstance(value, MappingProxyType | dict):
        return {key: _thaw(item) for key, item in value.items()}
    if isinstance(value, tuple | list):
        return [_thaw(item) for item in value]
    return value


def _schema(**properties: str) -> MappingProxyType[str, Any]:
    return MappingProxyType(
        {
            "type": "object",
            "properties": MappingProxyType(
                {name: MappingProxyType({"type": "string", "description": text})
                 for name, text in properties.items()}
            ),
            "required": tuple(properties),
            "additionalProperties": False,
        }
    )  # fmt: skip


AGENT_TOOLS: Final = (
    AgentTool(
        name="list_files",
        description="List every file in the workspace with its size in bytes.",
        input_schema=_schema(),
    ),
    AgentTool(
        name="read_file",
        description="Read a file of the workspace and return its content.",
        input_schema=_schema(path="Workspace-relative path of the file."),
    ),
    AgentTool(
        name="write_file",
        description="Create or replace a file of the workspace with the given text.",
        input_schema=_schema(
            path="Workspace-relative path of the file.", content="The new UTF-8 text."
        ),
    ),
    AgentTool(
        name="view_image",
        description="Show an image file of the workspace; it is attached to the next message.",
        input_schema=_schema(path="Workspace-relative path of the image."),
    ),
)
"""The four tools the built-in script calls, in this order."""


def _png(size: int = 128) -> bytes:
    """Return a deterministic ``size``×``size`` RGB PNG of pseudo-random pixels."""
    state = 20240601
    rows = bytearray()
    for _ in range(size):
        rows.append(0)
        for _ in range(size * 3):
            state = (state * 1103515245 + 12345) & 0x7FFFFFFF
            rows.append(state >> 23)

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(bytes(rows), 9))
        + chunk(b"IEND", b"")
    )


def _log() -> bytes:
    lines = [
        f"2024-06-01T12:{i // 60:02d}:{i % 60:02d}Z worker-{i % 4} "
        f"{'WARN' if i % 17 == 0 else 'INFO'} processed batch {i:04d} in {(i * 37) % 900 + 100} ms"
        for i in range(512)
    ]
    text = "\n".join(lines).encode("ascii")
    return (text + b"\n" + b"#" * 12288)[:12288]


_APP = b'''"""A tiny command-line greeter."""

import sys

from util import normalize


def main(argv: list[str]) -> int:
    """Greet each name given on the command line."""
    if not argv:
        print("usage: app NAME...", file=sys.stderr)
        return 2
    for name in argv:
        print(f"Hello, {normalize(name)}!")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
'''

_UTIL = b'''"""Helpers for the greeter."""


def normalize(name: str) -> str:
    """Strip spaces and capitalize a name."""
    return name.strip().capitalize()
'''

AGENT_WORKSPACE: Final[MappingProxyType[str, bytes]] = MappingProxyType(
    {
        "README.md": b"# greeter\n\nA tiny greeter used to exercise agent tools.\n\n"
        b"Run `python src/app.py Ada Grace`.\n",
        "data/big.log": _log(),
        "docs/design.md": b"# Design\n\n* `app.py` parses arguments and prints greetings.\n"
        b"* `util.py` holds pure helpers; keep them free of I/O.\n"
        b"* Names are normalized before printing.\n",
        "images/logo.png": _png(),
        "src/app.py": _APP,
        "src/util.py": _UTIL,
    }
)
"""The fixture workspace: path → bytes (read-only; :class:`AgentWorkspace` copies it)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolOutcome:
    """What a tool call returns to the model."""

    content: bytes
    """The tool result bytes."""
    is_error: bool = False
    """Whether the result is an error."""
    image: tuple[bytes, str] | None = None
    """``(bytes, mime type)`` of an image to attach to the next user message."""


class AgentWorkspace:
    """A reference implementation of the four tools over a private copy of the workspace."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = dict(AGENT_WORKSPACE)

    def call(self, name: str, arguments: bytes) -> ToolOutcome:
        """Run tool ``name`` with the raw ``arguments`` bytes the model produced.

        Returns:
            The outcome; bad arguments or an unknown tool give an error result (never raise).
        """
        try:
            args = jsonbytes.loads(arguments)
        except ValueError:
            return ToolOutcome(content=b"arguments are not valid JSON", is_error=True)
        if not isinstance(args, dict):
            return ToolOutcome(content=b"arguments must be a JSON object", is_error=True)
        if name == "list_files":
            listing = "".join(f"{path}\t{len(data)}\n" for path, data in sorted(self.files.items()))
            return ToolOutcome(content=listing.encode("utf-8"))
        path = args.get("path")
        if not isinstance(path, str):
            return ToolOutcome(content=b"missing argument: path", is_error=True)
        return self._file_tool(name, path, args)

    def _file_tool(self, name: str, path: str, args: dict[str, Any]) -> ToolOutcome:
        if name == "write_file":
            content = args.get("content")
            if not isinstance(content, str):
                return ToolOutcome(content=b"missing argument: content", is_error=True)
            self.files[path] = content.encode("utf-8")
            return ToolOutcome(content=f"wrote {len(self.files[path])} bytes to {path}".encode())
        if name not in ("read_file", "view_image"):
            return ToolOutcome(content=f"unknown tool: {name}".encode(), is_error=True)
        data = self.files.get(path)
        if data is None:
            return ToolOutcome(content=f"no such file: {path}".encode(), is_error=True)
        if name == "read_file":
            return ToolOutcome(content=data)
        mime = "image/png" if data.startswith(b"\x89PNG") else "application/octet-stream"
        text = f"attached {path} ({mime}, {len(data)} bytes)".encode()
        return ToolOutcome(content=text, image=(data, mime))


def _calls(*pairs: tuple[str, str]) -> Reply:
    return Reply(tool_calls=tuple(ScriptedCall(name=n, arguments=a) for n, a in pairs))


_SUMMARY = (
    '{"path": "notes/summary.md", "content": "# Summary\\n\\nThe greeter prints '
    '\\u00ab Hello, Name! \\u00bb for each argument \\u2014 caf\\u00e9-proof."}'
)

_CHANGELOG = '{"content": "## 0.2\\n- naïve names are normalized\\n", "path": "CHANGELOG.md"}'

AGENT_SCRIPT: Final = Script(
    replies=(
        _calls(("list_files", "{}")),
        _calls(("read_file", '{"path": "README.md"}')),
        _calls(("read_file", '{"path":"src/app.py"}'), ("read_file", '{"path":"src/util.py"}')),
        Reply(text="A small greeter: app.py greets each name via util.normalize."),
        _calls(("read_file", '{"path": "data/big.log"}')),
        Reply(text="The log shows 512 batches; every 17th is a WARN, none is an error."),
        _calls(("view_image", '{"path": "images/logo.png"}')),
        Reply(text="The logo is a 128×128 image of colored noise."),
        _calls(("write_file", _SUMMARY)),
        _calls(("read_file", '{"path": "notes/summary.md"}')),
        Reply(text="I wrote notes/summary.md with a short summary."),
        _calls(("read_file", '{"path": "docs/missing.md"}')),
        _calls(("read_file", '{"path": "docs/design.md"}')),
        Reply(text="docs/missing.md does not exist; docs/design.md describes the layout."),
        _calls(
            (
                "write_file",
                '{ "path" : "src/util.py", "content" : "def normalize(name: str) -> str:\\n'
                '    \\"\\"\\"Strip, collapse inner spaces, capitalize.\\"\\"\\"\\n'
                '    return \\" \\".join(name.split()).capitalize()\\n" }',
            )
        ),
        _calls(("read_file", '{"path": "src/util.py"}')),
        Reply(text="normalize now collapses inner whitespace too."),
        _calls(("list_files", "{ }")),
        _calls(("read_file", '{"path": "src/app.py"}')),
        Reply(text="app.py needs no change: it already calls normalize."),
        _calls(("write_file", _CHANGELOG)),
        Reply(text="CHANGELOG.md records the change."),
        _calls(("read_file", '{"path": "data/big.log"}')),
        Reply(text="All done: notes written, normalize improved, the log is clean."),
    ),
    after_end=Reply(text="Nothing more to do."),
)  # fmt: skip
"""The default script: 24 replies over :data:`AGENT_TOOLS` (≥ 20-turn benchmark sessions)."""
