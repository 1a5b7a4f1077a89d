"""Example counts of the heavy property tests: a sample in the suite, the full count on demand.

A test marked ``full_count`` takes ``@settings(max_examples=examples(full, sample))``: the suite
runs ``sample`` examples (fewer under the lighter ``dev`` profile), and with
``LLMCORE_FULL_EXAMPLES=1`` in the environment it runs ``full``, which is what
``benchmarks/bench_properties.py`` does for every such test (the suite's 3-minute budget on 2
cores holds the sample, the benchmark the full count).
"""

from __future__ import annotations

import os

from hypothesis import settings

FULL_ENV = "LLMCORE_FULL_EXAMPLES"
"""Set (to anything but empty) to run every ``full_count`` test at its full count."""


def examples(full: int, sample: int) -> int:
    """Return ``full`` when :data:`FULL_ENV` is set, else ``sample`` capped by the profile."""
    if os.environ.get(FULL_ENV):
        return full
    return min(sample, settings.default.max_examples)
