"""The real Claude Code and Codex CLI against the emulator (opt-in group ``real_cli``).

Run where ``node`` is: ``.ci/run`` installs both programs into ``.npm-clis/`` (or set
``LLMCORE_NPM_CLIS`` to a ``node_modules/.bin`` folder). Skipped, with the reason, only when
the executables are not installed. Each test plays two turns (the second resumes the
program's session), saves and reopens the archive, then plays the first turn after the reopen
(a new session whose message carries the ``# Conversation so far`` preamble).

Fidelity: every answer the emulator gave the real program is read from its access log. Model
endpoints (``/v1/messages``, ``/v1/responses``) must all be 2xx; the other paths each program
calls are listed in :data:`OTHER_PATHS` (Claude Code probes ``HEAD /`` before a session; Codex
calls nothing else) and must be 2xx too, as from the real API.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from llmcore.archive import ArchiveStore
from llmcore.backends import ClaudeCodeBackend, CodexBackend
from llmcore.backends.emulated import (
    CLI_TASK,
    claude_code_env,
    codex_env,
    task_script,
    write_workspace,
)
from llmcore.emulator import Emulator
from tests.conftest import ROOT

BIN = Path(os.environ.get("LLMCORE_NPM_CLIS") or ROOT / ".npm-clis" / "node_modules" / ".bin")

pytestmark = pytest.mark.real_cli

MODEL_PATHS = frozenset({"/v1/messages", "/v1/chat/completions", "/v1/responses"})
OTHER_PATHS = {"claude-code": {"/"}, "codex": set()}
"""Non-model paths each real program calls against its base URL (Claude Code 2.1, Codex)."""
_LINE = re.compile(r'"(?P<method>[A-Z]+) (?P<path>\S+)" (?P<status>\d+) ')


@contextmanager
def _answers() -> Iterator[list[tuple[str, str, int]]]:
    """Collect ``(method, path, status)`` of every answer from the emulator's access log."""
    seen: list[tuple[str, str, int]] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            found = _LINE.search(record.getMessage())
            if found:
                seen.append((found["method"], found["path"], int(found["status"])))

    logger = logging.getLogger("llmcore.emulator.access")
    handler, level = Collect(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield seen
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _check_fidelity(seen: list[tuple[str, str, int]], program: str) -> None:
    model = [(m, p, s) for m, p, s in seen if p in MODEL_PATHS]
    assert model and all(200 <= s < 300 for _, _, s in model), model
    other = [(m, p, s) for m, p, s in seen if p not in MODEL_PATHS]
    assert {p for _, p, _ in other} <= OTHER_PATHS[program], other
    assert all(200 <= s < 300 for _, _, s in other), other


def _executable(name: str) -> str:
    path = BIN / name
    if not path.exists():
        pytest.skip(f"{path} is not installed (npm install --prefix .npm-clis, see .ci/run)")
    return str(path)


def test_real_claude_code(tmp_path: Path) -> None:
    claude = _executable("claude")
    workspace = write_workspace(tmp_path / "ws")
    store = ArchiveStore(tmp_path / "agent")
    with (
        _answers() as seen,
        Emulator(script=task_script("claude-code"), access_log=True) as emulator,
    ):
        env = claude_code_env(emulator.base_url, tmp_path / "home")
        args = ("--allowedTools", "Bash", "Read")

        def backend(conversation: object) -> ClaudeCodeBackend:
            return ClaudeCodeBackend(
                conversation,  # type: ignore[arg-type]
                executable=claude,
                cwd=workspace,
                env=env,
                extra_args=args,
            )

        conversation = store.open()
        first_backend = backend(conversation)
        first = first_backend.run_turn(CLI_TASK[0])
        second = first_backend.run_turn(CLI_TASK[1])
        assert first.session_id and second.session_id == first.session_id
        assert "--resume" not in first.argv and first.session_id in second.argv
        tools = [i.fields() for i in (*first.items, *second.items) if i.type == "tool"]
        assert [t["name"] for t in tools] == ["Bash", "Read"]
        assert "README.md" in tools[0]["detail"] and "A tiny project." in tools[1]["detail"]
        assert second.usage.cache_read > 0
        store.save(conversation)

        reopened = store.open()
        third = backend(reopened).run_turn(CLI_TASK[2])
        assert third.sent.startswith("# Conversation so far\nUser: What files are here?")
        assert third.sent.endswith("\n\nSum it up.") and "--resume" not in third.argv
        assert third.session_id != first.session_id
        assert all("# Conversation so far" not in i.json for i in reopened.state.items)
        assert reopened.state.provider == "claude-code"
    _check_fidelity(seen, "claude-code")


def test_real_codex(tmp_path: Path) -> None:
    codex = _executable("codex")
    workspace = write_workspace(tmp_path / "ws")
    store = ArchiveStore(tmp_path / "agent")
    with _answers() as seen, Emulator(script=task_script("codex"), access_log=True) as emulator:
        env = codex_env(emulator.openai_base_url, tmp_path / "home")

        def backend(conversation: object) -> CodexBackend:
            return CodexBackend(
                conversation,  # type: ignore[arg-type]
                executable=codex,
                cwd=workspace,
                env=env,
                model="gpt-5",
            )

        conversation = store.open()
        first_backend = backend(conversation)
        first = first_backend.run_turn(CLI_TASK[0])
        second = first_backend.run_turn(CLI_TASK[1])
        assert first.session_id and second.session_id == first.session_id
        assert "resume" not in first.argv and first.session_id in second.argv
        tools = [i.fields() for i in (*first.items, *second.items) if i.type == "tool"]
        assert [t["name"] for t in tools] == ["command_execution"] * 2
        assert "README.md" in tools[0]["detail"] and "A tiny project." in tools[1]["detail"]
        # per-turn usage, not the thread's running totals
        assert second.usage.total_input < first.usage.total_input * 3
        assert second.usage.cache_read > 0
        store.save(conversation)

        reopened = store.open()
        third = backend(reopened).run_turn(CLI_TASK[2])
        assert third.sent.startswith("# Conversation so far\nUser: What files are here?")
        assert third.sent.endswith("\n\nSum it up.") and "resume" not in third.argv
        assert third.session_id != first.session_id
        assert all("# Conversation so far" not in i.json for i in reopened.state.items)
    _check_fidelity(seen, "codex")


def test_real_claude_code_through_the_proxy(tmp_path: Path) -> None:
    """Claude Code → ``llmcore proxy`` → emulator: the record audits as the emulator counted.

    Claude Code 2.1 resumes with a different model line in a tool description (a real miss: the
    emulator reads 0) and its prompt as a plain string (issue 19's equivalence, still a break
    today); the proxy, its record and the emulator's reads say the same about each request.
    """
    from llmcore.audit import audit_paths
    from llmcore.proxy import Proxy

    claude = _executable("claude")
    workspace = write_workspace(tmp_path / "ws")
    record = tmp_path / "claude.jsonl"
    seen: list[Any] = []
    with (
        Emulator(script=task_script("claude-code")) as emulator,
        Proxy(emulator.base_url, record=record, observer=seen.append) as proxy,
    ):
        env = {**claude_code_env(proxy.base_url, tmp_path / "home"), "ANTHROPIC_API_KEY": KEY}
        backend = ClaudeCodeBackend(
            ArchiveStore(tmp_path / "agent").open(),
            executable=claude,
            cwd=workspace,
            env=env,
            extra_args=("--allowedTools", "Bash", "Read"),
        )
        first = backend.run_turn(CLI_TASK[0])
        second = backend.run_turn(CLI_TASK[1])
    rows = proxy.audit.rows()  # the proxy has stopped: every request's audit has run
    report = audit_paths([record])
    assert len(report.requests) >= 3 and sum(r.requests for r in rows) == len(report.requests)
    assert [(o.record.verdict, o.record.path) for o in seen] == [
        (r.verdict, r.path) for r in report.requests
    ]
    for r in report.requests[1:]:
        assert r.usage is not None
        if r.verdict == "stable":
            assert r.usage.cache_read_tokens > 0, r  # the emulator read the prefix kept
        if r.divergence in ("tools", "system"):
            assert r.usage.cache_read_tokens == 0, r  # and missed the one broken at its start
    recorded = report.recorded_usage
    assert recorded is not None and recorded.cache_read_tokens > 0
    told = first.usage.cache_read + second.usage.cache_read
    assert recorded.cache_read_tokens >= told > 0  # every model call, the CLI's turns among them
    assert KEY.encode() not in record.read_bytes()


def test_real_codex_through_the_proxy(tmp_path: Path) -> None:
    """Codex → ``llmcore proxy`` (its ``model_providers`` entry) → emulator, two turns.

    The proxy, its record and the emulator's own record (``llmcore emulate --record``: the
    usage it answered) say the same about each request; a request that keeps its prefix was
    read from the cache, and Codex was told the reads recorded.
    """
    from llmcore.audit import audit_paths
    from llmcore.proxy import Proxy

    codex = _executable("codex")
    workspace = write_workspace(tmp_path / "ws")
    record, own = tmp_path / "codex.jsonl", tmp_path / "emulator.jsonl"
    seen: list[Any] = []
    with (
        Emulator(script=task_script("codex"), record=own) as emulator,
        Proxy(emulator.base_url, record=record, observer=seen.append) as proxy,
    ):
        env = codex_env(proxy.base_url + "/v1", tmp_path / "home")
        env["LLMCORE_EMULATOR_KEY"] = OPENAI_KEY
        backend = CodexBackend(
            ArchiveStore(tmp_path / "agent").open(),
            executable=codex,
            cwd=workspace,
            env=env,
            model="gpt-5",
        )
        first = backend.run_turn(CLI_TASK[0])
        second = backend.run_turn(CLI_TASK[1])
    rows = proxy.audit.rows()  # the proxy has stopped: every request's audit has run
    report, counted = audit_paths([record]), audit_paths([own])
    assert len(report.requests) >= 3 and sum(r.requests for r in rows) == len(report.requests)
    verdicts = [(o.record.verdict, o.record.path) for o in seen]
    assert verdicts == [(r.verdict, r.path) for r in report.requests]
    assert verdicts == [(r.verdict, r.path) for r in counted.requests]
    assert [r.usage for r in report.requests] == [r.usage for r in counted.requests]
    assert {r.provider for r in report.requests} == {"openai-responses"}
    for r in report.requests[1:]:
        assert r.usage is not None
        if r.verdict == "stable":
            assert r.usage.cache_read_tokens > 0, r  # the emulator read the prefix kept
    recorded = report.recorded_usage
    assert recorded is not None and recorded.cache_read_tokens > 0
    told = first.usage.cache_read + second.usage.cache_read
    assert recorded.cache_read_tokens >= told > 0
    assert OPENAI_KEY.encode() not in record.read_bytes()


KEY = "sk-ant-proxy-test-0f3a9c"
OPENAI_KEY = "sk-proj-proxy-test-7b2e41"
