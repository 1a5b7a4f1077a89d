"""The pre-commit hook: ``llmcore audit --empty-ok`` over changed cassettes (issue 21 item 5).

The hook's command is tested directly (fast); ``pre-commit try-repo`` on a temporary
repository installs llmcore into pre-commit's own environment (minutes), so it runs when
``LLMCORE_PRE_COMMIT=1`` (``PRE_COMMIT_HOME`` reuses an environment already built).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from llmcore.cli.audit import audit_command
from tests.conftest import ROOT

CASSETTE = ROOT / "cassettes" / "anthropic-tool-turn.yaml"
NON_MODEL = """interactions:
- request:
    method: GET
    uri: https://api.anthropic.com/v1/models
    body: null
  response:
    status: {code: 200, message: OK}
    body: {string: '{"data": []}'}
"""


def _broken(tmp: Path) -> Path:
    doc = yaml.safe_load(CASSETTE.read_text())
    second = doc["interactions"][-1]["request"]
    body = second["body"] if isinstance(second["body"], str) else second["body"]["string"]
    edited = body.replace("City and state", "City, state", 1)
    assert edited != body
    doc["interactions"][-1]["request"]["body"] = edited
    out = tmp / "broken.yaml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


def test_the_hook_command_lists_a_non_model_cassette_and_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    only = tmp_path / "models.yaml"
    only.write_text(NON_MODEL)
    # Before: no request audited was always exit 2, which fails a per-file hook.
    assert audit_command([only], None, False) == 2
    capsys.readouterr()
    assert audit_command([only], None, False, allow_empty=True) == 0
    out = capsys.readouterr().out
    assert "no model request (1 input skipped)" in out and "models.yaml: interactions[0]" in out
    assert audit_command([only], None, False, allow_empty=True, strict=True) == 2


def test_the_hook_command_fails_on_a_break(tmp_path: Path) -> None:
    assert audit_command([CASSETTE], None, False, allow_empty=True) == 0
    assert audit_command([_broken(tmp_path)], None, False, allow_empty=True) == 1


def test_the_hook_definition_runs_that_command() -> None:
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "llmcore-audit" and hook["entry"] == "llmcore audit --empty-ok"
    assert hook["language"] == "python"


@pytest.mark.skipif(
    os.environ.get("LLMCORE_PRE_COMMIT") != "1",
    reason="installs llmcore with pre-commit (minutes): LLMCORE_PRE_COMMIT=1",
)
def test_pre_commit_try_repo_on_a_temporary_repository(tmp_path: Path) -> None:
    repo = tmp_path / "project"
    (repo / "cassettes").mkdir(parents=True)
    shutil.copy(CASSETTE, repo / "cassettes" / "clean.yaml")
    (repo / "cassettes" / "models.yaml").write_text(NON_MODEL)
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "cassettes"], cwd=repo, check=True)
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": os.environ.get("PRE_COMMIT_HOME", str(tmp_path / "home")),
    }
    pre_commit = [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "llmcore-audit"]
    passed = subprocess.run(
        [*pre_commit, "--all-files"], cwd=repo, env=env, capture_output=True, text=True
    )
    assert passed.returncode == 0, passed.stdout + passed.stderr
    shutil.copy(_broken(tmp_path), repo / "cassettes" / "broken.yaml")
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    failed = subprocess.run(
        [*pre_commit, "--files", "cassettes/broken.yaml"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
    )
    assert failed.returncode == 1 and "break" in failed.stdout, failed.stdout
