"""Public names that load their module on first access (PEP 562), for package ``__init__``s."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str,
    homes: Mapping[str, str],
    namespace: MutableMapping[str, Any],
    *,
    extra: str | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Return a package's module ``__getattr__`` and ``__dir__`` for names loaded on first use.

    Args:
        package: The package's name, for the error message.
        homes: Each public name and the module it lives in.
        namespace: The package's ``globals()``; a loaded name is stored there, so the module is
            imported once and later accesses are plain attribute reads.
        extra: The extra that installs the package's third-party dependencies, or ``None``:
            a name whose module needs a missing one raises
            :class:`~llmcore.errors.MissingDependencyError` naming it.

    Returns:
        ``(__getattr__, __dir__)``; ``__getattr__`` raises ``AttributeError`` for a name that
        is not in ``homes``, ``__dir__`` lists the package's globals and every name of ``homes``.
    """

    def getattr_(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        try:
            module = importlib.import_module(home)
        except ModuleNotFoundError as exc:
            missing = (exc.name or "").partition(".")[0]
            if extra is None or not missing or missing == "llmcore":
                raise
            from llmcore.errors import MissingDependencyError, missing_extra_message

            raise MissingDependencyError(
                f"{package}.{name} {missing_extra_message(extra, missing)}"
            ) from exc
        value = getattr(module, name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted({*namespace, *homes})

    return getattr_, dir_
