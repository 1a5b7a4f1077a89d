r"""The scripted model ``llmcore chat`` talks to on the embedded emulator (no key, no network).

:data:`DEMO_SCRIPT` is an :class:`~llmcore.emulator.Script` that reads each request instead of
replaying fixed replies, so the demo shows what a session does with a real workspace: it
answers what the user typed and works on the files the user names, through the same four
tools (:mod:`llmcore.chat.tools`) a live model gets. It is deterministic: the same request
always gets the same reply. For a request whose last message is the user's line:

==========================================  ================================================
the line                                    the reply
==========================================  ================================================
asks to write/save/create a named file      ``write_file`` at that path: the text after
(``write notes.md: text``)                  ``:``, in quotes or after ``containing``/``with``,
                                            else a note quoting the line
names files (``read src/app.py``)           ``read_file`` of each (``view_image`` for images),
                                            at most :data:`MAX_FILES`, in one parallel round
asks for the files (``list``, ``files``,    ``list_files``
``ls``), or anything else
==========================================  ================================================

After the tool results it answers in text: it quotes the user's line, then one line per
result (the files listed, a file's size, line count and first line, what was written, an
error as it came). It writes only a file the user named in a line that asks for a write:
nothing is written anywhere else. A request without tools gets text: for the session's
extraction call (:data:`~llmcore.session.EXTRACTION_PROMPT`) a JSON summary of what the user
asked, for compaction a summary paragraph.

The three wire shapes are read: Anthropic Messages, Chat Completions and Responses (``input``
as sent; a ``previous_response_id`` continuation is not read back).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from llmcore import jsonbytes
from llmcore._words import plural
from llmcore.emulator import Reply, Script, ScriptedCall
from llmcore.emulator.common import all_text

__all__ = ["DEMO_SCRIPT", "MAX_FILES", "DemoScript", "Exchange", "read_exchange"]

MAX_FILES: Final = 4
"""Most files one line makes the demo read."""
_QUOTE_CHARS: Final = 200
_IMAGE: Final = (".png", ".jpg", ".jpeg", ".gif")
_PATH: Final = re.compile(
    r"(?<![\w.\-/])(?!(?i:e\.g|i\.e|a\.m|p\.m|n\.b|u\.s)\.)"
    r"(?:[\w.\-/]*\w\.(?=[A-Za-z0-9]{0,7}[A-Za-z])[A-Za-z0-9]{1,8}\b|[\w.\-]+/[\w.\-/]+)"
)
"""A file name the user typed: a stem of any length and an extension of up to 8 letters and
digits, at least one a letter (``a.txt``, ``notes.md``, ``a.7z``), in a path or not
(``./a.txt``, ``dir/b.txt``), or a path without one (``src/bin``). It starts a word; a number
(``3.5``) and the abbreviations ``e.g.``, ``i.e.``, ``a.m.``, ``p.m.``, ``n.b.``, ``U.S.`` are
not one (``x.c.`` at the end of a sentence is)."""
_FILLER: Final = (
    r"(?:\s+(?:a|an|the|my|new|short|file|note|notes|summary|it|this|that|to|into|in|at|as))*"
)
_WRITE: Final = re.compile(
    rf"\b(?:write|save|create)\b{_FILLER}\s+[\"'`«“]?(?P<path>{_PATH.pattern})", re.IGNORECASE
)
"""A line that asks for a write names the file right after the verb (a few filler words apart):
``write notes.md: …``, ``save the summary to notes/summary.md``; ``don't write, read x.md``
does not match."""
_SAYING: Final = re.compile(
    r"\s+(?:containing|that says|saying|with the text|with)\s+(\S.*)", re.IGNORECASE | re.DOTALL
)
"""The text of ``create hello.txt containing hi there``: what follows the path."""
_EXTRACTION_MARK: Final = "record the state of a working session"


@dataclass(frozen=True, slots=True, kw_only=True)
class Exchange:
    """The end of a conversation, read from a request body in any of the three shapes."""

    user_text: str
    """The user's last typed line (the newest user message with text)."""
    results: tuple[tuple[str, str, bool], ...] = ()
    """``(call, result text, is error)`` of the tool results that end the request; ``call``
    is the tool's name and its ``path`` argument, if any (``read_file src/app.py``)."""
    system: str = ""
    """The system prompt's text."""
    prompts: tuple[str, ...] = field(default=())
    """Every user message's text, oldest first."""


_TEXT_KINDS: Final = frozenset({"text", "input_text", "output_text"})


def _text(content: Any) -> str:
    return all_text(content, _TEXT_KINDS) if isinstance(content, str | list) else ""


def _called(name: Any, arguments: Any) -> str:
    """``name`` and the ``path`` of its arguments (an object, or its JSON text), if any."""
    if isinstance(arguments, str):
        try:
            arguments = jsonbytes.loads(arguments)
        except ValueError:
            arguments = None
    path = arguments.get("path") if isinstance(arguments, Mapping) else None
    return f"{name} {path}" if isinstance(path, str) else str(name)


def _anthropic(body: Mapping[str, Any]) -> Exchange:
    messages = [m for m in body.get("messages", ()) if isinstance(m, Mapping)]
    names: dict[str, str] = {}
    prompts: list[str] = []
    results: list[tuple[str, str, bool]] = []
    for message in messages:
        content = message.get("content")
        blocks = [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []
        if message.get("role") == "assistant":
            names.update({str(b.get("id")): _called(b.get("name"), b.get("input"))
                          for b in blocks if b.get("type") == "tool_use"})  # fmt: skip
            continue
        results = [
            (names.get(str(b.get("tool_use_id")), "tool"), _text(b.get("content")),
             bool(b.get("is_error")))
            for b in blocks if b.get("type") == "tool_result"
        ]  # fmt: skip
        text = _text(content)
        if text and not results:
            prompts.append(text)
    last_is_results = bool(messages) and bool(results)
    return Exchange(
        user_text=prompts[-1] if prompts else "",
        results=tuple(results) if last_is_results else (),
        system=_text(body.get("system")),
        prompts=tuple(prompts),
    )


def _chat(items: Sequence[Any], kind: str) -> Exchange:
    """Chat Completions ``messages`` (``kind="chat"``) or Responses ``input`` items."""
    names: dict[str, str] = {}
    prompts: list[str] = []
    system: list[str] = []
    results: list[tuple[str, str, bool]] = []
    for item in items:
        if not isinstance(item, Mapping):
            continue
        role, kind_of = item.get("role"), item.get("type")
        if role in ("system", "developer"):
            system.append(_text(item.get("content")))
        elif role == "assistant" and kind == "chat":
            for call in item.get("tool_calls") or ():
                function = call.get("function", {}) if isinstance(call, Mapping) else {}
                names[str(call.get("id"))] = _called(
                    function.get("name"), function.get("arguments")
                )
        elif kind_of == "function_call":
            names[str(item.get("call_id"))] = _called(item.get("name"), item.get("arguments"))
        elif role == "tool" or kind_of == "function_call_output":
            key = "tool_call_id" if role == "tool" else "call_id"
            output = item.get("content") if role == "tool" else item.get("output")
            results.append((names.get(str(item.get(key)), "tool"), _text(output), False))
            continue
        elif role == "user":
            prompts.append(_text(item.get("content")))
        results = []
    return Exchange(
        user_text=prompts[-1] if prompts else "",
        results=tuple(results),
        system="\n".join(system),
        prompts=tuple(prompts),
    )


def read_exchange(shape: str, body: Mapping[str, Any]) -> Exchange:
    """Return the end of the conversation ``body`` carries (``shape``: the emulator's name)."""
    if shape == "anthropic":
        return _anthropic(body)
    if shape == "chat":
        return _chat(body.get("messages") or (), "chat")
    given = body.get("input")
    items = [{"role": "user", "content": given}] if isinstance(given, str) else given or ()
    exchange = _chat(items, "responses")
    instructions = body.get("instructions")
    if isinstance(instructions, str):
        return Exchange(
            user_text=exchange.user_text, results=exchange.results,
            system=instructions + exchange.system, prompts=exchange.prompts,
        )  # fmt: skip
    return exchange


def _quote(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _QUOTE_CHARS else line[: _QUOTE_CHARS - 1] + "…"


def _paths(text: str) -> list[str]:
    found: list[str] = []
    for match in _PATH.finditer(text):
        path = match.group(0).strip("./") if match.group(0).startswith("./") else match.group(0)
        path = path.rstrip(".")
        if path and path not in found and ".." not in path.split("/"):
            found.append(path)
    return found[:MAX_FILES]


def _write_content(text: str, path: str) -> str:
    after = text.split(path, 1)[1]
    quoted = re.search(r"[\"“«'](.+?)[\"”»']", after, re.DOTALL)
    if quoted:
        return quoted.group(1) + "\n"
    if ":" in after:
        return after.split(":", 1)[1].strip() + "\n"
    said = _SAYING.match(after)
    if said:
        return said.group(1).strip() + "\n"
    return f"# {path}\n\nWritten at your request: {_quote(text)}\n"


def _call(name: str, **arguments: str) -> ScriptedCall:
    return ScriptedCall(name=name, arguments=jsonbytes.dumps_text(arguments))


def _first_move(text: str) -> Reply:
    paths = _paths(text)
    write = _WRITE.search(text)
    if write and ".." not in write.group("path").split("/"):
        path = write.group("path")
        return Reply(tool_calls=(_call("write_file", path=path,
                                       content=_write_content(text, path)),))  # fmt: skip
    if paths:
        return Reply(tool_calls=tuple(
            _call("view_image" if p.lower().endswith(_IMAGE) else "read_file", path=p)
            for p in paths
        ))  # fmt: skip
    return Reply(tool_calls=(_call("list_files"),))


def _listing(result: str) -> str:
    files = [line.split("\t", 1)[0] for line in result.splitlines() if "\t" in line]
    if not files:
        return "The workspace has no files yet."
    shown = ", ".join(files[:8]) + (f" and {len(files) - 8} more" if len(files) > 8 else "")
    return f"The workspace has {plural(len(files), 'file')}: {shown}."


def _about(call: str, result: str, error: bool) -> str:
    name, _, path = call.partition(" ")
    if error:
        return f"- {call} failed: {_quote(result)}"
    if name == "list_files":
        return f"- {_listing(result)}"
    if name == "read_file":
        lines = result.splitlines()
        first = next((line for line in lines if line.strip()), "")
        size = len(result.encode("utf-8"))
        count = plural(len(lines), "line")
        return f"- {path} has {plural(size, 'byte')} in {count}; it begins: «{_quote(first)}»"
    return f"- {_quote(result)}"


def _answer(exchange: Exchange) -> Reply:
    lines = [f"You said: «{_quote(exchange.user_text)}»."]
    lines += [_about(name, result, error) for name, result, error in exchange.results]
    if all(call == "list_files" for call, _, _ in exchange.results):
        lines.append('Name a file and I will read it ("read README.md"), or ask me to write one '
                     '("write notes.md: text"); I write only the files you name.')  # fmt: skip
    return Reply(text="\n".join(lines))


def _summary(exchange: Exchange) -> Reply:
    asked = [line.split(":", 1)[1].strip() for line in exchange.user_text.split("\n\n")
             if line.startswith("User:")]  # fmt: skip
    wrote = re.findall(r'Assistant called write_file\(\{"path":"([^"]+)"', exchange.user_text)
    summary = "The user asked: " + "; ".join(f"«{_quote(a)}»" for a in asked[-6:]) + "."
    if not asked:
        summary = "Nothing was asked yet."
    if _EXTRACTION_MARK in exchange.system:
        decisions = [f"Wrote {path} at the user's request" for path in dict.fromkeys(wrote)]
        return Reply(text=jsonbytes.dumps_text({"summary": summary, "decisions": decisions}))
    return Reply(text=summary)


class DemoScript(Script):
    """The demo model (see the module doc); its replies are computed from each request."""

    def reply_to(
        self, shape: str, body: Mapping[str, Any], first_user_text: str, turn: int
    ) -> Reply:
        """Return the reply to ``body``: a tool round on the user's line, then an answer."""
        exchange = read_exchange(shape, body)
        if not body.get("tools"):
            return _summary(exchange)
        if exchange.results:
            return _answer(exchange)
        return _first_move(exchange.user_text)


DEMO_SCRIPT: Final = DemoScript(replies=())
"""The model of ``llmcore chat`` on the embedded emulator."""
