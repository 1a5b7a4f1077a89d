"""The corpus classification (issue 2 item 5): every recorded case in exactly one class.

Each case under ``tests/corpus/{anthropic,openai-chat,openai-responses,bedrock-converse}`` is
its own test, so a
failure names the case. The classes and normalizations are defined in
:mod:`tests.corpus_tests.classify`. :func:`test_class_counts` pins the number of cases per
class, per normalization, per refused feature and the byte-equal rebuilds, so a regression
changes a number; it prints the table (run with ``-s`` to see it).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.corpus_tests.classify import Outcome, classify, load_case

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
APIS = ("anthropic", "openai-chat", "openai-responses", "bedrock-converse")
CASES = [(api, path) for api in APIS for path in sorted((CORPUS / api).glob("*.json"))]


def test_every_case_is_here():
    assert len(CASES) == 478
    assert Counter(api for api, _ in CASES) == {
        "anthropic": 140,
        "openai-chat": 96,
        "openai-responses": 140,
        "bedrock-converse": 102,
    }


@pytest.mark.parametrize(("api", "path"), CASES, ids=[f"{api}/{path.stem}" for api, path in CASES])
def test_case_is_in_one_class(api, path):
    outcome = classify(api, load_case(path))
    assert outcome.klass in ("a", "b", "c", "d"), f"{api}/{path.stem}: {outcome.detail}"


def summarize(outcomes: dict[str, list[Outcome]]) -> dict[str, dict[str, int]]:
    """Counts per API: classes, byte-equal rebuilds, normalizations and refusals by kind."""
    summary: dict[str, dict[str, int]] = {}
    for api, items in outcomes.items():
        counts: Counter[str] = Counter()
        for outcome in items:
            counts[f"class {outcome.klass}"] += 1
            if outcome.byte_equal is not None:
                counts["with request_raw"] += 1
                counts["byte-equal rebuild"] += outcome.byte_equal
            if outcome.klass == "b":
                counts.update(f"normalization: {name}" for name in outcome.detail)
            if outcome.klass == "c":
                counts[f"refused: {outcome.detail[0]}"] += 1
        summary[api] = dict(sorted(counts.items()))
    return summary


EXPECTED: dict[str, dict[str, int]] = {
    # No Converse rebuild is byte-equal to its request_raw: botocore writes json.dumps with its
    # default ", " / ": " separators and ASCII escapes, llmcore compact UTF-8; the class (a)
    # rebuilds re-dumped that way equal request_raw exactly (test_converse_class_a_is_botocore).
    "bedrock-converse": {
        "byte-equal rebuild": 0,
        "class a": 5,
        "class b": 67,
        "class c": 30,
        "normalization: cachePoint placed by P3": 7,
        "normalization: empty system / inferenceConfig omitted": 64,
        "normalization: key order": 16,
        "normalization: reasoning dropped": 5,
        "normalization: status success dropped": 18,
        "normalization: tool result content as one text": 1,
        "refused: document": 10,
        "refused: image source ['s3Location']": 2,
        "refused: tool ['systemTool']": 2,
        "refused: tool result content ['document']": 4,
        "refused: tool result content ['image']": 7,
        "refused: tool result content ['video']": 2,
        "refused: video": 3,
        "with request_raw": 71,
    },
    "anthropic": {
        "byte-equal rebuild": 0,
        "class b": 62,
        "class c": 77,
        "class d": 1,
        "normalization: cache_control placed by P3": 8,
        "normalization: content shorthand": 23,
        "normalization: empty tool description omitted": 14,
        "normalization: is_error false dropped": 14,
        "normalization: key order": 62,
        "normalization: thinking dropped": 5,
        "normalization: tool result text blocks joined": 7,
        "normalization: tool results split from user content": 2,
        "normalization: ttl 5m default": 5,
        "refused: compaction": 2,
        "refused: document": 1,
        "refused: mcp_tool_use": 2,
        "refused: server tool 'advisor_20260301'": 3,
        "refused: server tool 'code_execution_20260120'": 13,
        "refused: server tool 'memory_20250818'": 1,
        "refused: server tool 'tool_search_tool_regex_20251119'": 2,
        "refused: server tool 'web_fetch_20250910'": 2,
        "refused: server tool 'web_search_20250305'": 8,
        "refused: system message inside the conversation": 2,
        "refused: tool field 'defer_loading'": 40,
        "refused: unpaired tool call or result": 1,
        "with request_raw": 33,
    },
    "openai-chat": {
        "byte-equal rebuild": 0,
        "class b": 83,
        "class c": 13,
        "normalization: cache markers dropped": 1,
        "normalization: content shorthand": 79,
        "normalization: developer role as system": 1,
        "normalization: empty assistant content omitted": 11,
        "normalization: empty messages dropped": 1,
        "normalization: empty tool description omitted": 24,
        "normalization: key order": 82,
        "refused: custom tool": 1,
        "refused: file part": 5,
        "refused: image URL": 3,
        "refused: input_audio part": 3,
        "refused: system message after the conversation started": 1,
        "with request_raw": 30,
    },
    "openai-responses": {
        "byte-equal rebuild": 0,
        "class b": 66,
        "class c": 74,
        "normalization: assistant output_text parts as string": 4,
        "normalization: content shorthand": 66,
        "normalization: empty assistant text dropped": 5,
        "normalization: empty instructions omitted": 5,
        "normalization: empty tool description omitted": 19,
        "normalization: empty tools omitted": 3,
        "normalization: item id / status dropped": 16,
        "normalization: key order": 66,
        "normalization: reasoning items dropped": 14,
        "normalization: store false added": 56,
        "normalization: strict false added": 10,
        "normalization: system items as instructions": 6,
        "refused: additional_tools item": 9,
        "refused: code_interpreter tool": 5,
        "refused: conversation": 1,
        "refused: custom tool": 1,
        "refused: function_call_output with content parts": 2,
        "refused: image_generation tool": 2,
        "refused: input_file part": 4,
        "refused: input_image by URL": 1,
        "refused: mcp tool": 3,
        "refused: namespace tool": 1,
        "refused: previous_response_id": 2,
        "refused: prompt": 4,
        "refused: system message inside the conversation": 1,
        "refused: tool_search tool": 27,
        "refused: web_search tool": 8,
        "refused: web_search_preview tool": 3,
        "with request_raw": 27,
    },
}


def test_class_counts():
    outcomes: dict[str, list[Outcome]] = {api: [] for api in APIS}
    for api, path in CASES:
        outcomes[api].append(classify(api, load_case(path)))
    summary = summarize(outcomes)
    for api, counts in summary.items():
        print(f"\n{api}:")
        for key, value in counts.items():
            print(f"  {value:4d}  {key}")
    assert summary == EXPECTED


def test_converse_class_a_is_botocore_json_of_the_rebuilt_body():
    """Where a Converse case rebuilds equal, botocore's own serialization of it is request_raw."""
    import json

    from llmcore.providers import get_provider

    provider = get_provider("bedrock-converse")
    checked = 0
    for api, path in CASES:
        case = load_case(path)
        if api != "bedrock-converse" or "request_raw" not in case:
            continue
        if classify(api, case).klass != "a":
            continue
        body = {**case["request"], "modelId": case["meta"]["model_id"]}
        raw = case["request_raw"].encode("utf-8")
        built = provider.build_body(provider.import_body(body, raw=raw).request)
        assert json.dumps(json.loads(built)) == case["request_raw"], path.name
        checked += 1
    assert checked == 4
