"""Claude Code as a CLI backend (SPEC B1): ``claude -p --output-format stream-json --verbose``.

One ``claude`` process per turn; later turns add ``--resume <session id>``. The stream is one
JSON object per line (Claude Code 2.1.197, recorded in ``tests/backends/streams/claude_*``; see
https://docs.claude.com/en/docs/claude-code/headless and
https://docs.claude.com/en/docs/claude-code/sdk/sdk-headless)::

    {"type":"system","subtype":"init","session_id":S,"model":M,"tools":[…],"cwd":…,…}
    {"type":"assistant","message":{"id":…,"content":[ONE BLOCK],"usage":{…},…},"session_id":S,…}
    {"type":"user","message":{"role":"user","content":[{"type":"tool_result",
        "tool_use_id":…,"content":str | [blocks],"is_error":bool}]},"session_id":S,…}
    {"type":"result","subtype":"success"|"error_max_turns"|"error_during_execution",
        "is_error":bool,"result":str,"session_id":S,"total_cost_usd":float,
        "usage":{"input_tokens","output_tokens","cache_read_input_tokens",
                 "cache_creation_input_tokens","cache_creation":{"ephemeral_1h_input_tokens",…},
                 "server_tool_use":{"web_search_requests",…},…},"modelUsage":{M:{…}},…}

Each ``assistant`` event carries one content block (``text``, ``thinking``, ``tool_use``) of a
message; an API failure arrives as an ``assistant`` event with an ``error`` field and a
synthetic text (``API Error: 400 …``), then a ``result`` with ``is_error: true`` and exit
status 1. Other event types (hooks, ``stream_event`` with ``--include-partial-messages``,
status lines) are ignored.

Panel items: ``assistant`` {``text``}, ``thinking`` {``text``}, ``tool`` {``name``, ``text``
(the input as compact JSON), ``detail`` (the result text), ``isError``}. Usage: one round per
turn, the ``result`` event's sums; cost: Claude Code's own ``total_cost_usd``, an
``estimated`` cost (it comes from the program's price table, not from the API).

Prompt caching: name the model (``model="claude-opus-4-8"``). Claude Code 2.1.197's default
resolves to ``claude-opus-4-8[1m]`` in a new session but to ``claude-opus-4-8`` in a resumed
one, and its system prompt names the model, so every resumed process otherwise rewrites the
cache once (``benchmarks/bench_cli_backends.py``: 56.5% hit rate vs 78.3% with the model named).

Not covered: images in tool results (their text parts only), permission prompts (pass
``--allowedTools``/``--permission-mode`` in ``extra_args``), streaming partial messages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from llmcore import jsonbytes
from llmcore.archive.state import Item
from llmcore.usage import Cost, Usage

from .base import CLIBackend, Event, ParsedTurn, find_executable

__all__ = ["CLAUDE_ENV_VAR", "ClaudeCodeBackend", "claude_usage"]

CLAUDE_ENV_VAR: Final = "LLMCORE_CLAUDE"
"""Environment variable naming the ``claude`` executable (default: ``claude`` on ``PATH``)."""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def claude_usage(usage: Mapping[str, Any]) -> Usage:
    """Return the :class:`~llmcore.usage.Usage` of a Claude Code ``usage`` object (tokens).

    ``input_tokens`` is already the uncached input (Anthropic's convention).
    """
    creation = usage.get("cache_creation")
    server = usage.get("server_tool_use")
    one_hour = creation.get("ephemeral_1h_input_tokens") if isinstance(creation, dict) else None
    searches = server.get("web_search_requests") if isinstance(server, dict) else 0
    return Usage(
        input=_int(usage.get("input_tokens")),
        output=_int(usage.get("output_tokens")),
        cache_read=_int(usage.get("cache_read_input_tokens")),
        cache_write=_int(usage.get("cache_creation_input_tokens")),
        web_search_requests=_int(searches),
        cache_write_1h=_int(one_hour) if isinstance(one_hour, int) else None,
    )


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            block["text"]
            for block in content
            if isinstance(block, dict) and isinstance(block.get("text"), str)
        )
    return ""


class _Parser:
    """Folds Claude Code events into a :class:`ParsedTurn` (items built at the end)."""

    def __init__(self) -> None:
        self.turn = ParsedTurn()
        self.fields: list[dict[str, Any]] = []
        self.tools: dict[str, dict[str, Any]] = {}

    def feed(self, event: Event) -> None:
        kind = event.get("type")
        session = event.get("session_id")
        if isinstance(session, str) and session:
            self.turn.session_id = session
        if kind == "system" and event.get("subtype") == "init":
            model = event.get("model")
            self.turn.model = model if isinstance(model, str) else self.turn.model
        elif kind == "assistant" and "error" not in event:
            self._assistant(event.get("message"))
        elif kind == "user":
            self._user(event.get("message"))
        elif kind == "result":
            self._result(event)

    def _assistant(self, message: Any) -> None:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text" and block.get("text"):
                self.fields.append({"type": "assistant", "text": block["text"]})
            elif kind == "thinking" and block.get("thinking"):
                self.fields.append({"type": "thinking", "text": block["thinking"]})
            elif kind == "tool_use":
                arguments = jsonbytes.dumps_sorted(block.get("input", {})).decode("utf-8")
                tool = {"type": "tool", "name": str(block.get("name", "")), "text": arguments}
                self.tools[str(block.get("id", ""))] = tool
                self.fields.append(tool)

    def _user(self, message: Any) -> None:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            tool = self.tools.get(str(block.get("tool_use_id", "")))
            if tool is not None:
                tool["detail"] = _result_text(block.get("content"))
                tool["isError"] = bool(block.get("is_error", False))

    def _result(self, event: Event) -> None:
        self.turn.finished = True
        usage = event.get("usage")
        self.turn.usage = claude_usage(usage if isinstance(usage, dict) else {})
        dollars = event.get("total_cost_usd")
        if isinstance(dollars, int | float) and not isinstance(dollars, bool):
            self.turn.cost = Cost(kind="estimated", dollars=float(dollars))
        models = event.get("modelUsage")
        if not self.turn.model and isinstance(models, dict) and models:
            self.turn.model = str(next(iter(models)))
        subtype = str(event.get("subtype", ""))
        if event.get("is_error") or subtype.startswith("error"):
            text = event.get("result")
            self.turn.error = text if isinstance(text, str) and text else subtype


class ClaudeCodeBackend(CLIBackend):
    """Claude Code (``@anthropic-ai/claude-code``) as a conversation backend (SPEC B1).

    Point it at llmcore's emulator with ``env={"ANTHROPIC_BASE_URL": emulator.base_url,
    "ANTHROPIC_API_KEY": "x"}``; let it use tools without asking with e.g.
    ``extra_args=("--allowedTools", "Bash", "Read")``. Arguments: see
    :class:`~llmcore.backends.base.CLIBackend`.
    """

    provider = "claude-code"

    @classmethod
    def default_executable(cls, env: Mapping[str, str]) -> str:
        """Return ``$LLMCORE_CLAUDE``, else ``claude`` on ``PATH``."""
        return find_executable("claude", CLAUDE_ENV_VAR, env)

    def argv(self, message: str, resume: str | None) -> list[str]:
        """Return the turn's command line.

        ``claude -p --output-format stream-json --verbose [--model M] [--resume ID]
        [extra args] -- MESSAGE``.
        """
        argv = [self.executable, "-p", "--output-format", "stream-json", "--verbose"]
        if self.model:
            argv += ["--model", self.model]
        if resume is not None:
            argv += ["--resume", resume]
        return [*argv, *self.extra_args, "--", message]

    def parse(self, events: Sequence[Event]) -> ParsedTurn:
        """Return the turn's items, usage, cost, session id and error (module doc shapes)."""
        parser = _Parser()
        for event in events:
            parser.feed(event)
        turn = parser.turn
        turn.items = [Item.make(id=self.new_id(), **fields) for fields in parser.fields]
        return turn
