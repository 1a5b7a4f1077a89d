"""The auditor over the whole recorded corpus: no crash, and what it finds there.

The corpus holds single requests from many unrelated test suites, so most requests start new
conversations; those that share a first history message are grouped and compared as V1 says,
which finds real differences between neighbouring recordings (edited tools, system prompts,
provider ids) and one real Anthropic thinking drop.
"""

from __future__ import annotations

from pathlib import Path

from llmcore.audit import Verdict, audit_paths

ROOT = Path(__file__).resolve().parents[2]


def _corpus() -> Path:
    vendored = ROOT / "tests" / "corpus"
    return vendored if vendored.is_dir() else ROOT.parent / "shared" / "corpus"


def test_whole_corpus_audits_without_error():
    corpus = _corpus()
    cases = sorted(p for p in corpus.rglob("*.json") if p.name != "manifest.json")
    report = audit_paths([corpus])
    assert len(report.requests) == len(cases) == 552
    assert [r.source for r in report.requests] == [str(p) for p in cases]
    counts = report.counts()
    assert sum(counts.values()) == 552
    # What the audit finds on the corpus (recorded here so a change in the auditor shows up).
    # Bedrock Converse (102 cases, pydantic-ai's cassettes): 41 new, 30 stable, 28 breaks, 3
    # shorter reruns. The 74 Gemini cases: 37 new, 25 stable, 11 breaks between neighbouring
    # recordings (tools or system instruction added, removed or edited), 1 shorter rerun.
    assert counts == {
        "new": 271,
        "stable": 145,
        # 18 more since issue 19: model and response_format changes (parameter), and 5 requests
        # whose first message differs but whose later messages join an earlier case (grouping
        # by meaning), each then a break at that message
        "break": 127,
        "thinking_dropped": 1,
        "reasoning_dropped": 0,
        "compaction": 0,
        "deferred_tools": 0,
        "retry": 1,  # two cases hold byte-identical bodies
        "shorter_rerun": 7,  # a shorter request after a longer one with the same start
        "continuation": 0,
        "rejected": 0,
    }
    assert report.conversations == 271
    providers = {r.provider for r in report.requests}
    assert providers == {
        "anthropic",
        "openai-chat",
        "openai-responses",
        "gemini",
        "bedrock-converse",
    }
    by_dir = {p.parent.name for p in cases}
    for r in report.requests:
        assert Path(r.source).parent.name == r.provider  # shape detection agrees with the folders
    assert by_dir == providers
    dropped = [r for r in report.requests if r.verdict is Verdict.THINKING_DROPPED]
    assert [Path(r.source).name for r in dropped] == ["0026.json"]
    for r in report.requests:
        assert (r.first_break_offset is None) == (
            r.verdict in (Verdict.NEW, Verdict.STABLE, Verdict.RETRY)
        )
        assert 0 <= r.max_cacheable_tokens <= r.total_tokens
