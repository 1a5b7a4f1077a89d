"""The cache cost of a reopen for pydantic-ai's OpenAIResponsesModel (issue 22).

pydantic-ai's Responses model sends back the ``id`` of each earlier assistant message and
function call (``msg_…``, ``fc_…``). llmcore's history holds no provider ids (SPEC M4) and format 1
has no place for them, so the message list restored from an archive lacks them: the first
request after a reopen differs from the one the never-saved list sends at the first earlier
assistant item, and reads the cache only up to there. This script measures it on the emulator:
two tool turns, save, reopen, then the next request from the restored list and from the list
that was never saved, with the emulator's reported cache reads.

Run: ``python benchmarks/bench_pydantic_ai_responses.py`` (needs ``llmcore[pydantic-ai,emulator]``).
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import httpx2
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIResponsesModel
from pydantic_ai.providers.openai import OpenAIProvider

from llmcore.adapters import pydantic_ai as adapter
from llmcore.archive import ArchiveStore
from llmcore.emulator import Emulator, Reply, Script, ScriptedCall

MODEL = "gpt-5.4-mini"
SYSTEM_PROMPT = "You answer questions about the weather, briefly. " + "Be precise. " * 1500
SCRIPT = Script(
    replies=(
        Reply(
            text="Checking.",
            tool_calls=(ScriptedCall(name="get_weather", arguments='{"city": "Paris"}'),),
        ),
        Reply(text="Paris is sunny."),
        Reply(tool_calls=(ScriptedCall(name="get_weather", arguments='{"city": "Rome"}'),)),
        Reply(text="Rome is sunny too."),
        Reply(text="You are welcome."),
    )
)


async def _measure(folder: Path) -> dict[str, int]:
    with Emulator(script=SCRIPT) as emulator:
        async with httpx2.AsyncClient() as client:
            provider = OpenAIProvider(
                api_key="emulator", base_url=emulator.base_url + "/v1", http_client=client
            )
            agent = Agent(
                OpenAIResponsesModel(MODEL, provider=provider), system_prompt=SYSTEM_PROMPT
            )

            @agent.tool_plain
            def get_weather(city: str) -> str:
                """Return the weather in a city."""
                return f"{city}: sunny"

            first = await agent.run("Weather in Paris?")
            second = await agent.run("And in Rome?", message_history=first.all_messages())
            history = second.all_messages()
            read = adapter.to_history(history)
            store = ArchiveStore(folder)
            conversation = store.open()
            conversation.end_turn(messages=read.messages, provider="openai-responses", model=MODEL)
            store.save(conversation)
            restored = adapter.from_history(
                ArchiveStore(folder).open().history, system=(SYSTEM_PROMPT,)
            ).messages
            memory = await agent.run("Thanks!", message_history=history)
            archive = await agent.run("Thanks!", message_history=restored)
    return {
        "input_memory": memory.usage.input_tokens,
        "cache_read_memory": memory.usage.cache_read_tokens,
        "input_archive": archive.usage.input_tokens,
        "cache_read_archive": archive.usage.cache_read_tokens,
    }


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        numbers = asyncio.run(_measure(Path(tmp) / "agent"))
    print("next request   input tokens   cache read")
    print(f"never saved    {numbers['input_memory']:>12,}   {numbers['cache_read_memory']:>10,}")
    print(f"after reopen   {numbers['input_archive']:>12,}   {numbers['cache_read_archive']:>10,}")


if __name__ == "__main__":
    main()
