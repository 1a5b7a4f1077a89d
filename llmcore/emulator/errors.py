"""Errors of the emulator, and the error bodies it answers with (PROVIDER-RULES §1.10, §2.3).

:class:`Rejection` is raised inside the emulator when a request breaks a rule the real API
enforces; the server turns it into the provider's error shape:

* Anthropic: ``{"type":"error","error":{"type":…,"message":…},"request_id":"req_…"}`` with a
  ``request-id`` header;
* OpenAI: ``{"error":{"message":…,"type":…,"param":…,"code":…}}`` with an ``x-request-id``
  header.
"""

from __future__ import annotations

from typing import Literal

from llmcore import jsonbytes
from llmcore.errors import LLMCoreError, UserError

__all__ = ["EmulatorError", "Rejection", "ScriptError", "Shape", "error_body"]

Shape = Literal["anthropic", "openai"]
"""Which provider's error shape a rejection is written in."""


class EmulatorError(LLMCoreError):
    """Root of the emulator's own errors (SPEC V2)."""


class ScriptError(UserError):
    """A reply script is malformed; ``location`` names the file and the JSON path."""


class Rejection(EmulatorError):
    """A request the real API would refuse; rendered as that API's error body.

    Args:
        message: The provider's error message, verbatim where PROVIDER-RULES quotes one.
        status: The HTTP status (400 unless said otherwise).
        error_type: ``invalid_request_error`` and the like.
        param: OpenAI's ``param`` (the offending parameter path), or ``None``.
        code: OpenAI's ``code`` (``unknown_parameter``…), or ``None``.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int = 400,
        error_type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
    ) -> None:
        self.status = status
        self.error_type = error_type
        self.param = param
        self.code = code
        super().__init__(message)


def error_body(shape: Shape, rejection: Rejection, request_id: str) -> bytes:
    """Return the JSON error body for ``rejection`` in the provider's ``shape``.

    Args:
        shape: ``"anthropic"`` or ``"openai"``.
        rejection: What was refused.
        request_id: The ``req_…`` id also sent in the response headers.

    Returns:
        Compact UTF-8 JSON bytes.
    """
    if shape == "anthropic":
        return jsonbytes.dumps(
            {
                "type": "error",
                "error": {"type": rejection.error_type, "message": rejection.message},
                "request_id": request_id,
            }
        )
    return jsonbytes.dumps(
        {
            "error": {
                "message": rejection.message,
                "type": rejection.error_type,
                "param": rejection.param,
                "code": rejection.code,
            }
        }
    )
