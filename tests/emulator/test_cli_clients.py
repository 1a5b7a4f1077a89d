"""What real CLI clients send and the real APIs accept (SPEC V2; issue 9 "CLI backends").

Claude Code 2.1.197 sends a ``system``-role message after the first user message, naming the
``mid-conversation-system-2026-04-07`` beta; Codex CLI 0.171.0 sends ``client_metadata`` on
every Responses request. Both are accepted; what the real APIs refuse still is.
"""

from __future__ import annotations

from typing import Any

from tests.emulator.helpers import Api

BETA = "mid-conversation-system-2026-04-07"


def _claude_body() -> dict[str, Any]:
    return {
        "model": "claude-opus-4-8",
        "max_tokens": 100,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "system", "content": "Available agent types: …"},
        ],
    }


def test_system_message_accepted_under_its_beta(api: Api) -> None:
    beta = f"claude-code-20250219,{BETA},effort-2025-11-24"
    response = api.messages(_claude_body(), **{"anthropic-beta": beta})
    assert response.status_code == 200, response.text


def test_system_message_refused_without_the_beta(api: Api) -> None:
    response = api.messages(_claude_body(), **{"anthropic-beta": "claude-code-20250219"})
    assert response.status_code == 400
    assert response.json()["error"]["message"] == (
        "messages.1.role: Input should be 'user' or 'assistant'"
    )


def test_system_message_never_first(api: Api) -> None:
    body = _claude_body()
    body["messages"].reverse()
    response = api.messages(body, **{"anthropic-beta": BETA})
    assert response.status_code == 400
    assert "messages.0.role" in response.json()["error"]["message"]


def test_client_metadata_accepted(api: Api) -> None:
    body = {
        "model": "gpt-5",
        "input": "hi",
        "client_metadata": {"session_id": "01a2", "turn_id": "01a3"},
    }
    response = api.responses(body)
    assert response.status_code == 200, response.text


def test_unknown_responses_parameter_still_refused(api: Api) -> None:
    response = api.responses({"model": "gpt-5", "input": "hi", "client_meta": {}})
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "Unknown parameter: 'client_meta'."
