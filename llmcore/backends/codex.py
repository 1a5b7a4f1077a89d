"""Codex CLI as a CLI backend (SPEC B1): ``codex exec --json``, ``… resume <thread id>`` later.

One ``codex`` process per turn; later turns run ``codex exec --json … resume THREAD -- MESSAGE``
(the options go on ``exec``, before ``resume``, so every ``exec`` option works there). The
stream is one JSON object per line (Codex CLI 0.171.0, recorded in
``tests/backends/streams/codex_*``; see https://developers.openai.com/codex/noninteractive and
``codex-rs/exec/src/exec_events.rs``)::

    {"type":"thread.started","thread_id":T}
    {"type":"turn.started"}
    {"type":"item.started"|"item.updated"|"item.completed","item":{"id":"item_N","type":K,…}}
    {"type":"turn.completed","usage":{"input_tokens","cached_input_tokens",
        "cache_write_input_tokens","output_tokens","reasoning_output_tokens"}}
    {"type":"turn.failed","error":{"message":str}}
    {"type":"error","message":str}

Item kinds (``item.completed`` only is read): ``agent_message`` {``text``}, ``reasoning``
{``text``}, ``command_execution`` {``command``, ``aggregated_output``, ``exit_code``,
``status``}, ``file_change`` {``changes``: [{``path``, ``kind``}], ``status``},
``mcp_tool_call`` {``server``, ``tool``, ``status``}, ``web_search`` {``query``},
``todo_list`` {``items``}, ``error`` {``message``} (a warning; the turn goes on).

Panel items: ``assistant`` {``text``}, ``thinking`` {``text``}, ``tool`` {``name``
(``command_execution``, ``file_change``, ``mcp_tool_call``, ``web_search``), ``text``,
``detail``?, ``isError``}, ``notice`` {``text``} for ``error`` items. Usage: one round per
turn from ``turn.completed``. Its counts are the **thread's running totals** (a resumed
process reports the earlier turns' tokens too: recorded turns of 19,671, 39,826 and 50,056
input tokens for requests of about 10,000 each), so a turn's usage is the difference from the
previous turn's totals on the same thread; ``input_tokens`` include the cached ones (OpenAI's
convention), so uncached input = input − cached − cache writes. Cost: estimated from llmcore's
price table for the model asked for (``unknown`` without one).

Not covered: ``todo_list`` items (left out of the panel), images.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from llmcore.archive.state import Item
from llmcore.pricing import default_prices
from llmcore.usage import Usage

from .base import CLIBackend, Event, ParsedTurn, find_executable

__all__ = ["CODEX_ENV_VAR", "CodexBackend", "codex_usage"]

CODEX_ENV_VAR: Final = "LLMCORE_CODEX"
"""Environment variable naming the ``codex`` executable (default: ``codex`` on ``PATH``)."""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def codex_usage(usage: Mapping[str, Any]) -> Usage:
    """Return the :class:`~llmcore.usage.Usage` of a ``turn.completed`` ``usage`` (tokens).

    These are the thread's running totals; :class:`CodexBackend` subtracts the previous turn's.
    """
    total = _int(usage.get("input_tokens"))
    cached = _int(usage.get("cached_input_tokens"))
    written = _int(usage.get("cache_write_input_tokens"))
    return Usage(
        input=max(0, total - cached - written),
        output=_int(usage.get("output_tokens")),
        cache_read=cached,
        cache_write=written,
    )


def _tool(item: Mapping[str, Any]) -> dict[str, Any] | None:
    kind = item.get("type")
    failed = item.get("status") == "failed"
    if kind == "command_execution":
        code = item.get("exit_code")
        return {
            "type": "tool",
            "name": kind,
            "text": str(item.get("command", "")),
            "detail": str(item.get("aggregated_output", "")),
            "isError": failed or (isinstance(code, int) and code != 0),
        }
    if kind == "file_change":
        changes = item.get("changes")
        listed = changes if isinstance(changes, list) else []
        paths = [f"{c.get('kind', '')} {c.get('path', '')}" for c in listed if isinstance(c, dict)]
        return {"type": "tool", "name": kind, "text": "\n".join(paths), "isError": failed}
    if kind == "mcp_tool_call":
        text = f"{item.get('server', '')}.{item.get('tool', '')}"
        return {"type": "tool", "name": kind, "text": text, "isError": failed}
    if kind == "web_search":
        return {"type": "tool", "name": kind, "text": str(item.get("query", "")), "isError": False}
    return None


def _fields(item: Mapping[str, Any]) -> dict[str, Any] | None:
    kind = item.get("type")
    text = item.get("text")
    if kind == "agent_message" and isinstance(text, str) and text:
        return {"type": "assistant", "text": text}
    if kind == "reasoning" and isinstance(text, str) and text:
        return {"type": "thinking", "text": text}
    if kind == "error" and isinstance(item.get("message"), str):
        return {"type": "notice", "text": item["message"]}
    return _tool(item)


def _error_message(value: Any) -> str | None:
    if isinstance(value, dict) and isinstance(value.get("message"), str):
        return str(value["message"])
    return value if isinstance(value, str) else None


class CodexBackend(CLIBackend):
    """Codex CLI (``@openai/codex``) as a conversation backend (SPEC B1).

    Point it at llmcore's emulator with ``env={"CODEX_HOME": home, "EMU_KEY": "x"}`` where
    ``home/config.toml`` sets ``model_provider = "emu"`` and ``[model_providers.emu]`` with
    ``base_url = "<emulator>/v1"``, ``wire_api = "responses"``, ``env_key = "EMU_KEY"``.
    ``--skip-git-repo-check`` is always passed (the backend runs where the host says).
    Arguments: see :class:`~llmcore.backends.base.CLIBackend`.
    """

    provider = "codex"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._totals = Usage()

    def _turn_usage(self, totals: Usage, thread: str | None) -> Usage:
        """Return this turn's usage from the thread's running ``totals``; remember them."""
        before = self._totals if thread is not None and thread == self.session_id else Usage()
        self._totals = totals
        return Usage(
            input=max(0, totals.input - before.input),
            output=max(0, totals.output - before.output),
            cache_read=max(0, totals.cache_read - before.cache_read),
            cache_write=max(0, totals.cache_write - before.cache_write),
        )

    @classmethod
    def default_executable(cls, env: Mapping[str, str]) -> str:
        """Return ``$LLMCORE_CODEX``, else ``codex`` on ``PATH``."""
        return find_executable("codex", CODEX_ENV_VAR, env)

    def argv(self, message: str, resume: str | None) -> list[str]:
        """Return the turn's command line.

        ``codex exec --json --skip-git-repo-check [-m M] [extra args] [resume THREAD]
        -- MESSAGE``.
        """
        argv = [self.executable, "exec", "--json", "--skip-git-repo-check"]
        if self.model:
            argv += ["-m", self.model]
        argv += self.extra_args
        if resume is not None:
            argv += ["resume", resume]
        return [*argv, "--", message]

    def parse(self, events: Sequence[Event]) -> ParsedTurn:
        """Return the turn's items, usage, cost, thread id and error (module doc shapes).

        Remembers the thread's running usage totals, to subtract them on the next turn.
        """
        turn = ParsedTurn(model=self.model or "")
        for event in events:
            kind = event.get("type")
            if kind == "thread.started" and isinstance(event.get("thread_id"), str):
                turn.session_id = event["thread_id"]
            elif kind == "item.completed" and isinstance(event.get("item"), dict):
                fields = _fields(event["item"])
                if fields is not None:
                    turn.items.append(Item.make(id=self.new_id(), **fields))
            elif kind == "turn.completed":
                turn.finished = True
                usage = event.get("usage")
                totals = codex_usage(usage if isinstance(usage, dict) else {})
                turn.usage = self._turn_usage(totals, turn.session_id)
                turn.cost = default_prices().cost(turn.model, turn.usage)
            elif kind == "turn.failed":
                turn.finished = True
                turn.error = _error_message(event.get("error")) or "the turn failed"
            elif kind == "error":
                turn.error = _error_message(event.get("message")) or turn.error
        return turn
