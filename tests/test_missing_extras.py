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
