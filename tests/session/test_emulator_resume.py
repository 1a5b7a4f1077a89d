"""S3 on the emulator: after a resume the prompt cache misses once, then hits.

The resume block is appended to the system prompt, so the first request after the resume
reads from the cache only what precedes the system prompt (the tools) and writes the rest; the
block stays byte-identical, so every later request reads everything the one before wrote.
The figures are printed (``-s``) and asserted.
"""

from __future__ import annotations

import json

from llmcore.audit import audit_bodies
from llmcore.bench import _agent_tools
from llmcore.emulator import AgentWorkspace, Emulator, ManualClock, parse_script
from llmcore.runner import Runner
from llmcore.session import Session
from llmcore.transport import HTTPTransport
from llmcore.usage import Usage

SYSTEM = "You are a coding agent working in the user's project.\n" + "".join(
    f"- Rule {n}: read a file before you change it, keep changes small, and report each step.\n"
    for n in range(60)
)
MODEL = "claude-sonnet-4-5"
_READ = {"tool_calls": [{"name": "read_file", "arguments": '{"path": "data/big.log"}'}]}
SCRIPT = parse_script(json.dumps([_READ, {"text": "Done."}] * 20).encode())


def _runner(transport: HTTPTransport, session: Session) -> Runner:
    return Runner(
        provider="anthropic",
        model=MODEL,
        transport=transport,
        system=session.system_prompt(SYSTEM),
        tools=_agent_tools(AgentWorkspace()),
    )


def _hit_rate(usages: list[Usage]) -> float:
    read = sum(u.cache_read for u in usages)
    return read / sum(u.input + u.cache_read + u.cache_write for u in usages)


def test_resume_misses_once_then_hits_on_the_emulator(workspace, config, clock, ids):
    emulator = Emulator(clock=ManualClock(), script=SCRIPT).start()
    transport = HTTPTransport(
        base_urls={"anthropic": emulator.base_url}, api_keys={"anthropic": "x"}
    )
    start = {
        "app": "agent",
        "config": config,
        "pid": 10,
        "clock": clock,
        "token": ids,
        "alive": lambda p: False,
    }
    try:
        with Session.start(workspace, ask=lambda q: True, **start) as first:
            runner = _runner(transport, first)
            before_resume: list[Usage] = []
            for index in range(3):
                result = runner.run_turn(first.conversation, f"Step {index}: keep going.")
                before_resume.extend(r.usage for r in result.responses)
                first.record_turn()
        resumed = Session.start(workspace, ask=lambda q: True, **{**start, "pid": 11})
        assert resumed.resume_block and resumed.conversation.history == first.conversation.history
        runner = _runner(transport, resumed)  # a new process: a new runner, the block in its system
        usages: list[Usage] = []
        bodies: list[bytes] = []
        for index in range(3):
            result = runner.run_turn(resumed.conversation, f"After resume {index}.")
            resumed.record_turn()
            usages.extend(r.usage for r in result.responses)
            bodies.extend(result.bodies)
            assert runner.system == resumed.system_prompt(SYSTEM)  # byte-identical every turn
    finally:
        transport.close()
        emulator.stop()
    first_request, second = usages[0], usages[1]
    # Miss once: the system prompt changed, so only the tools are read; the rest is written.
    assert first_request.input == 0 and first_request.cache_write > 0
    tools_only = first_request.cache_read
    # Then hit: each request reads everything the one before wrote.
    assert second.cache_read == first_request.cache_read + first_request.cache_write
    for before, after in zip(usages[1:], usages[2:], strict=False):
        assert after.cache_read >= before.cache_read + before.cache_write
    rate_all = _hit_rate(usages)
    rate_after_first = _hit_rate(usages[1:])
    print(
        f"\nresume on the emulator: {len(usages)} requests; first after resume read {tools_only} "
        f"(tools only), wrote {first_request.cache_write}; hit rate {rate_all:.1%} over all, "
        f"{rate_after_first:.1%} after the first request"
    )
    report = audit_bodies(bodies, provider="anthropic")
    print(f"auditor's theoretical maximum for these bodies: {report.theoretical_hit_rate:.1%}")
    assert rate_after_first > 0.85
    assert tools_only < before_resume[-1].cache_read / 4  # the system and messages missed once
    verdicts = [r.verdict.value for r in report.requests]
    assert "break" not in verdicts[1:]
