"""The plugin's tests run inner pytest sessions in this process (``runpytest_inprocess``).

pytester takes a snapshot of ``sys.modules`` before an inner session and restores it after,
so a module first imported inside one is dropped and imported again later, as a second copy:
its classes are new classes while caches held by modules outside the snapshot still hold
instances of the first copy's. Every module of :mod:`llmcore.audit` and the plugin is
imported here, before any inner session, so all of them live in the one copy.
"""

from __future__ import annotations

import importlib
import pkgutil

import llmcore.audit
import llmcore.pytest_plugin  # noqa: F401

for _module in pkgutil.iter_modules(llmcore.audit.__path__, "llmcore.audit."):
    if _module.name in ("llmcore.audit.engine", "llmcore.audit.litellm_callback"):
        continue  # optional extras; the inner sessions do not import them
    importlib.import_module(_module.name)
