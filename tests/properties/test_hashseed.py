"""SPEC P2: two processes with different ``PYTHONHASHSEED`` build identical body bytes.

Generated conversations are written as request files (:func:`llmcore.requestfile.request_json`,
A3 blocks, images inline) with the message count of each consecutive request. Two child
processes, started with hash seeds 1 and 2, read them back and build every request for every
provider, cold and through one carried :class:`~llmcore.providers.base.EncodeCache`; each prints
the SHA-256 of every body. Both outputs must equal each other and the parent's own builds.

Starting a child costs far more than building bodies, so one example draws all the
conversations (18 per provider) and the two children check them all at once, rather than a
pair of children per example.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore import jsonbytes
from llmcore.providers import PROVIDER_NAMES, get_provider
from llmcore.providers.base import EncodeCache
from llmcore.requestfile import parse_request, request_json
from tests.strategies import conversations

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import hashlib, sys
from dataclasses import replace
from llmcore import jsonbytes
from llmcore.providers import get_provider
from llmcore.providers.base import EncodeCache
from llmcore.requestfile import parse_request

for case in jsonbytes.loads(open(sys.argv[1], "rb").read()):
    provider = get_provider(case["provider"])
    request = parse_request(case["request"])
    cache = EncodeCache()
    for count in case["cuts"]:
        step = replace(request, messages=request.messages[:count])
        for body in (provider.build_body(step, cache=cache), provider.build_body(step)):
            print(hashlib.sha256(body).hexdigest())
"""


def digests(cases: list[dict]) -> list[str]:
    """What the child prints, computed in this process."""
    out = []
    for case in cases:
        provider = get_provider(case["provider"])
        request = parse_request(case["request"])
        cache = EncodeCache()
        for count in case["cuts"]:
            step = replace(request, messages=request.messages[:count])
            for body in (provider.build_body(step, cache=cache), provider.build_body(step)):
                out.append(hashlib.sha256(body).hexdigest())
    return out


def run_child(path: Path, seed: str) -> list[str]:
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(path)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split()


CONVERSATIONS = 18
"""Generated conversations per provider, all checked by the same two children."""


@settings(max_examples=1)
@given(data=st.data())
def test_two_hash_seeds_build_identical_bytes(data, tmp_path_factory):
    cases = []
    for provider in PROVIDER_NAMES:
        for conversation in data.draw(
            st.lists(conversations(provider), min_size=CONVERSATIONS, max_size=CONVERSATIONS)
        ):
            requests = conversation.requests()
            cases.append(
                {
                    "provider": provider,
                    "request": request_json(requests[-1]),
                    "cuts": [len(r.messages) for r in requests],
                }
            )
    path = tmp_path_factory.mktemp("hashseed") / "cases.json"
    path.write_bytes(jsonbytes.dumps(cases))
    here = digests(jsonbytes.loads(path.read_bytes()))
    first, second = run_child(path, "1"), run_child(path, "2")
    assert len(cases) == CONVERSATIONS * len(PROVIDER_NAMES)
    assert len(here) > 2 * len(cases)
    assert first == second == here
