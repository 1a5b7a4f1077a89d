"""A LiteLLM callback that audits every ``litellm.completion`` as it is sent (SPEC V6).

::

    import litellm
    from llmcore.audit.litellm_callback import CacheBreakLogger

    litellm.callbacks = [CacheBreakLogger()]

LiteLLM calls ``log_pre_api_call`` with the request body it is about to send
(``kwargs["additional_args"]["complete_input_dict"]``, written here compactly in its key
order) and ``log_success_event`` / ``async_log_success_event`` with the answer, whose ``usage``
is counted (:class:`~llmcore.audit.live.LiveAudit`). So every provider LiteLLM reaches is
audited with the verdicts of ``llmcore audit``. A break calls ``on_break`` as the httpx hook
does (:mod:`llmcore.audit.hook`); LiteLLM catches what its callbacks raise, so ``"raise"``
cannot stop the request here — pass a watched client (``client=`` / ``http_client=``) for
that. The module imports LiteLLM's ``CustomLogger`` when LiteLLM is installed (the ``peers``
extra); without it the class is a plain object with the same methods.

Leaves out: the HTTP-level hook (:mod:`llmcore.audit.hook`).
"""

from __future__ import annotations

import importlib
from collections import OrderedDict
from typing import Any, Final
from urllib.parse import urlsplit

from llmcore import jsonbytes
from llmcore.audit.hook import OnBreak, break_handler
from llmcore.audit.live import LiveAudit, Observation, is_model_path
from llmcore.audit.report import AuditInputError
from llmcore.errors import EncodingError

_Base: Any
try:
    _Base = importlib.import_module("litellm.integrations.custom_logger").CustomLogger
except ImportError:  # LiteLLM is not installed: the same methods on a plain base
    _Base = object

__all__ = ["PATHS", "CacheBreakLogger"]

PATHS: Final = {
    "anthropic": "/v1/messages",
    "openai": "/v1/chat/completions",
    "openrouter": "/api/v1/chat/completions",
    "azure": "/chat/completions",
}
"""The wire path of each LiteLLM provider whose ``api_base`` does not end in one."""
_PENDING: Final = 1024
"""Calls remembered between their request and their answer (oldest dropped first)."""


def _usage_dict(response: Any) -> dict[str, Any] | None:
    usage = getattr(response, "usage", None)
    if usage is None and isinstance(response, dict):
        usage = response.get("usage")
    dump = getattr(usage, "model_dump", None)
    if callable(dump):
        usage = dump()
    return usage if isinstance(usage, dict) else None


class CacheBreakLogger(_Base):  # type: ignore[misc]
    """LiteLLM ``CustomLogger`` auditing each request before it is sent.

    Args:
        on_break: :data:`~llmcore.audit.hook.OnBreak` (default: warn a
            :class:`~llmcore.audit.hook.CacheBreakWarning`).
        audit: The :class:`~llmcore.audit.live.LiveAudit` to add to (default: a new one,
            :attr:`audit`).

    Raises:
        ValueError: ``on_break`` is an unknown string.
    """

    def __init__(self, on_break: OnBreak = None, *, audit: LiveAudit | None = None) -> None:
        super().__init__()
        self.audit = audit or LiveAudit()
        """The live audit (:meth:`~llmcore.audit.live.LiveAudit.rows`)."""
        self._on_break = break_handler(on_break)
        self._pending: OrderedDict[str, Observation] = OrderedDict()

    def log_pre_api_call(self, model: Any, messages: Any, kwargs: dict[str, Any]) -> None:
        """Audit the body LiteLLM is about to send (LiteLLM's pre-call hook)."""
        extra = kwargs.get("additional_args") or {}
        body = extra.get("complete_input_dict")
        if not isinstance(body, dict):
            return
        provider = kwargs.get("custom_llm_provider")
        path = urlsplit(str(extra.get("api_base") or "")).path
        if not is_model_path(path):
            path = PATHS.get(str(provider), "/v1/chat/completions")
        try:
            observation = self.audit.observe(
                jsonbytes.dumps(body),
                path=path,
                provider="openrouter" if provider == "openrouter" else None,
            )
        except (AuditInputError, EncodingError):
            return
        call = kwargs.get("litellm_call_id")
        if isinstance(call, str):
            self._pending[call] = observation
            while len(self._pending) > _PENDING:
                self._pending.popitem(last=False)
        if observation.is_break:
            self._on_break(observation)

    def log_success_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        """Count the usage the answer reported (LiteLLM's success hook)."""
        observation = self._pending.pop(str(kwargs.get("litellm_call_id")), None)
        if observation is not None:
            self.audit.answered(observation, 200, _usage_dict(response_obj))

    async def async_log_success_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        """Count the usage the answer reported (LiteLLM's async success hook)."""
        self.log_success_event(kwargs, response_obj, start_time, end_time)
