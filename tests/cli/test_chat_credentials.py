"""``llmcore chat`` checks the credentials of its endpoint before the first prompt.

A missing key, token, AWS credential chain or cloud setting is one line on stderr naming it,
exit 2, and no session starts; with them, the chat starts (stdin at its end: nothing is sent).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CHAIN = (
    "no AWS credentials found; tried: explicit keys; environment (AWS_ACCESS_KEY_ID,"
    " AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN); shared files (AWS_PROFILE; ~/.aws/credentials,"
    " ~/.aws/config: keys, SSO, assume-role); container and instance-metadata roles"
)


def _chat(tmp_path: Path, env: dict[str, str], *options: str) -> subprocess.CompletedProcess[str]:
    """Run the chat with only ``env`` of the credentials (none of the caller's) and no input."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_API_KEY") and not k.startswith(("AWS_", "GOOGLE_", "CLOUD_ML"))
    }
    clean |= {
        "HOME": str(tmp_path),
        "AWS_CONFIG_FILE": str(tmp_path / "aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "aws-credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
        "CLOUDSDK_CONFIG": str(tmp_path / "gcloud"),
        "GCE_METADATA_HOST": "127.0.0.1:9",  # no metadata server: refused at once
        "GCE_METADATA_IP": "127.0.0.1:9",
        **env,
    }
    (tmp_path / "ws").mkdir(exist_ok=True)
    args = [sys.executable, "-m", "llmcore", "chat", "--config-dir", str(tmp_path / "cfg")]
    args += ["--workspace", str(tmp_path / "ws"), *options]
    return subprocess.run(args, input="", capture_output=True, text=True, env=clean, timeout=120)


@pytest.mark.parametrize(
    ("options", "env", "line"),
    [
        (
            ("--live", "-p", "anthropic"),
            {},
            "--live: no API key for anthropic: set ANTHROPIC_API_KEY",
        ),
        (
            ("--live", "-p", "gemini"),
            {},
            "--live: no API key for gemini: set GEMINI_API_KEY or GOOGLE_API_KEY",
        ),
        (
            ("--live", "-p", "bedrock-converse"),
            {"AWS_REGION": "us-east-1"},
            f"--live: {CHAIN}; or set AWS_BEARER_TOKEN_BEDROCK (a Bedrock API key)",
        ),
        (
            ("--live", "-p", "bedrock-converse"),
            {},
            "--live: no AWS region: pass region= or set AWS_REGION (or AWS_DEFAULT_REGION);"
            " or set AWS_BEARER_TOKEN_BEDROCK (a Bedrock API key)",
        ),
        (
            ("-p", "anthropic", "--endpoint", "bedrock"),
            {"AWS_REGION": "us-east-1"},
            f"--endpoint bedrock: {CHAIN}",
        ),
        (
            ("-p", "anthropic", "--endpoint", "vertex"),
            {"GOOGLE_CLOUD_PROJECT": "p"},
            "--endpoint vertex: no Google Cloud location: pass location= or set"
            " GOOGLE_CLOUD_LOCATION (or CLOUD_ML_REGION)",
        ),
    ],
)
def test_missing_credentials_are_one_line_before_the_first_prompt(
    tmp_path: Path, options: tuple[str, ...], env: dict[str, str], line: str
) -> None:
    done = _chat(tmp_path, env, *options)
    assert (done.returncode, done.stderr) == (2, f"llmcore: {line}\n")
    assert done.stdout == ""  # no session line, no prompt


@pytest.mark.parametrize(
    ("options", "env"),
    [
        (("--live", "-p", "gemini"), {"GOOGLE_API_KEY": "k"}),
        (
            ("--live", "-p", "bedrock-converse"),
            {
                "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
                "AWS_SECRET_ACCESS_KEY": "s",
                "AWS_REGION": "eu-west-1",
            },
        ),
        (
            ("--live", "-p", "bedrock-converse"),
            {"AWS_BEARER_TOKEN_BEDROCK": "k", "AWS_REGION": "eu-west-1"},
        ),
    ],
)
def test_with_credentials_the_chat_starts(
    tmp_path: Path, options: tuple[str, ...], env: dict[str, str]
) -> None:
    done = _chat(tmp_path, env, *options)
    assert done.returncode == 0, done.stderr
    assert "New session" in done.stdout and "live API" in done.stdout
    assert "Nothing to save: no message in this session." in done.stdout
