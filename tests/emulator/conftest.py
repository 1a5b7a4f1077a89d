"""Shared fixtures: one emulator per module on a manual clock, caches reset per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from llmcore.emulator import Emulator, ManualClock
from tests.emulator.helpers import Api


@pytest.fixture(scope="module")
def _server() -> Iterator[tuple[Emulator, ManualClock]]:
    clock = ManualClock()
    with Emulator(clock=clock) as emu:
        yield emu, clock


@pytest.fixture
def api(_server: tuple[Emulator, ManualClock]) -> Iterator[Api]:
    emu, clock = _server
    emu.reset()
    clock.advance(100_000)  # any entry a previous test left is long expired anyway
    client = Api(emu, clock)
    yield client
    client.client.close()


@pytest.fixture(scope="module")
def api_for_hypothesis(_server: tuple[Emulator, ManualClock]) -> Iterator[Api]:
    """An :class:`Api` shared by every example of a hypothesis test (which resets it itself)."""
    emu, clock = _server
    client = Api(emu, clock)
    yield client
    client.client.close()
