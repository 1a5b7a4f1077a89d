"""Cache hit rate of the real Claude Code and Codex CLI beside llmcore's runner (SPEC B1, V2, R2).

The same scripted three-turn task (:data:`llmcore.backends.emulated.CLI_TASK`: list the files
with a tool, read the README with a tool, sum up) is played against the provider emulator on
loopback by:

* real Claude Code (``ClaudeCodeBackend``, ``--resume`` on turns 2–3), Anthropic Messages,
  with its default model and with ``--model claude-opus-4-8``;
* real Codex CLI (``CodexBackend``, ``exec … resume`` on turns 2–3), OpenAI Responses;
* llmcore's own runner (``llmcore.runner.Runner`` over ``HTTPTransport``) on ``anthropic``
  (claude-sonnet-4-5) and ``openai-responses`` (gpt-5), with the emulator's workspace tools
  (``list_files``, ``read_file``) and ``llmcore bench``'s system prompt — once as is and once
  padded to about the matching CLI's prompt size, so prompt size is not what differs.

Each client gets its own emulator (a fresh cache) and a script in its own tool names. Usage is
the emulator's accounting (for the CLIs, as the programs report it per turn). hit rate =
Σcache_read ÷ Σ(input + cache_read + cache_write). The prompts differ in size — the CLIs send
their own system prompts and tool sets (about 20,000 tokens for Claude Code, 10,000 for
Codex), the runner about 1,300 — so the table shows the mean prompt per request too.

Run: ``python benchmarks/bench_cli_backends.py`` (the CLIs from ``.npm-clis/`` or
``LLMCORE_NPM_CLIS``; a missing one is reported and skipped). Prints a rich table and writes
``results/bench_cli_backends.json``.
"""

from __future__ import annotations

import os
import platform
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from llmcore import jsonbytes
from llmcore.archive import Conversation as ArchiveConversation
from llmcore.backends import ClaudeCodeBackend, CLIBackend, CodexBackend
from llmcore.backends.emulated import (
    CLI_TASK,
    claude_code_env,
    codex_env,
    task_script,
    write_workspace,
)
from llmcore.emulator import AGENT_TOOLS, Emulator, parse_script
from llmcore.emulator.session import SYSTEM
from llmcore.request import Params
from llmcore.runner import Conversation, FunctionTool, Runner, ToolOutput
from llmcore.transport import HTTPTransport
from llmcore.usage import Usage

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(os.environ.get("LLMCORE_NPM_CLIS") or ROOT / ".npm-clis" / "node_modules" / ".bin")
RESULTS = ROOT / "results" / "bench_cli_backends.json"
CLIS: tuple[tuple[type[CLIBackend], str, str | None], ...] = (
    (ClaudeCodeBackend, "claude", None),
    (ClaudeCodeBackend, "claude", "claude-opus-4-8"),
    (CodexBackend, "codex", None),
)
"""(backend, executable name, model): Claude Code runs with its default model and with the
same model named explicitly (its default resolves to ``claude-opus-4-8[1m]`` in a new session
but to ``claude-opus-4-8`` in a resumed one, which rewrites the system prompt: see README)."""
RUNNERS = (("anthropic", "claude-sonnet-4-5", 19_000), ("openai-responses", "gpt-5", 10_000))
"""(provider, model, padded system size): each runs once as is and once with a system prompt
padded to about the CLI's prompt size (Claude Code ~19,000 tokens, Codex ~10,000)."""


@dataclass
class Row:
    """One client's run of the task."""

    client: str
    api: str
    model: str
    turns: list[Usage]
    requests: int
    seconds: float
    note: str = ""

    @property
    def total(self) -> Usage:
        """The sum over turns."""
        total = Usage()
        for usage in self.turns:
            total = total + usage
        return total

    @property
    def hit_rate(self) -> float:
        """Σcache_read ÷ Σ(input + cache_read + cache_write)."""
        total = self.total
        return total.cache_read / total.total_input if total.total_input else 0.0

    def to_json(self) -> dict[str, Any]:
        """The row as JSON."""
        total = self.total
        return {
            "client": self.client,
            "api": self.api,
            "model": self.model,
            "requests": self.requests,
            "seconds": round(self.seconds, 2),
            "input": total.input,
            "cacheRead": total.cache_read,
            "cacheWrite": total.cache_write,
            "output": total.output,
            "hitRate": round(self.hit_rate, 4),
            "perTurnHitRate": [
                round(u.cache_read / u.total_input, 4) if u.total_input else 0.0 for u in self.turns
            ],
            "note": self.note,
        }


def _cli(kind: type[CLIBackend], name: str, tmp: Path, model: str | None = None) -> Row | str:
    executable = BIN / name
    if not executable.exists():
        return f"{executable} not installed"
    cli = "claude-code" if kind is ClaudeCodeBackend else "codex"
    workspace = write_workspace(tmp / f"{name}-{model}-ws")
    with Emulator(script=task_script(cli)) as emulator:  # type: ignore[arg-type]
        if kind is ClaudeCodeBackend:
            env = claude_code_env(emulator.base_url, tmp / f"{name}-{model}-home")
            extra: tuple[str, ...] = ("--allowedTools", "Bash", "Read")
        else:
            env = codex_env(emulator.openai_base_url, tmp / f"{name}-home")
            extra, model = (), "gpt-5"
        backend = kind(
            ArchiveConversation(),
            executable=str(executable),
            cwd=workspace,
            env=env,
            extra_args=extra,
            model=model,
        )
        start = time.perf_counter()
        turns = [backend.run_turn(message).usage for message in CLI_TASK]
        seconds = time.perf_counter() - start
        requests = emulator.engine.counts["requests"]
    api = "anthropic messages" if cli == "claude-code" else "openai responses"
    used = backend.conversation.state.model
    client = f"{name} --model {model}" if model and cli == "claude-code" else name
    return Row(client, api, used, turns, requests, seconds)


_RUNNER_REPLIES = [
    {"text": "Listing the files.", "tool_calls": [{"name": "list_files", "arguments": "{}"}]},
    {"text": "There are two files: README.md and app.py."},
    {"tool_calls": [{"name": "read_file", "arguments": '{"path": "README.md"}'}]},
    {"text": "README.md says: a tiny project."},
    {"text": "Done: a tiny project with one script."},
]


def _tools(workspace: Path) -> list[FunctionTool]:
    def list_files(arguments: dict[str, Any]) -> ToolOutput:
        lines = [f"{p.name}\t{p.stat().st_size}" for p in sorted(workspace.iterdir())]
        return ToolOutput(content="\n".join(lines))

    def read_file(arguments: dict[str, Any]) -> ToolOutput:
        return ToolOutput(content=(workspace / str(arguments["path"])).read_text())

    functions = {"list_files": list_files, "read_file": read_file}
    return [
        FunctionTool.create(t.name, t.description, dict(t.input_schema), functions[t.name])
        for t in AGENT_TOOLS
        if t.name in functions
    ]


def _system(tokens: int | None) -> str:
    """``llmcore bench``'s system prompt, padded to about ``tokens`` tokens (4 bytes each)."""
    if tokens is None:
        return SYSTEM
    lines = [SYSTEM, ""]
    number = 0
    while len("\n".join(lines).encode()) < 4 * tokens:
        number += 1
        lines.append(f"Reference note {number}: keep answers short and cite the files you read.")
    return "\n".join(lines)


def _runner(provider: str, model: str, tmp: Path, system_tokens: int | None = None) -> Row:
    workspace = write_workspace(tmp / f"runner-{provider}-{system_tokens}-ws")
    script = parse_script(jsonbytes.dumps({"replies": _RUNNER_REPLIES}))
    with Emulator(script=script) as emulator:
        transport = HTTPTransport(
            base_urls={provider: emulator.base_url}, api_keys={provider: "emulator"}
        )
        runner = Runner(
            provider=provider,
            model=model,
            transport=transport,
            system=(_system(system_tokens),),
            tools=_tools(workspace),
            params=Params(max_tokens=1024),
        )
        conversation = Conversation()
        turns: list[Usage] = []
        start = time.perf_counter()
        for message in CLI_TASK:
            result = runner.run_turn(conversation, message)
            conversation = result.conversation
            usage = Usage()
            for response in result.responses:
                usage = usage + response.usage
            turns.append(usage)
        seconds = time.perf_counter() - start
        transport.close()
        requests = emulator.engine.counts["requests"]
    api = "anthropic messages" if provider == "anthropic" else "openai responses"
    sized = "" if system_tokens is None else f", system padded to {system_tokens:,} tokens"
    return Row(f"llmcore runner ({provider}{sized})", api, model, turns, requests, seconds)


def _table(rows: list[Row]) -> Table:
    table = Table(title="Cache hit rate on the scripted 3-turn task (emulator, loopback)")
    for name in ("client", "api", "requests", "prompt/req", "input", "cache read", "cache write"):
        table.add_column(name, justify="left" if name in ("client", "api") else "right")
    table.add_column("hit rate", justify="right")
    table.add_column("per turn", justify="right")
    for row in rows:
        total = row.total
        per_turn = " ".join(
            f"{u.cache_read / u.total_input:.0%}" if u.total_input else "-" for u in row.turns
        )
        table.add_row(
            row.client,
            row.api,
            str(row.requests),
            f"{total.total_input // max(row.requests, 1):,}",
            f"{total.input:,}",
            f"{total.cache_read:,}",
            f"{total.cache_write:,}",
            f"{row.hit_rate:.1%}",
            per_turn,
        )
    return table


def main() -> None:
    """Play the task on every client, print the table, write the JSON results."""
    console = Console(width=150)
    rows: list[Row] = []
    skipped: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="llmcore-cli-bench-") as tmp_name:
        tmp = Path(tmp_name)
        for kind, name, model in CLIS:
            with console.status(f"running {name} …"):
                outcome = _cli(kind, name, tmp, model)
            if isinstance(outcome, str):
                skipped[f"{name} {model or ''}".strip()] = outcome
                console.print(f"[yellow]skipped {name}: {outcome}")
            else:
                rows.append(outcome)
        for provider, model, padded in RUNNERS:
            rows.append(_runner(provider, model, tmp))
            rows.append(_runner(provider, model, tmp, padded))
    console.print(_table(rows))
    RESULTS.parent.mkdir(exist_ok=True)
    value = {
        "task": list(CLI_TASK),
        "platform": platform.platform(),
        "rows": [row.to_json() for row in rows],
        "skipped": skipped,
    }
    RESULTS.write_bytes(jsonbytes.dumps_sorted(value, indent=2) + b"\n")
    console.print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
