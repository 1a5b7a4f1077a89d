"""P5 through the disk: save, reopen in a fresh object graph, build the next body (SPEC P5, F1).

For every registered provider, a generated conversation is saved with a drawn image budget,
reopened by a new :class:`ArchiveStore`, and the next request body is built from both the live
and the reopened history. With no image omitted the bodies are byte-identical. Where the budget
omitted images, the reopened body equals the body of the live history with exactly those images
replaced by the placeholder, and the first differing byte is where the oldest omitted image
sits — the one exemption of P5.
"""

from __future__ import annotations

import atexit
import dataclasses
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from llmcore.archive import ArchiveStore, Conversation, Item, kept_images
from llmcore.archive.fs import FileSystem
from llmcore.archive.images import omitted_images
from llmcore.facts import Section
from llmcore.messages import Image, Message, Text
from llmcore.providers import PROVIDER_NAMES, get_provider
from llmcore.usage import Cost, Usage
from tests.archive.conftest import memory_root
from tests.examples import examples
from tests.strategies import conversations


class NoSyncFS(FileSystem):
    """Skips fsync: these tests are about bytes, not durability (tested elsewhere)."""

    def fsync(self, fd: int) -> None:
        pass

    def fsync_dir(self, path: Path) -> None:
        pass

    def fsync_file(self, path: Path) -> None:
        pass


def _first_difference(a: bytes, b: bytes) -> int:
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return index
    return min(len(a), len(b))


def _omit(
    history: tuple[Message, ...], kept: frozenset[str], only_first: bool
) -> tuple[Message, ...]:
    out = []
    done = False
    for message in history:
        parts = []
        for part in message.content:
            if isinstance(part, Image) and part.sha256 not in kept and not done:
                parts.append(Text.omitted_image(part.mime_type))
                done = only_first
            else:
                parts.append(part)
        out.append(dataclasses.replace(message, content=tuple(parts)))
    return tuple(out)


_FOLDERS: dict[str, Path] = {}

_SECTIONS = st.lists(
    st.builds(
        Section,
        name=st.sampled_from(["This turn", "Design system", "Selection"]),
        text=st.text(max_size=8),
    ),
    max_size=3,
    unique_by=lambda s: s.name,
)


@pytest.mark.full_count
@pytest.mark.parametrize("provider_name", PROVIDER_NAMES)
@settings(
    max_examples=examples(full=150, sample=50),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_next_body_after_reopen_is_byte_identical(provider_name, data):
    provider = get_provider(provider_name)
    generated = data.draw(conversations(provider_name, max_steps=4))
    history = generated.history()
    total = sum(len(p.data) for m in history for p in m.content if isinstance(p, Image))
    budget = data.draw(st.one_of(st.just(20 * 1024 * 1024), st.integers(0, max(total, 1))))
    first_sections = data.draw(_SECTIONS)
    next_sections = data.draw(_SECTIONS)

    live = Conversation()
    plan = live.plan_turn(first_sections)
    live.end_turn(
        messages=history,
        provider=provider_name,
        model=generated.model,
        items=[Item.make(id="i1", type="assistant", text="done")],
        rounds=[(Usage(input=10, output=2), Cost(kind="estimated", dollars=0.01))],
        sent_facts=plan.facts,
    )
    # One folder per provider, reused: each save replaces the last one's archive (and cleans up).
    if provider_name not in _FOLDERS:
        root = Path(tempfile.mkdtemp(prefix="p5-", dir=memory_root()))
        atexit.register(shutil.rmtree, root, True)
        _FOLDERS[provider_name] = root / "agent"
    folder = _FOLDERS[provider_name]
    result = ArchiveStore(folder, fs=NoSyncFS(), image_budget=budget).save(live)
    reopened = ArchiveStore(folder).open()

    # The one notice: images omitted (by this budget, or generated as omitted), issue 22.
    assert len(reopened.notices) == (1 if omitted_images(reopened.history)[0] else 0)
    assert reopened.state.sent_facts == live.state.sent_facts
    assert reopened.plan_turn(next_sections) == live.plan_turn(next_sections)
    assert reopened.state.items == live.state.items and reopened.state.usage == live.state.usage

    body_live = provider.build_body(generated.request(live.history))
    body_reopened = provider.build_body(generated.request(reopened.history))
    kept = kept_images(history, budget).kept
    event("images omitted" if result.images_omitted else "nothing omitted")
    if result.images_omitted == 0:
        assert reopened.history == live.history
        assert body_reopened == body_live
        return
    # The exemption: exactly the omitted images changed, and the first difference is the first one.
    assert reopened.history == _omit(history, kept, only_first=False)
    assert body_reopened == provider.build_body(
        generated.request(_omit(history, kept, only_first=False))
    )
    first_only = provider.build_body(generated.request(_omit(history, kept, only_first=True)))
    assert body_reopened != body_live
    assert _first_difference(body_live, body_reopened) == _first_difference(body_live, first_only)
