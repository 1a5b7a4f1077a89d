"""The public names: every one in __all__ exists, __all__ is sorted, nothing private leaks."""

import llmcore


def test_all_names_exist_and_are_sorted():
    assert llmcore.__all__ == sorted(llmcore.__all__, key=lambda n: (not n.isupper(), n))
    for name in llmcore.__all__:
        assert getattr(llmcore, name) is not None, name
        assert not name.startswith("_")


def test_public_objects_say_where_they_live():
    for name in [
        n for n in llmcore.__all__ if not n.isupper() and n != "MessageContent"
    ]:  # constants and the union alias have no home module
        value = getattr(llmcore, name)
        module = getattr(value, "__module__", "llmcore")
        assert module.startswith("llmcore"), (name, module)
