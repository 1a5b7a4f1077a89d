"""The main job (SPEC R2 bench): the embedded session's numbers, their stability, the command."""

import json

import pytest
from typer.testing import CliRunner

from llmcore.bench import run_bench
from llmcore.cli import app


@pytest.fixture(scope="module")
def runs():
    return run_bench(), run_bench()


def test_session_shape(runs):
    result = runs[0]
    assert len(result.rows) == 24
    assert [r.provider for r in result.rows] == ["anthropic"] * 17 + ["openai-chat"] * 7
    assert [r.event for r in result.rows if r.event] == ["reopened", "switched"]
    assert {r.turn for r in result.rows} == set(range(1, 10))


def test_hit_rate_equals_the_auditors_theoretical_maximum(runs):
    result = runs[0]
    assert result.audit_breaks == 0
    assert result.reopen_identical
    assert result.hit_rate == pytest.approx(result.theoretical_hit_rate, abs=1e-12)
    assert result.hit_rate > 0.8
    # misses only where inherent: the first request, and the first one after the switch
    assert [r.request for r in result.rows if r.usage.cache_read == 0] == [1, 18]
    # the request after the reopen reads everything the request before it wrote
    reopened = next(r for r in result.rows if r.event == "reopened")
    before = result.rows[reopened.request - 2]
    assert reopened.usage.cache_read == before.prompt_tokens


def test_two_runs_give_the_same_numbers_and_bodies(runs):
    a, b = runs
    assert a.to_json() == b.to_json()
    assert a.bodies == b.bodies


def test_a_key_in_the_environment_never_makes_it_live(monkeypatch, runs):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-should-not-be-used")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")  # would fail if used
    assert run_bench().to_json() == runs[0].to_json()


def test_command_prints_table_and_writes_results(tmp_path):
    result = CliRunner().invoke(app, ["bench", "--out", str(tmp_path / "res")])
    assert result.exit_code == 0, result.output
    assert "total hit rate: 84.23%" in result.output
    assert "theoretical maximum (auditor, bodies sent): 84.23%" in result.output
    data = json.loads((tmp_path / "res" / "bench.json").read_bytes())
    assert data["requests"] == 24 and data["hitRate"] == data["theoreticalHitRate"]
    assert (tmp_path / "res" / "bench.png").read_bytes().startswith(b"\x89PNG")


def test_provider_without_live_is_refused():
    result = CliRunner().invoke(app, ["bench", "--provider", "anthropic"])
    assert result.exit_code == 2
