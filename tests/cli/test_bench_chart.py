"""The bench chart (issue 11): event labels never overlap, and each bar's provider is named."""

import matplotlib.pyplot as plt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore.bench import BenchResult, BenchRow
from llmcore.cli.bench import chart_figure
from llmcore.usage import Usage

EVENTS = ("first image", "reopened", "switched", "first image, reopened")


def result_of(legs, events):
    """A session: ``legs`` = [(provider, model, requests)], ``events`` = {request: event}."""
    rows = []
    for provider, model, count in legs:
        for _ in range(count):
            n = len(rows) + 1
            usage = Usage(input=100 + 7 * n, cache_read=50 * n, cache_write=n % 3 * 40)
            event = events.get(n, "")
            rows.append(
                BenchRow(
                    request=n, turn=n, provider=provider, model=model, usage=usage, event=event
                )
            )
    return BenchResult(
        rows=tuple(rows),
        bodies=(),
        theoretical_hit_rate=0.5,
        audit_breaks=0,
        reopen_identical=True,
        archive_bytes=0,
    )


def drawn(result):
    fig = chart_figure(result)
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    names = {r.event for r in result.rows if r.event}
    labels = [t for t in ax.texts if t.get_text() in names]
    boxes = [t.get_window_extent(renderer) for t in labels]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    figure_box = fig.bbox
    plt.close(fig)
    return labels, boxes, legend, figure_box


def assert_readable(result):
    labels, boxes, legend, figure_box = drawn(result)
    events = [r.event for r in result.rows if r.event]
    assert sorted(t.get_text() for t in labels) == sorted(events)
    for i, a in enumerate(boxes):
        assert figure_box.contains(a.x0, a.y0) and figure_box.contains(a.x1, a.y1)
        for b in boxes[i + 1 :]:
            assert not a.overlaps(b), (a, b)
    return legend


def test_adjacent_events_of_the_embedded_session_do_not_overlap():
    # the embedded session's events: first image at 8, reopened at 9, switched at 18
    legs = [("anthropic", "claude-sonnet-4-6", 17), ("openai-chat", "gpt-5.4-mini", 7)]
    result = result_of(legs, {8: "first image", 9: "reopened", 18: "switched"})
    legend = assert_readable(result)
    assert "anthropic · claude-sonnet-4-6 (requests 1–17)" in legend
    assert "openai-chat · gpt-5.4-mini (requests 18–24)" in legend


def test_labels_are_stacked_only_when_they_would_collide():
    result = result_of([("anthropic", "m", 30)], {3: "reopened", 4: "switched", 25: "first image"})
    labels, _, _, _ = drawn(result)
    heights = {t.get_text(): t.get_position()[1] for t in labels}
    assert heights["reopened"] == heights["first image"]  # far apart: same row
    assert heights["switched"] < heights["reopened"]  # next to "reopened": a row lower


def test_every_leg_of_a_three_leg_session_is_named_even_when_a_provider_returns():
    legs = [("anthropic", "a", 3), ("openai-chat", "b", 2), ("anthropic", "a", 4)]
    legend = assert_readable(result_of(legs, {4: "switched", 6: "switched"}))
    assert [t for t in legend if "·" in t] == [
        "anthropic · a (requests 1–3)",
        "openai-chat · b (requests 4–5)",
        "anthropic · a (requests 6–9)",
    ]


@settings(max_examples=6, deadline=None)
@given(
    counts=st.lists(st.integers(1, 12), min_size=1, max_size=3),
    data=st.data(),
)
def test_event_labels_never_overlap(counts, data):
    providers = ("anthropic", "openai-chat", "openrouter")
    legs = [(providers[i % 3], f"model-{i}", c) for i, c in enumerate(counts)]
    total = sum(counts)
    chosen = data.draw(st.lists(st.integers(1, total), unique=True, max_size=total))
    events = {n: data.draw(st.sampled_from(EVENTS)) for n in chosen}
    legend = assert_readable(result_of(legs, events))
    assert sum("·" in t for t in legend) == len(legs)


def test_an_empty_session_draws_without_labels():
    labels, boxes, legend, _ = drawn(result_of([], {}))
    assert labels == [] and boxes == []
    assert legend == ["cache read", "cache write", "input"]


@pytest.fixture(autouse=True)
def _close_all():
    yield
    plt.close("all")
