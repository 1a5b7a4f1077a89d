"""The local provider emulator (SPEC V2, V4): Anthropic and OpenAI wire formats, cache accounting.

A real HTTP server on loopback (:class:`Emulator`) speaks Anthropic Messages and OpenAI Chat
Completions and Responses, plain JSON and SSE, answers from a deterministic script
(:mod:`llmcore.emulator.script`; default :data:`AGENT_SCRIPT`) and reproduces the providers'
prompt-cache accounting (:mod:`llmcore.emulator.anthropic_cache`,
:mod:`llmcore.emulator.openai_cache`) with its own token counts
(:mod:`llmcore.emulator.tokencount`, not the auditor's :mod:`llmcore.tokens`). It rejects
what the real APIs reject, in their error shapes, and bounds what a client can cost it (body
size, request head size, header and body timeouts, a body deadline, bodies in flight, a cache
memory budget: :class:`Limits`). It reads wire bodies on its own and imports nothing from
:mod:`llmcore.providers` (V4). The names below load their module on first use: the script,
agent and clock modules need neither starlette nor uvicorn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llmcore._lazy import lazy_names as _lazy_names

if TYPE_CHECKING:
    from llmcore.emulator.agent import (
        AGENT_SCRIPT,
        AGENT_TOOLS,
        AGENT_WORKSPACE,
        AgentTool,
        AgentWorkspace,
        ToolOutcome,
    )
    from llmcore.emulator.clock import Clock, ManualClock, SystemClock
    from llmcore.emulator.engine import Engine
    from llmcore.emulator.errors import EmulatorError, Rejection, ScriptError
    from llmcore.emulator.limits import Limits
    from llmcore.emulator.script import (
        Conversation,
        Reply,
        Script,
        ScriptedCall,
        load_script,
        parse_script,
    )
    from llmcore.emulator.server import Emulator, build_app

__all__ = [
    "AGENT_SCRIPT",
    "AGENT_TOOLS",
    "AGENT_WORKSPACE",
    "AgentTool",
    "AgentWorkspace",
    "Clock",
    "Conversation",
    "Emulator",
    "EmulatorError",
    "Engine",
    "Limits",
    "ManualClock",
    "Rejection",
    "Reply",
    "Script",
    "ScriptError",
    "ScriptedCall",
    "SystemClock",
    "ToolOutcome",
    "build_app",
    "load_script",
    "parse_script",
]

_HOMES: dict[str, str] = {
    **dict.fromkeys(
        [
            "AGENT_SCRIPT",
            "AGENT_TOOLS",
            "AGENT_WORKSPACE",
            "AgentTool",
            "AgentWorkspace",
            "ToolOutcome",
        ],
        "llmcore.emulator.agent",
    ),
    **dict.fromkeys(["Clock", "ManualClock", "SystemClock"], "llmcore.emulator.clock"),
    "Engine": "llmcore.emulator.engine",
    **dict.fromkeys(["EmulatorError", "Rejection", "ScriptError"], "llmcore.emulator.errors"),
    "Limits": "llmcore.emulator.limits",
    **dict.fromkeys(
        ["Conversation", "Reply", "Script", "ScriptedCall", "load_script", "parse_script"],
        "llmcore.emulator.script",
    ),
    **dict.fromkeys(["Emulator", "build_app"], "llmcore.emulator.server"),
}
"""Each public name and the module it lives in: the server, the engine and the limits load
starlette and uvicorn, so a name loads its module on first access (PEP 562) and the script,
agent and clock modules stay usable without them."""


__getattr__, __dir__ = _lazy_names(__name__, _HOMES, globals(), extra="emulator")
