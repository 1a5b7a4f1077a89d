r"""The emulator's deterministic model: scripted replies (SPEC V2).

A **script file** is UTF-8 JSON, either a bare list of replies or an object::

    {
      "replies": [REPLY, ...],                       // the default conversation
      "conversations": [                             // optional, tried in order
        {"match": "text in the first user message", "replies": [REPLY, ...]}
      ],
      "after_end": REPLY              // optional; default {"text": "[end of script]"}
    }

    REPLY = {"text": "…"}                                                  // a text answer
          | {"tool_calls": [{"name": "read_file", "arguments": "{\"path\": \"a.txt\"}"}]}
          | {"text": "…", "tool_calls": [...]}                             // text, then calls

``arguments`` is the exact JSON object text the model "produces" — sent byte for byte (Anthropic
splices it as ``input`` and streams it as ``input_json_delta`` pieces; OpenAI sends it as the
``arguments`` string); a JSON object value instead of a string is written compactly. Each reply
needs text or at least one tool call; unknown keys are refused. Strings must be valid Unicode
(a lone surrogate escape such as ``"\ud800"`` is refused, naming its path: no reply could carry
it as UTF-8), and ``arguments`` nest at most :data:`MAX_ARGUMENT_DEPTH` levels.

Replies are consumed **per conversation, in order**, without server state: a request gets reply
number *n* where *n* is the number of assistant turns already in its history (Anthropic and Chat:
assistant messages; Responses: runs of consecutive assistant ``message`` / ``function_call`` /
``reasoning`` items), so the same request always gets the same reply and many conversations
can run at once. The conversation is the first entry of ``conversations`` whose ``match`` occurs
in the text of the first user message, else ``replies``: *all* its text, every text block or part
joined by a newline (Claude Code's first block is always a ``<system-reminder>``, so the task is
in a later one). Past the end, ``after_end`` answers.

Output tokens of a reply are ``ceil(bytes/4)`` of the text, plus for each call
``ceil((len(name) + len(arguments))/4)`` in UTF-8 bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llmcore import jsonbytes
from llmcore.emulator.errors import ScriptError
from llmcore.emulator.tokencount import bytes_tokens

__all__ = ["Conversation", "Reply", "Script", "ScriptedCall", "load_script", "parse_script"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptedCall:
    """One tool call a reply makes."""

    name: str
    """The tool's name."""
    arguments: str
    """The exact argument text: a JSON object, sent byte for byte."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """One assistant turn: optional text, then tool calls (at least one of the two)."""

    text: str = ""
    """The answer text (``""`` for none)."""
    tool_calls: tuple[ScriptedCall, ...] = ()
    """Tool calls, in order."""
    thinking: str = ""
    """Extended thinking before the answer (set by the emulator when a request turns it on)."""

    @property
    def output_tokens(self) -> int:
        """Tokens the reply costs as output (``ceil(bytes/4)`` of its UTF-8 bytes, thinking too)."""
        total = bytes_tokens(len(self.text.encode("utf-8")))
        if self.thinking:
            total += bytes_tokens(len(self.thinking.encode("utf-8")))
        for call in self.tool_calls:
            total += bytes_tokens(len(call.name.encode("utf-8")) + len(call.arguments.encode()))
        return total


@dataclass(frozen=True, slots=True, kw_only=True)
class Conversation:
    """Replies for conversations whose first user message contains ``match``."""

    match: str
    """Text to look for in the first user message (all its text blocks, newline-joined)."""
    replies: tuple[Reply, ...]
    """The replies, in order."""


END_REPLY = Reply(text="[end of script]")
"""The default answer once a conversation's replies are used up."""
NO_TOOLS_TEXT = (
    "Summary: the user asked for work on the project's files; the assistant listed, read and "
    "wrote files with its tools, looked at an image and reported what it found and changed."
)
"""The answer to a request that offers no tools when the scripted reply is only tool calls."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Script:
    """A complete script: the default replies, keyed conversations, and the after-end reply."""

    replies: tuple[Reply, ...]
    """The default conversation's replies."""
    conversations: tuple[Conversation, ...] = ()
    """Conversations chosen by their first user message."""
    after_end: Reply = field(default=END_REPLY)
    """The reply once a conversation has no replies left."""

    def reply_for(self, first_user_text: str, turn: int, *, tools_offered: bool = True) -> Reply:
        """Return the reply for assistant turn ``turn`` (0-based) of the matching conversation.

        A request that offers no tools never gets a tool call, as from the real APIs: a reply
        with tool calls is answered with its text, or :data:`NO_TOOLS_TEXT` when it has none
        (so a summarization call, e.g. compaction's, gets a non-empty summary).
        """
        replies = self.replies
        for conversation in self.conversations:
            if conversation.match in first_user_text:
                replies = conversation.replies
                break
        reply = replies[turn] if 0 <= turn < len(replies) else self.after_end
        if reply.tool_calls and not tools_offered:
            return Reply(text=reply.text or NO_TOOLS_TEXT)
        return reply

    def reply_to(
        self, shape: str, body: Mapping[str, Any], first_user_text: str, turn: int
    ) -> Reply:
        """Return the reply to a validated request ``body`` of wire ``shape``.

        ``shape`` is ``"anthropic"``, ``"chat"`` or ``"responses"``. The emulator calls this;
        a script's replies depend only on ``first_user_text`` and ``turn`` (:meth:`reply_for`),
        while a subclass may read the whole request (``llmcore chat``'s demo model answers
        what the user typed).
        """
        return self.reply_for(first_user_text, turn, tools_offered=bool(body.get("tools")))


MAX_ARGUMENT_DEPTH = 64
"""Deepest nesting of objects and arrays allowed in a scripted call's ``arguments``."""


def _unicode(text: str, where: str) -> str:
    r"""Return ``text``, refusing a lone surrogate (a ``\ud800`` escape with no UTF-8 form)."""
    for index, char in enumerate(text):
        if "\ud800" <= char <= "\udfff":
            raise ScriptError(
                f"lone surrogate \\u{ord(char):04x} at character {index} is not valid Unicode",
                location=where,
            )
    return text


def _check_parsed(value: Any, where: str) -> None:
    """Refuse parsed arguments nested too deeply or holding a lone surrogate (iteratively)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, str):
            _unicode(node, where)
        elif isinstance(node, dict | list):
            if depth >= MAX_ARGUMENT_DEPTH:
                raise ScriptError(
                    f"arguments nest deeper than {MAX_ARGUMENT_DEPTH} levels", location=where
                )
            items = [*node, *node.values()] if isinstance(node, dict) else node
            stack.extend((item, depth + 1) for item in items)


def _arguments(arguments: Any, where: str) -> str:
    if isinstance(arguments, dict):
        _check_parsed(arguments, where)
        arguments = jsonbytes.dumps_text(arguments)
    if not isinstance(arguments, str):
        raise ScriptError("arguments must be the text of a JSON object", location=where)
    _unicode(arguments, where)
    try:
        parsed = jsonbytes.loads(arguments)
    except RecursionError:
        raise ScriptError(
            f"arguments nest deeper than {MAX_ARGUMENT_DEPTH} levels", location=where
        ) from None
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        raise ScriptError("arguments must be the text of a JSON object", location=where)
    _check_parsed(parsed, where)
    return arguments


def _call(value: Any, where: str) -> ScriptedCall:
    if not isinstance(value, dict) or set(value) - {"name", "arguments"}:
        raise ScriptError("a tool call is an object with name and arguments only", location=where)
    name, arguments = value.get("name"), value.get("arguments", "{}")
    if not isinstance(name, str) or not name:
        raise ScriptError("a tool call needs a non-empty name", location=where)
    _unicode(name, f"{where}.name")
    return ScriptedCall(name=name, arguments=_arguments(arguments, f"{where}.arguments"))


def _reply(value: Any, where: str) -> Reply:
    if not isinstance(value, dict) or set(value) - {"text", "tool_calls"}:
        raise ScriptError("a reply is an object with text and/or tool_calls", location=where)
    text = value.get("text", "")
    calls = value.get("tool_calls", [])
    if not isinstance(text, str) or not isinstance(calls, list):
        raise ScriptError("text must be a string and tool_calls a list", location=where)
    parsed = tuple(_call(call, f"{where}.tool_calls[{i}]") for i, call in enumerate(calls))
    if not text and not parsed:
        raise ScriptError("a reply needs text or at least one tool call", location=where)
    return Reply(text=_unicode(text, f"{where}.text"), tool_calls=parsed)


def _replies(value: Any, where: str) -> tuple[Reply, ...]:
    if not isinstance(value, list):
        raise ScriptError("replies must be a list", location=where)
    return tuple(_reply(item, f"{where}[{i}]") for i, item in enumerate(value))


def _conversation(value: Any, where: str) -> Conversation:
    if not isinstance(value, dict) or set(value) != {"match", "replies"}:
        raise ScriptError("a conversation is an object with match and replies", location=where)
    if not isinstance(value["match"], str):
        raise ScriptError("match must be a string", location=f"{where}.match")
    return Conversation(
        match=_unicode(value["match"], f"{where}.match"),
        replies=_replies(value["replies"], f"{where}.replies"),
    )


def parse_script(data: bytes, source: str = "<script>") -> Script:
    """Parse a script file's bytes.

    Args:
        data: UTF-8 JSON text.
        source: The file name used in error locations.

    Raises:
        ScriptError: The text is not JSON (or nests too deeply for the parser), an object
            repeats a key (``location`` names it: ``source: $.replies``), or it breaks the
            format: a string holds a lone surrogate, ``arguments`` nest deeper than
            :data:`MAX_ARGUMENT_DEPTH`, …; ``location`` is ``source: $.path``.
    """
    try:
        value = jsonbytes.loads(data, unique_keys=True)
    except jsonbytes.DuplicateKeyError as exc:  # json.loads would keep the last one silently
        raise ScriptError(exc.reason, location=f"{source}: {exc.key_path}") from None
    except ValueError as exc:
        raise ScriptError(f"not valid JSON: {exc}", location=source) from exc
    except RecursionError:
        raise ScriptError(
            "the JSON is nested too deeply for Python's parser", location=source
        ) from None
    if isinstance(value, list):
        return Script(replies=_replies(value, f"{source}: $"))
    if not isinstance(value, dict) or set(value) - {"replies", "conversations", "after_end"}:
        raise ScriptError(
            "a script is a list of replies or an object with replies, conversations, after_end",
            location=f"{source}: $",
        )
    conversations = value.get("conversations", [])
    if not isinstance(conversations, list):
        raise ScriptError("conversations must be a list", location=f"{source}: $.conversations")
    return Script(
        replies=_replies(value.get("replies", []), f"{source}: $.replies"),
        conversations=tuple(
            _conversation(item, f"{source}: $.conversations[{i}]")
            for i, item in enumerate(conversations)
        ),
        after_end=_reply(value["after_end"], f"{source}: $.after_end")
        if "after_end" in value
        else END_REPLY,
    )


def load_script(path: str | Path) -> Script:
    """Read and parse the script file at ``path`` (a ``str`` or a :class:`~pathlib.Path`).

    Raises:
        ScriptError: The file cannot be read or is malformed.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ScriptError(f"cannot read the script: {exc.strerror}", location=str(path)) from exc
    return parse_script(data, str(path))
