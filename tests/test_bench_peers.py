"""A CI sample of ``benchmarks/bench_peers.py``: turn 2, the first emulator prompt, installed peers.

The full run (N = 10, 50, 200, the 400-request session) is the benchmark; this sample checks the
shape of its results, that llmcore's bodies on the wire are byte-exact (incremental and cold
equal a cold ``build_body``), and that llmcore sends every tool-call argument back byte for
byte. A peer that is not installed is skipped, naming the extra that installs it.
"""

import pytest

from benchmarks.bench_peers import markdown, run, timing_table
from benchmarks.peer_drivers import PEER_MODULES, PEER_PROVIDERS, missing

PEERS = list(PEER_MODULES)


@pytest.fixture(scope="module")
def sample():
    return run(turns=(2,), reps=1, session_turns=2, prompts=1)


def series_rows(sample, section, name):
    return [r for r in sample[section] if r["series"] == name]


def test_llmcore_bodies_on_the_wire_are_byte_exact(sample):
    # turn 2 and the session's last request, incremental and cold, on both wire formats
    assert sample["llmcoreBodiesChecked"] == 8
    assert sample["llmcoreBodiesDifferent"] == []


def test_llmcore_sends_every_argument_back_byte_for_byte(sample):
    rows = series_rows(sample, "cache", "llmcore")
    assert [r["provider"] for r in rows] == ["anthropic", "openai-chat"]
    for row in rows:
        # the first prompt: list_files, a read, two parallel reads
        assert row["arguments"] == 4
        assert row["argumentsExact"] == row["arguments"]
        assert row["argumentShare"] == 1.0
        # the emulator and the auditor estimate tokens independently (SPEC V4), so the
        # emulator's rate may pass the auditor's maximum by the estimates' difference
        assert 0.0 <= row["hitRate"] <= row["theoreticalHitRate"] + 0.02


def test_llmcore_series_and_ratios(sample):
    for provider in ("anthropic", "openai-chat"):
        rows = {r["series"]: r for r in sample["timings"] if r["provider"] == provider}
        assert rows["llmcore incremental"]["ratioToIncremental"] == 1.0
        assert rows["llmcore cold"]["medianMs"] > 0
        session = {r["series"]: r for r in sample["sessions"] if r["provider"] == provider}
        assert session["llmcore incremental"]["requests"] == 4  # 2 turns: user and tool results


@pytest.mark.parametrize("peer", PEERS)
def test_peer_sample(sample, peer):
    lacking = missing(peer)
    if lacking:  # not installed here: the bench must name it with the extra and time nothing
        assert "'peers' extra" in sample["skipped"][peer]
        assert series_rows(sample, "timings", peer) == []
        assert series_rows(sample, "cache", peer) == []
        return
    assert peer not in sample["skipped"]
    providers = list(PEER_PROVIDERS[peer])
    timings = series_rows(sample, "timings", peer)
    assert [(r["provider"], r["turns"]) for r in timings] == [(p, 2) for p in providers]
    for row in timings:
        base = next(
            r
            for r in sample["timings"]
            if r["series"] == "llmcore incremental" and r["provider"] == row["provider"]
        )
        assert row["medianMs"] > 0
        assert row["ratioToIncremental"] == pytest.approx(
            row["medianMs"] / base["medianMs"], rel=1e-2
        )
    assert [r["provider"] for r in series_rows(sample, "sessions", peer)] == providers
    cache = series_rows(sample, "cache", peer)
    assert [r["provider"] for r in cache] == providers
    for row in cache:
        assert row["requests"] > 0 and row["arguments"] > 0
        assert 0 <= row["argumentsExact"] <= row["arguments"]
        # the emulator and the auditor estimate tokens independently (SPEC V4), so the
        # emulator's rate may pass the auditor's maximum by the estimates' difference
        assert 0.0 <= row["hitRate"] <= row["theoreticalHitRate"] + 0.02


def test_missing_peers_are_named_with_the_extra(sample):
    for peer, why in sample["skipped"].items():
        assert missing(peer) and "'peers' extra" in why


def test_table_has_a_row_per_series(sample):
    table = timing_table(sample)
    assert table.row_count == len({(r["series"], r["provider"]) for r in sample["timings"]})


def test_markdown_tables_carry_every_series(sample):
    lines = markdown(sample).splitlines()
    timing_rows = [line for line in lines if line.startswith("| llmcore incremental |")]
    assert len(timing_rows) == 2 and all("(1.00x)" in line for line in timing_rows)
    assert "| llmcore | anthropic | 4 |" in "\n".join(lines)  # first prompt: 4 requests
    # a header row per table, a row per timing series and per emulator session
    rows = sum(line.startswith("| ") for line in lines)
    assert rows == 2 + len(sample["timings"]) + len(sample["cache"])
