"""A library name whose extra is not installed says which extra to install (issue 12)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from llmcore.errors import MissingDependencyError


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)


@pytest.mark.parametrize("blocked", ["uvicorn", "starlette"])
def test_the_emulator_without_its_extra_names_the_extra(blocked: str):
    result = _run(
        f"import sys; sys.modules[{blocked!r}] = None\n"
        "from llmcore.errors import MissingDependencyError\n"
        "try:\n"
        "    from llmcore.emulator import Emulator\n"
        "except MissingDependencyError as exc:\n"
        "    print(exc)\n"
        "    print(isinstance(exc, ImportError))\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"llmcore.emulator.Emulator needs the 'emulator' extra ({blocked} is not installed):"
        " pip install 'llmcore[emulator]'",
        "True",
    ]


def test_the_error_is_an_import_error_and_a_user_error():
    assert issubclass(MissingDependencyError, ImportError)
    assert str(MissingDependencyError("x needs y")) == "x needs y"


@pytest.mark.parametrize(
    ("blocked", "call", "message"),
    [
        (
            "botocore",
            "from llmcore.cloud.aws import SigV4Signer\n"
            "SigV4Signer(region='us-east-1', access_key='a', secret_key='b')"
            ".sign('POST', 'https://h/x', {}, b'{}')",
            "SigV4 signing needs the 'aws' extra (botocore is not installed):"
            " pip install 'llmcore[aws]'",
        ),
        (
            "google.auth",
            "from llmcore.cloud.google import GoogleAuth\n"
            "GoogleAuth(project='p', environ={}).token()",
            "Google Cloud credentials needs the 'google' extra (google-auth is not installed):"
            " pip install 'llmcore[google]'",
        ),
    ],
)
def test_the_cloud_credentials_without_their_extra_name_it(blocked: str, call: str, message: str):
    indented = call.replace("\n", "\n    ")
    result = _run(
        f"import sys; sys.modules[{blocked!r}] = None\n"
        "from llmcore.errors import MissingDependencyError\n"
        f"try:\n    {indented}\n"
        "except MissingDependencyError as exc:\n"
        "    print(exc)\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == message
