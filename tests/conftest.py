"""Test-wide settings: hypothesis profiles and the vendored corpus location.

Tests run with Ctrl+C as in a terminal's foreground: a run started in the background by a
non-interactive shell inherits SIGINT ignored, and every process a test starts (the chat in a
pseudo-terminal, the proxy and emulator servers) would inherit it too and never see the Ctrl+C
the test sends. :func:`pytest_configure` gives SIGINT Python's handler back, so those processes
start with the default action; what the chat does with SIGINT ignored is tested in-process
(``tests/chat/test_interrupt.py``).

The ``ci`` profile (selected when ``CI`` is set, as ``.ci/run`` is run) runs the property tests
at full strength; the default profile is lighter for local runs. Both have no deadline: body
building for 1 MB tool results is slower than hypothesis's default 200 ms.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"

# The pytest plugin's tests (tests/plugin) run inner pytest sessions; pytest reads
# pytest_plugins only from the top-level conftest.
pytest_plugins = ["pytester"]

settings.register_profile(
    "ci",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)
settings.register_profile(
    "dev",
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


def pytest_configure(config: pytest.Config) -> None:
    """SIGINT as in a terminal's foreground when the run inherited it ignored (module doc)."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
