"""The recorded Gemini corpus (``tests/corpus/gemini``): every case imported and rebuilt.

The cases come from pydantic-ai's cassettes (google-genai requests, re-serialized by its recorder
with sorted keys, so no recorded bytes exist and no rebuild can be compared byte for byte). Each
case is imported (its model from the recorded URL) and rebuilt; the rebuilt body must equal the
recorded one as a JSON value after exactly the documented normalizations, each counted:

* ``thoughtSignature`` members and thought parts dropped (M4; they live in the running turn's
  carry, never in the history);
* ``systemInstruction.role`` dropped (llmcore sends ``parts`` only);
* a declaration's ``parameters_json_schema`` (google-genai's snake-case spelling) or
  ``parameters`` written as ``parametersJsonSchema``, an empty ``description`` left out;
* a content's missing ``role`` written as ``user``;
* a content holding only empty text dropped (no neutral message holds only that; pydantic-ai
  sends one for an empty user prompt).

Cases outside the four content cases (built-in tools, ``fileData``, inline video and PDF) are
refused with a typed error.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from llmcore.errors import RequestFileError, UnsupportedContentError
from llmcore.providers import get_provider

CASES = sorted((Path(__file__).resolve().parents[1] / "corpus" / "gemini").glob("*.json"))
P = get_provider("gemini")


def _model(case: dict[str, Any]) -> str:
    uri: str = case["meta"]["uri"]
    return uri.split("/models/", 1)[1].split(":", 1)[0]


def _parts(content: dict[str, Any], seen: Counter[str]) -> None:
    if "role" not in content:
        content["role"] = "user"
        seen["role written"] += 1
    kept = []
    for part in content.get("parts", []):
        if part.pop("thoughtSignature", None) is not None:
            seen["thoughtSignature dropped"] += 1
        if part.get("thought") is True:
            seen["thought part dropped"] += 1
            continue
        kept.append(part)
    content["parts"] = kept


def _declaration(decl: dict[str, Any], seen: Counter[str]) -> None:
    for old in ("parameters_json_schema", "parameters"):
        if old in decl:
            decl["parametersJsonSchema"] = decl.pop(old)
            seen[f"{old} renamed"] += 1
    if decl.get("description") == "":
        del decl["description"]
        seen["empty description dropped"] += 1


def normalize(body: dict[str, Any], seen: Counter[str]) -> dict[str, Any]:
    """The recorded body as llmcore writes it (the module doc's normalizations, counted)."""
    out = copy.deepcopy(body)
    for content in out.get("contents", []):
        _parts(content, seen)
    empty = [c for c in out.get("contents", []) if all(p.get("text") == "" for p in c["parts"])]
    if empty:
        seen["empty-text content dropped"] += len(empty)
        out["contents"] = [c for c in out["contents"] if c not in empty]
    system = out.get("systemInstruction")
    if isinstance(system, dict) and system.pop("role", None) is not None:
        seen["systemInstruction.role dropped"] += 1
    for tool in out.get("tools", []):
        for decl in tool.get("functionDeclarations", []):
            _declaration(decl, seen)
    return out


def test_every_case_imports_and_rebuilds_to_the_recorded_value() -> None:
    assert len(CASES) == 74
    outcomes: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    for path in CASES:
        case = json.loads(path.read_bytes())
        assert case["license"] == "MIT" and case["source"].startswith("pydantic/pydantic-ai:")
        body = case["request"]
        try:
            request = P.import_body({"model": _model(case), **body}, location=path.name).request
        except UnsupportedContentError:
            outcomes["refused: outside the four cases"] += 1
            continue
        except RequestFileError as exc:
            assert "base64" in exc.message, path.name
            outcomes["refused: malformed inline data"] += 1
            continue
        rebuilt = json.loads(P.build_body(request))
        assert rebuilt == normalize(body, seen), path.name
        outcomes["rebuilt"] += 1
        if rebuilt == body:
            outcomes["rebuilt with no normalization"] += 1
    assert outcomes == {
        "rebuilt": 58,
        "rebuilt with no normalization": 16,
        "refused: outside the four cases": 16,  # built-in tools, fileData, video/PDF inlineData
    }
    assert set(seen) <= {
        "role written",
        "thoughtSignature dropped",
        "thought part dropped",
        "systemInstruction.role dropped",
        "parameters_json_schema renamed",
        "parameters renamed",
        "empty description dropped",
        "empty-text content dropped",
    }


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_recorded_responses_parse(path: Path) -> None:
    case = json.loads(path.read_bytes())
    response = case["response"]
    if case["status"] != 200 or not isinstance(response, dict) or ":stream" in case["meta"]["uri"]:
        return
    parsed = P.parse_response(json.dumps(response).encode())
    usage = response.get("usageMetadata", {})
    cached = usage.get("cachedContentTokenCount", 0)
    assert parsed.usage.cache_read == cached
    assert parsed.usage.input == usage.get("promptTokenCount", 0) - cached + usage.get(
        "toolUsePromptTokenCount", 0
    )
    assert parsed.usage.output == usage.get("candidatesTokenCount", 0) + usage.get(
        "thoughtsTokenCount", 0
    )
