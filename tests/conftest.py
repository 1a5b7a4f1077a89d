"""Test-wide settings: hypothesis profiles and the vendored corpus location.

The ``ci`` profile (selected when ``CI`` is set, as ``.ci/run`` is run) runs the property tests
at full strength; the default profile is lighter for local runs. Both have no deadline: body
building for 1 MB tool results is slower than hypothesis's default 200 ms.
"""

from __future__ import annotations

import os
from pathlib import Path

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
