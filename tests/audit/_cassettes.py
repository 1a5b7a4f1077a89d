"""Small synthetic VCR cassettes for the auditor tests (written as vcrpy writes them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

URIS = {
    "anthropic": "https://api.anthropic.com/v1/messages",
    "openai-chat": "https://api.openai.com/v1/chat/completions",
    "openai-responses": "https://api.openai.com/v1/responses",
    "openrouter": "https://openrouter.ai/api/v1/chat/completions",
}


def interaction(
    body: bytes, provider: str = "anthropic", response: Any = None, headers: Any = None
) -> dict[str, Any]:
    """One POST interaction; ``response`` is the response body as the cassette stores it."""
    out: dict[str, Any] = {
        "request": {"body": body.decode("utf-8"), "method": "POST", "uri": URIS[provider]}
    }
    if response is not None:
        out["response"] = {
            "body": response if isinstance(response, dict) else {"string": response},
            "headers": headers or {},
            "status": {"code": 200, "message": "OK"},
        }
    return out


def write(path: Path, interactions: list[dict[str, Any]]) -> Path:
    """Write a cassette file and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"interactions": interactions, "version": 1}
    path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path
