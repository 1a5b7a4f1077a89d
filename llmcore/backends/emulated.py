"""Pointing the real CLIs at llmcore's emulator (SPEC V2, B1): environments and a scripted task.

* :func:`claude_code_env` — Claude Code reads ``ANTHROPIC_BASE_URL`` and ``ANTHROPIC_API_KEY``;
  ``HOME`` is a private folder (its sessions and settings go there) and non-essential traffic
  (telemetry, update checks) is turned off, so only the emulator is contacted.
* :func:`codex_env` — Codex CLI reads ``$CODEX_HOME/config.toml``; it gets a ``model_providers``
  entry whose ``base_url`` is the emulator, ``wire_api = "responses"``.
* :data:`CLI_TASK` and :func:`task_script` — a three-turn task (list the files with a tool,
  read the README with a tool, sum up) scripted with each program's own tool names: Claude
  Code's ``Bash`` and ``Read``, Codex's ``exec_command``. The emulator's built-in agent script
  calls ``list_files`` / ``read_file``, which neither program has (they answer "No such tool
  available" / "unsupported call").
* :func:`write_workspace` — the two files the task reads.

Used by the real-program tests and ``benchmarks/bench_cli_backends.py``; it leaves out
running the programs (``claude_code.py``, ``codex.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final, Literal

from llmcore import jsonbytes
from llmcore.emulator.script import Script, parse_script

__all__ = [
    "CLI_TASK",
    "WORKSPACE_FILES",
    "claude_code_env",
    "codex_env",
    "task_script",
    "write_workspace",
]

CLI_TASK: Final = ("What files are here?", "Read the README.", "Sum it up.")
"""The task's three user messages, in order."""

WORKSPACE_FILES: Final = {"README.md": "# demo\nA tiny project.\n", "app.py": 'print("hi")\n'}
"""The task's workspace: file name → text."""

_CALLS: Final = {
    "claude-code": (
        {"name": "Bash", "arguments": '{"command": "ls", "description": "List files"}'},
        {"name": "Read", "arguments": '{"file_path": "README.md"}'},
    ),
    "codex": (
        {"name": "exec_command", "arguments": '{"cmd": "ls"}'},
        {"name": "exec_command", "arguments": '{"cmd": "cat README.md"}'},
    ),
}


def task_script(cli: Literal["claude-code", "codex"]) -> Script:
    """Return the emulator script of :data:`CLI_TASK` with ``cli``'s tool names.

    Replies in order: text + a list call, text, a read call, text, text (one per assistant
    turn; the program resumes its session, so the counts carry over between turns).
    """
    listing, reading = _CALLS[cli]
    replies = [
        {"text": "Listing the files.", "tool_calls": [listing]},
        {"text": "There are two files: README.md and app.py."},
        {"tool_calls": [reading]},
        {"text": "README.md says: a tiny project."},
        {"text": "Done: a tiny project with one script."},
    ]
    return parse_script(jsonbytes.dumps({"replies": replies}), f"<{cli} task>")


def write_workspace(folder: Path) -> Path:
    """Create ``folder`` with :data:`WORKSPACE_FILES`; return it."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in WORKSPACE_FILES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def claude_code_env(base_url: str, home: Path) -> dict[str, str]:
    """Return the variables that point Claude Code at an emulator's Anthropic ``base_url``.

    Args:
        base_url: ``http://127.0.0.1:PORT`` (the emulator's Anthropic base URL).
        home: A private folder used as ``HOME`` (created).
    """
    home.mkdir(parents=True, exist_ok=True)
    return {
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "emulator",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
    }


def codex_env(openai_base_url: str, home: Path, model: str = "gpt-5") -> dict[str, str]:
    """Write ``home/.codex/config.toml`` for an emulator; return the variables that use it.

    The provider entry: ``[model_providers.emulator]`` with ``base_url = openai_base_url``,
    ``wire_api = "responses"`` and ``env_key = "LLMCORE_EMULATOR_KEY"``.

    Args:
        openai_base_url: ``http://127.0.0.1:PORT/v1`` (the emulator's OpenAI base URL).
        home: A private folder used as ``HOME`` (created); ``CODEX_HOME`` is ``home/.codex``.
        model: The model Codex asks for.
    """
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    config = (
        f'model_provider = "emulator"\nmodel = "{model}"\n\n'
        "[model_providers.emulator]\n"
        'name = "llmcore emulator"\n'
        f'base_url = "{openai_base_url}"\n'
        'wire_api = "responses"\n'
        'env_key = "LLMCORE_EMULATOR_KEY"\n'
    )
    (codex_home / "config.toml").write_text(config, encoding="utf-8")
    return {"HOME": str(home), "CODEX_HOME": str(codex_home), "LLMCORE_EMULATOR_KEY": "emulator"}
