"""``--endpoint``: the command line sends through a cloud endpoint (here Bedrock on the emulator)."""

from __future__ import annotations

import pytest

from llmcore.archive import ArchiveStore
from tests.test_compaction import SUMMARY_HEAD, _archive, _run


@pytest.fixture
def aws(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for name in (
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_BEARER_TOKEN_BEDROCK",
        "ANTHROPIC_BEDROCK_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)


def test_compact_through_the_bedrock_endpoint(tmp_path, aws):
    emulator, folder = _archive(tmp_path, 4)
    try:
        code, out, err = _run(folder, yes=True, endpoint="bedrock", base_url=emulator.base_url)
    finally:
        emulator.stop()
    assert (code, err) == (0, ""), err
    assert ArchiveStore(folder).load().state.history[0].content[0].text.startswith(SUMMARY_HEAD)


def test_endpoint_mistakes_are_one_line(tmp_path, aws, monkeypatch):
    emulator, folder = _archive(tmp_path, 4)
    emulator.stop()
    monkeypatch.delenv("AZURE_OPENAI_ENDPOINT", raising=False)
    code, _, err = _run(folder, yes=True, endpoint="azure", base_url="http://127.0.0.1:9")
    assert (code, err) == (
        2,
        "llmcore: --endpoint azure: AZURE_OPENAI_API_KEY: no Azure OpenAI credentials: pass api_key=, ad_token= or"
        " token_provider=, or set AZURE_OPENAI_API_KEY (or AZURE_OPENAI_AD_TOKEN)\n",
    )
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "k")
    code, _, err = _run(folder, yes=True, endpoint="azure", base_url="http://127.0.0.1:9")
    assert (code, err) == (
        2,
        "llmcore: --endpoint azure serves openai-chat, openai-responses, not anthropic\n",
    )
    code, _, err = _run(folder, yes=True, endpoint="gcp")
    assert (code, err) == (
        2,
        "llmcore: --endpoint: unknown endpoint 'gcp'; one of vertex, bedrock, azure\n",
    )
