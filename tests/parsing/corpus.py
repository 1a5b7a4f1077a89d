"""Loading corpus cases for the parsing tests (``tests/corpus``, else ``../shared/corpus``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def corpus_dir() -> Path:
    vendored = ROOT / "tests" / "corpus"
    return vendored if vendored.is_dir() else ROOT.parent / "shared" / "corpus"


def cases(api: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in sorted((corpus_dir() / api).glob("*.json")):
        out.append((f"{api}/{path.name}", json.loads(path.read_text(encoding="utf-8"))))
    return out


def json_cases(api: str, status: int | None = 200) -> list[tuple[str, dict[str, Any]]]:
    """Cases with a JSON response (status 200, or error statuses when ``status`` is None)."""
    picked = []
    for name, case in cases(api):
        if case.get("response") is None:
            continue
        if status is None and case["status"] >= 400 or case["status"] == status:
            picked.append((name, case))
    return picked


def sse_cases(api: str) -> list[tuple[str, dict[str, Any]]]:
    return [(n, c) for n, c in cases(api) if c.get("response_sse")]


def body_bytes(response: Any) -> bytes:
    """The recorded JSON response as the bytes a server would send (the corpus keeps it parsed)."""
    return json.dumps(response).encode("utf-8")


def chunked(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]
