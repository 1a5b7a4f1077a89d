"""The pytest plugin under hostile conditions: a cassette that vanishes, a reason not in UTF-8."""

from __future__ import annotations

import pytest

from ._cassettes import BREAKING, URL, write_cassette

DELETED = """
import os

import httpx
import vcr

BODIES = {bodies!r}


def test_deleted():
    with vcr.use_cassette("cassettes/conversation.yaml", record_mode="none",
                          match_on=["method", "uri", "body"]):
        with httpx.Client() as client:
            for body in BODIES:
                client.post({url!r}, content=body)
    os.remove("cassettes/conversation.yaml")
"""

MARKED = """
import httpx
import pytest
import vcr

BODIES = {bodies!r}


@pytest.mark.llmcore_cache_boundary({args})
@vcr.use_cassette("cassettes/conversation.yaml", record_mode="none", match_on=["method", "uri", "body"])
def test_marked():
    with httpx.Client() as client:
        for body in BODIES:
            client.post({url!r}, content=body)
"""


def test_a_cassette_deleted_by_the_test_is_not_audited(pytester: pytest.Pytester) -> None:
    write_cassette(pytester.path / "cassettes" / "conversation.yaml", BREAKING)
    pytester.makepyfile(test_deleted=DELETED.format(bodies=BREAKING, url=URL))
    result = pytester.runpytest_inprocess("--llmcore-audit")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["0 cassette files audited; 0 *"])


def test_a_reason_that_is_not_utf8_is_reported_without_a_crash(pytester: pytest.Pytester) -> None:
    write_cassette(pytester.path / "cassettes" / "conversation.yaml", BREAKING)
    pytester.makepyfile(
        test_marked=MARKED.format(bodies=BREAKING, url=URL, args="reason='on purpose \\udc80'")
    )
    result = pytester.runpytest_inprocess("--llmcore-audit")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["1 cassette file audited; 1 break exempt *"])
