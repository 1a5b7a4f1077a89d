"""Reading ``@pytest.mark.llmcore_cache_boundary`` (the plugin's exemptions, issue 11)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore.pytest_plugin import MARKER, CacheBoundary, boundaries


class _Item:
    """The two members of ``pytest.Item`` that :func:`boundaries` reads."""

    nodeid = "test_x.py::test_y"

    def __init__(self, *marks: pytest.MarkDecorator) -> None:
        self._marks = [m.mark for m in marks]

    def iter_markers(self, name: str) -> Any:
        return (m for m in self._marks if m.name == name)


def _read(*marks: pytest.MarkDecorator) -> tuple[CacheBoundary, ...]:
    return boundaries(_Item(*marks))  # type: ignore[arg-type]


mark = getattr(pytest.mark, MARKER)


def test_no_marker_no_boundary() -> None:
    assert _read(pytest.mark.skip(reason="x")) == ()


def test_reason_by_keyword_or_position_and_several_markers() -> None:
    assert _read(mark(reason=" new system prompt "), mark("tools reordered", request=3)) == (
        CacheBoundary("new system prompt", None),
        CacheBoundary("tools reordered", 3),
    )


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        (mark, "test_x.py::test_y: @pytest.mark.llmcore_cache_boundary needs a reason: say why"),
        (mark(reason=""), "needs a reason"),
        (mark(reason=None), "needs a reason"),
        (mark(reason=7), "needs a reason"),
        (mark(request=1), "needs a reason"),
        (mark(reason="x", request=-1), "request must be a request index (an integer ≥ 0), not -1"),
        (mark(reason="x", request=True), "not True"),
        (mark(reason="x", request="1"), "not '1'"),
        (mark(reason="x", index=1), "unknown argument 'index'"),
        (mark("a", "b"), "give one reason, as reason='...'"),
        (mark("a", reason="b"), "give one reason"),
    ],
)
def test_a_bad_marker_is_a_usage_error(marker: pytest.MarkDecorator, message: str) -> None:
    with pytest.raises(pytest.UsageError) as caught:
        _read(marker)
    assert message in str(caught.value)


@settings(max_examples=200)
@given(
    reason=st.text(max_size=20),
    request=st.none() | st.integers(min_value=-3, max_value=50),
    index=st.integers(min_value=0, max_value=50),
)
def test_accepted_iff_reason_and_index_valid_and_exempts_only_its_index(
    reason: str, request: int | None, index: int
) -> None:
    valid = bool(reason.strip()) and (request is None or request >= 0)
    if not valid:
        with pytest.raises(pytest.UsageError):
            _read(mark(reason=reason, request=request))
        return
    (boundary,) = _read(mark(reason=reason, request=request))
    assert boundary.reason == reason.strip()
    assert boundary.exempts(index) is (request is None or request == index)
