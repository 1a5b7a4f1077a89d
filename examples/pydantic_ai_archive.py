"""A pydantic-ai agent's message history saved in an llmcore archive, reopened, and continued.

The agent's model is pydantic-ai's ``AnthropicModel`` pointed at llmcore's emulator on loopback
(no network, no key). The agent runs two turns that call a tool (one call fails, so the history
holds an error result); its ``result.all_messages()`` is converted to llmcore history
(:func:`llmcore.adapters.pydantic_ai.to_history`) and saved in an archive folder. The archive is
reopened, the history converted back (:func:`~llmcore.adapters.pydantic_ai.from_history`), and
the agent continues from it. Its next request body, captured at the HTTP transport, is compared
with the body it sends when continuing from the message list that was never saved: they are the
same bytes, so the provider's prompt cache survives the save and reopen.

Run it with ``python examples/pydantic_ai_archive.py`` (needs the extra:
``pip install 'llmcore[pydantic-ai]'``).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import httpx2
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.providers.anthropic import AnthropicProvider

from llmcore.adapters import pydantic_ai as adapter
from llmcore.archive import ArchiveStore
from llmcore.emulator import Emulator, ManualClock, Reply, Script, ScriptedCall

MODEL = "claude-sonnet-4-6"
SYSTEM_PROMPT = "You answer questions about the weather, briefly."
SCRIPT = Script(
    replies=(
        Reply(
            text="Let me check both cities.",
            tool_calls=(
                ScriptedCall(name="get_weather", arguments='{"city": "Paris"}'),
                ScriptedCall(name="get_weather", arguments='{ "city" : "Oslo" }'),
            ),
        ),
        Reply(text="Paris is sunny; Oslo has no weather station."),
        Reply(tool_calls=(ScriptedCall(name="get_weather", arguments='{"city":"Rome"}'),)),
        Reply(text="Rome is sunny too."),
        Reply(text="You are welcome."),
    )
)
"""The emulator's replies: two tool turns, then the answer to the continuation."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """What the example observed."""

    from_archive: bytes
    """The next request body when the agent continues from the reopened archive."""
    from_memory: bytes
    """The next request body when it continues from the message list never saved."""
    notes: tuple[str, ...]
    """What the conversion to llmcore history dropped or normalized."""
    archive: Path
    """The archive folder that was written."""


def _agent(base_url: str, client: httpx2.AsyncClient) -> Agent[None, str]:
    provider = AnthropicProvider(api_key="emulator", base_url=base_url, http_client=client)
    agent = Agent(AnthropicModel(MODEL, provider=provider), system_prompt=SYSTEM_PROMPT)

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """Return the weather in a city."""
        if city == "Oslo":
            raise ModelRetry("no weather station in Oslo")
        return f"{city}: sunny, 21 °C"

    return agent


def _save_and_reopen(
    messages: list[ModelMessage], folder: Path
) -> tuple[list[ModelMessage], tuple[str, ...]]:
    read = adapter.to_history(messages)
    store = ArchiveStore(folder)
    conversation = store.open()
    conversation.end_turn(messages=read.messages, provider="anthropic", model=MODEL)
    store.save(conversation)
    reopened = ArchiveStore(folder).open()
    back = adapter.from_history(reopened.history, system=(SYSTEM_PROMPT,))
    return back.messages, read.notes + back.notes


async def _run(folder: Path) -> Outcome:
    bodies: list[bytes] = []

    async def capture(request: httpx2.Request) -> None:
        bodies.append(await request.aread())

    with Emulator(clock=ManualClock(), script=SCRIPT) as emulator:
        async with httpx2.AsyncClient(event_hooks={"request": [capture]}) as client:
            agent = _agent(emulator.base_url, client)
            first = await agent.run("What is the weather in Paris and Oslo?")
            second = await agent.run("And in Rome?", message_history=first.all_messages())
            history = second.all_messages()
            restored, notes = _save_and_reopen(history, folder)
            start = len(bodies)
            await agent.run("Thanks!", message_history=restored)
            from_archive = bodies[start]
            start = len(bodies)
            await agent.run("Thanks!", message_history=history)
            from_memory = bodies[start]
    return Outcome(from_archive=from_archive, from_memory=from_memory, notes=notes, archive=folder)


def run(folder: Path) -> Outcome:
    """Run the agent, save and reopen its history in ``folder``, and capture both next bodies.

    Args:
        folder: The archive folder to write (its parent must exist).
    """
    return asyncio.run(_run(folder))


def main() -> int:
    """Run the example in a temporary folder and say whether the bodies are the same bytes."""
    with tempfile.TemporaryDirectory() as tmp:
        outcome = run(Path(tmp) / "agent")
        same = outcome.from_archive == outcome.from_memory
        print(f"next request body: {len(outcome.from_archive)} bytes; identical: {same}")
        for note in outcome.notes:
            print(f"note: {note}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
