"""Default model names are ones the pinned SDKs do not mark deprecated (issue 9, part 2).

Defaults are the model names a user copies or runs without choosing: the README, the request
files in ``examples/``, the cassettes (``scripts/make_cassettes.py``), and ``bench``'s embedded
plan and ``--live`` defaults (:data:`llmcore.bench.LIVE_MODELS`). The deprecated lists are read
from the installed SDKs when the test runs, so upgrading a pin re-checks them:

* ``anthropic._data.DEPRECATED_MODELS`` — the table behind the SDK's "deprecated and will reach
  end-of-life" warning;
* the ``Deprecated values:`` list in the docstring of ``openai.types.shared.chat_model`` (the
  OpenAI SDK's only record of shutdowns).

OpenRouter names (``anthropic/claude-sonnet-4.6``) are checked without the vendor and, for
Claude, with dashes for dots.
"""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import pytest
import yaml

from llmcore.bench import DEFAULT_PLAN, LIVE_MODELS

ROOT = Path(__file__).resolve().parent.parent


def anthropic_deprecated() -> set[str]:
    from anthropic._data import DEPRECATED_MODELS

    return set(DEPRECATED_MODELS)


def openai_deprecated() -> set[str]:
    from openai.types.shared import chat_model

    source = inspect.getsource(chat_model)
    block = source.split("Deprecated values:", 1)[1]
    return set(re.findall(r'"([^"\s]+)"', block))


def deprecated() -> set[str]:
    return anthropic_deprecated() | openai_deprecated()


def readme_models() -> set[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    patterns = (r'model="([^"]+)"', r'"model":\s*"([^"]+)"', r"--model[ =]([\w./-]+)")
    return {m for p in patterns for m in re.findall(p, text)}


def example_models() -> set[str]:
    return {
        json.loads(path.read_bytes())["model"]
        for path in sorted((ROOT / "examples").glob("*.json"))
    }


def cassette_models() -> set[str]:
    models = set()
    for path in sorted((ROOT / "cassettes").glob("*.yaml")):
        for interaction in yaml.safe_load(path.read_text(encoding="utf-8"))["interactions"]:
            models.add(json.loads(interaction["request"]["body"])["model"])
    return models


def bench_models() -> set[str]:
    return set(LIVE_MODELS.values()) | {leg.model for leg in DEFAULT_PLAN}


def spellings(model: str) -> set[str]:
    name = model.rsplit("/", 1)[-1]
    return {model, name, name.replace(".", "-") if name.startswith("claude") else name}


def test_the_sdk_lists_are_found_and_name_the_known_deprecations() -> None:
    assert "claude-sonnet-4-5" in anthropic_deprecated()
    assert {"gpt-4o", "gpt-4.1-mini", "o3", "gpt-5"} <= openai_deprecated()
    assert "gpt-5.4-mini" not in openai_deprecated()


@pytest.mark.parametrize(
    "where",
    [readme_models, example_models, cassette_models, bench_models],
    ids=lambda f: f.__name__,
)
def test_default_models_are_not_deprecated(where) -> None:
    models = where()
    assert models, "no model names found"
    bad = sorted(m for m in models if spellings(m) & deprecated())
    assert bad == [], f"{where.__name__}: deprecated in the pinned SDKs: {bad}"


def test_every_live_provider_has_a_default() -> None:
    from llmcore.providers import PROVIDER_NAMES

    assert sorted(LIVE_MODELS) == sorted(PROVIDER_NAMES)


@pytest.mark.parametrize("provider", sorted(LIVE_MODELS))
def test_live_runs_use_the_providers_default_unless_a_model_is_given(provider) -> None:
    from llmcore.bench import with_provider

    (leg,) = with_provider(DEFAULT_PLAN, provider, None)
    assert (leg.provider, leg.model) == (provider, LIVE_MODELS[provider])
    assert with_provider(DEFAULT_PLAN, provider, "m")[0].model == "m"
