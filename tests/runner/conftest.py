"""Cassette replay settings (SPEC V3): record mode ``none``, P4 body matcher, keys filtered.

The matcher is :func:`llmcore.audit.matcher.body_matcher` (the auditor's comparison).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from llmcore.audit.matcher import body_matcher

CASSETTES = Path(__file__).resolve().parents[2] / "cassettes"


def pytest_recording_configure(config: Any, vcr: Any) -> None:
    vcr.register_matcher("p4_body", body_matcher)


@pytest.fixture(scope="module")
def vcr_config() -> dict[str, Any]:
    return {
        "record_mode": "none",
        "match_on": ["method", "uri", "p4_body"],
        "filter_headers": ["authorization", "x-api-key"],
    }


@pytest.fixture(scope="module")
def vcr_cassette_dir() -> str:
    return str(CASSETTES)
