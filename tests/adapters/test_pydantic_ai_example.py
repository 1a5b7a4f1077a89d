"""The pydantic-ai archive example: the body after a save and reopen is byte-identical."""

from __future__ import annotations

import importlib.util
import json
import sys

from tests.conftest import ROOT


def _example(monkeypatch):
    spec = importlib.util.spec_from_file_location(
        "pydantic_ai_archive", ROOT / "examples" / "pydantic_ai_archive.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_next_body_after_save_and_reopen_is_byte_identical(tmp_path, monkeypatch):
    outcome = _example(monkeypatch).run(tmp_path / "agent")
    assert outcome.from_archive == outcome.from_memory
    assert outcome.notes == ()
    # Not vacuous: the body carries the whole two-turn conversation, its tool calls and the
    # error result, and the archive holds the arguments exactly as the model produced them.
    body = json.loads(outcome.from_archive)
    assert len(outcome.from_archive) > 1000
    assert [m["role"] for m in body["messages"]] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    calls = [b for m in body["messages"] for b in m["content"] if b["type"] == "tool_use"]
    assert [c["input"] for c in calls] == [{"city": "Paris"}, {"city": "Oslo"}, {"city": "Rome"}]
    results = [b for m in body["messages"] for b in m["content"] if b["type"] == "tool_result"]
    assert [r["is_error"] for r in results] == [False, True, False]
    assert body["system"].endswith("You answer questions about the weather, briefly.")
    saved = (tmp_path / "agent" / "conversation.json").read_text(encoding="utf-8")
    assert '"arguments": "{ \\"city\\" : \\"Oslo\\" }"' in saved
