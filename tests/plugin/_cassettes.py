"""Request bodies and VCR cassettes for the pytest plugin's inner test sessions.

Two Anthropic Messages conversations of two requests each: ``STABLE`` appends to the first
request's history; ``BREAKING`` edits the first request's assistant message (``messages[1]``)
in the second, so the auditor reports a break at that message.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

URL = "https://api.anthropic.com/v1/messages"
RESPONSE = '{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],"model":"claude-sonnet-4-6","stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":1}}'


def body(messages: list[dict[str, str]]) -> str:
    return json.dumps(
        {
            "model": "claude-sonnet-4-6",
            "max_tokens": 256,
            "system": "You plan trips.",
            "messages": messages,
        },
        separators=(",", ":"),
    )


def _turns(*texts: str) -> list[dict[str, str]]:
    return [{"role": ("user", "assistant")[i % 2], "content": t} for i, t in enumerate(texts)]


STABLE = [
    body(_turns("Plan a trip", "Where to?", "Lisbon")),
    body(_turns("Plan a trip", "Where to?", "Lisbon", "For how long?", "Three days")),
]
BREAKING = [
    body(_turns("Plan a trip", "Where to?", "Lisbon")),
    body(_turns("Plan a trip", "Where to, exactly?", "Lisbon", "For how long?", "Three days")),
]
BREAK_OFFSET = next(
    i for i, (a, b) in enumerate(zip(BREAKING[0], BREAKING[1], strict=False)) if a != b
)
"""Offset of the first differing byte of ``BREAKING[1]`` (the bodies are ASCII: bytes = chars)."""


def cassette_text(bodies: list[str], url: str = URL) -> str:
    """A vcrpy cassette (YAML) of one POST per body, each answered by ``RESPONSE``."""
    interactions = [
        {
            "request": {
                "body": b,
                "headers": {"content-type": ["application/json"]},
                "method": "POST",
                "uri": url,
            },
            "response": {
                "body": {"string": RESPONSE},
                "headers": {"content-type": ["application/json"]},
                "status": {"code": 200, "message": "OK"},
            },
        }
        for b in bodies
    ]
    return yaml.safe_dump({"interactions": interactions, "version": 1}, width=10**6)


def write_cassette(path: Path, bodies: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(cassette_text(bodies), encoding="utf-8")
    return path
