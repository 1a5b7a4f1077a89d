"""Fixtures of the proxy tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from llmcore.emulator import Emulator


@pytest.fixture(scope="module")
def emulator() -> Iterator[Emulator]:
    """One emulator for a test module (tests that need a fresh cache start their own)."""
    with Emulator() as emu:
        yield emu
