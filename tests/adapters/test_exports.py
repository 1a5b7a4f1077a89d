"""The adapters' public names: each module's ``__all__`` exists, is sorted, and is typed."""

from __future__ import annotations

import importlib

import pytest

from llmcore.errors import UserError


@pytest.mark.parametrize(
    "name",
    [
        "llmcore.adapters",
        "llmcore.adapters.openai_chat",
        "llmcore.adapters.anthropic",
        "llmcore.adapters.pydantic_ai",
    ],
)
def test_all_names_exist_and_are_sorted(name):
    module = importlib.import_module(name)
    assert module.__all__ == sorted(module.__all__)
    for exported in module.__all__:
        assert getattr(module, exported) is not None


def test_the_missing_dependency_error_is_a_user_error():
    from llmcore.adapters import MissingDependencyError

    assert issubclass(MissingDependencyError, UserError)
