"""Fixtures of the proxy tests."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from llmcore.emulator import Emulator


@pytest.fixture(scope="module")
def emulator() -> Iterator[Emulator]:
    """One emulator for a test module (tests that need a fresh cache start their own)."""
    with Emulator() as emu:
        yield emu


@pytest.fixture(autouse=True)
def _proxy_log_reaches_caplog() -> Iterator[None]:
    """``llmcore proxy`` run in-process by an earlier test stops its logger's propagation."""
    logger = logging.getLogger("llmcore.proxy")
    before = logger.propagate
    logger.propagate = True
    yield
    logger.propagate = before
