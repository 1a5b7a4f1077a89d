"""The LiteLLM callback (SPEC V6): with LiteLLM's hook arguments, and with LiteLLM itself."""

from __future__ import annotations

import os
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from llmcore.audit import CacheBreakWarning
from llmcore.audit.litellm_callback import CacheBreakLogger
from llmcore.emulator import Emulator

RULES = "Rules of the house. " * 400


def _kwargs(call: str, system: str, turns: int) -> dict[str, Any]:
    messages = [{"role": "system", "content": system}, {"role": "user", "content": "q"}]
    for n in range(turns):
        messages += [
            {"role": "assistant", "content": f"a{n}"},
            {"role": "user", "content": f"q{n}"},
        ]
    return {
        "litellm_call_id": call,
        "custom_llm_provider": "openai",
        "additional_args": {
            "api_base": "https://api.openai.com/v1",
            "complete_input_dict": {"model": "gpt-4o", "messages": messages},
        },
    }


def test_the_hook_arguments_litellm_passes_are_audited_and_counted() -> None:
    seen: list[Any] = []
    logger = CacheBreakLogger(on_break=seen.append)
    for n, system in enumerate([RULES, RULES, RULES + "!"]):
        kwargs = _kwargs(f"call-{n}", system, n)
        logger.log_pre_api_call("gpt-4o", None, kwargs)
        usage = {
            "prompt_tokens": 2000,
            "prompt_tokens_details": {"cached_tokens": 1024 if n else 0},
        }
        logger.log_success_event(
            kwargs, SimpleNamespace(usage=SimpleNamespace(model_dump=lambda u=usage: u)), None, None
        )
    assert [(o.number, o.record.path) for o in seen] == [(2, "messages[0].content")]
    (row,) = logger.audit.rows()
    assert row.requests == 3 and row.recorded_hit_rate == pytest.approx(2048 / 6000)
    assert row.provider == "openai-chat"


@pytest.fixture(scope="module")
def emulator() -> Iterator[Emulator]:
    with Emulator() as emu:
        yield emu


@pytest.mark.filterwarnings("ignore:.*`ReadOnly` qualifier:UserWarning")  # pydantic on LiteLLM
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_litellm_completion_against_the_emulator(
    emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the price table
    litellm = pytest.importorskip(
        "litellm", reason="LiteLLM is in the peers extra (pip install 'llmcore[peers]')"
    )
    monkeypatch.setattr(litellm, "telemetry", False, raising=False)
    logger = CacheBreakLogger()
    monkeypatch.setattr(litellm, "callbacks", [logger])
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": RULES},
        {"role": "user", "content": "one"},
    ]
    for text in ("two", "three"):
        reply = litellm.completion(
            model="openai/gpt-4o", messages=messages, api_base=emulator.openai_base_url, api_key="k"
        )
        messages += [
            {"role": "assistant", "content": reply.choices[0].message.content},
            {"role": "user", "content": text},
        ]
    messages[0] = {"role": "system", "content": RULES + " Edited."}
    with pytest.warns(CacheBreakWarning) as caught:
        litellm.completion(
            model="openai/gpt-4o", messages=messages, api_base=emulator.openai_base_url, api_key="k"
        )
    breaks = [w.message.observation for w in caught if isinstance(w.message, CacheBreakWarning)]
    assert [(o.number, o.record.path) for o in breaks] == [(2, "messages[0].content")]
    (row,) = logger.audit.rows()
    assert row.requests == 3 and row.recorded_hit_rate is not None and row.recorded_hit_rate > 0
    assert "LITELLM_LOCAL_MODEL_COST_MAP" in os.environ
