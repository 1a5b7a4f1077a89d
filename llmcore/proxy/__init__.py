"""The recording reverse proxy ``llmcore proxy`` (SPEC V6).

:class:`Proxy` forwards a client's traffic to the real API (or the emulator) byte for byte,
streams each answer back as it arrives, audits each model request against its conversation as
it passes (:class:`~llmcore.audit.live.LiveAudit`), reads the usage each answer reports, and
can write the record ``llmcore audit`` reads. Needs the ``emulator`` extra (uvicorn).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llmcore._lazy import lazy_names as _lazy_names

if TYPE_CHECKING:
    from llmcore.proxy.server import HOP_BY_HOP, Proxy, ProxyError, build_app

_HOMES = dict.fromkeys(["HOP_BY_HOP", "Proxy", "ProxyError", "build_app"], "llmcore.proxy.server")

__getattr__, __dir__ = _lazy_names(__name__, _HOMES, globals(), extra="emulator")

__all__ = ["HOP_BY_HOP", "Proxy", "ProxyError", "build_app"]
