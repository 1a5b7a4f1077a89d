"""Anthropic Message Batches: ``/v1/messages/batches`` (SPEC V2).

[A-BATCH] https://docs.anthropic.com/en/docs/build-with-claude/batch-processing (read
2026-12-02): a batch is ``{"requests": [{"custom_id", "params"}]}`` with ``params`` a Messages
body; "The Message Batches API supports prompt caching", best effort. The emulator runs a batch
when it is created, its requests in order, each through the Messages endpoint's own path
(validation, cache accounting, the script) and each committing its cache writes before the next
starts, so a batch whose requests share a cached prefix reads it from the second request on. The
batch is then ``ended``; its results are JSONL, one line per request in request order:
``{"custom_id", "result": {"type": "succeeded", "message": …}}`` or ``{"type": "errored",
"error": <the error body>}``. A ``params`` with ``stream`` is errored, since a batch cannot
stream. Batches are kept until deleted (or evicted under the memory budget, as cache entries).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from llmcore import jsonbytes
from llmcore.emulator.common import make_id
from llmcore.emulator.errors import Rejection, error_body
from llmcore.emulator.store import ObjectStore

__all__ = ["BatchStore", "run_batch"]

_CUSTOM_ID: Final = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
EXPIRES_SECONDS: Final = 86_400.0
"""A batch expires 24 hours after it was created ([A-BATCH])."""


def rfc3339(seconds: float) -> str:
    """Return ``seconds`` since the epoch as RFC 3339 UTC (``2026-12-02T00:00:00Z``)."""
    when = datetime.datetime.fromtimestamp(seconds, datetime.UTC).replace(microsecond=0)
    return when.isoformat().replace("+00:00", "Z")


@dataclass(slots=True)
class _Batch:
    created: float
    ended: float
    succeeded: int
    errored: int
    results: bytes
    canceled: bool = False


def _requests(parsed: Any) -> list[tuple[str, Any]]:
    if not isinstance(parsed, dict):
        raise Rejection("Input should be a valid dictionary or object to extract fields from")
    for key in parsed:
        if key != "requests":
            raise Rejection(f"{key}: Extra inputs are not permitted")
    requests = parsed.get("requests")
    if requests is None:
        raise Rejection("requests: Field required")
    if not isinstance(requests, list) or not requests:
        raise Rejection("requests: List should have at least 1 item after validation, not 0")
    out: list[tuple[str, Any]] = []
    seen: set[str] = set()
    for index, request in enumerate(requests):
        if not isinstance(request, dict) or "params" not in request:
            raise Rejection(f"requests.{index}.params: Field required")
        custom = request.get("custom_id")
        if not isinstance(custom, str) or not _CUSTOM_ID.match(custom):
            raise Rejection(
                f"requests.{index}.custom_id: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
            )
        if custom in seen:
            raise Rejection(f"requests: custom_id '{custom}' is used more than once")
        seen.add(custom)
        out.append((custom, request["params"]))
    return out


Handle = Callable[[bytes], bytes]
"""Runs one Messages body (JSON bytes), commits its cache writes, returns the message JSON."""


def run_batch(parsed: Any, handle: Handle, request_id: Callable[[], str]) -> tuple[bytes, int]:
    """Run every request of a parsed batch body in order; return the JSONL results and errors.

    Args:
        parsed: The batch body.
        handle: Answers one Messages body (raises :class:`Rejection` when it is refused).
        request_id: Returns a fresh request id for an errored result's error body.

    Raises:
        Rejection: The batch body itself is malformed.
    """
    lines: list[bytes] = []
    errored = 0
    for custom, params in _requests(parsed):
        try:
            if isinstance(params, dict) and params.get("stream"):
                raise Rejection("stream: a batch request cannot stream")
            message = handle(jsonbytes.dumps(params))
            result = b'{"type":"succeeded","message":' + message + b"}"
        except Rejection as rejection:
            errored += 1
            error = error_body("anthropic", rejection, request_id())
            result = b'{"type":"errored","error":' + error + b"}"
        lines.append(b'{"custom_id":' + jsonbytes.dumps(custom) + b',"result":' + result + b"}")
    return b"".join(line + b"\n" for line in lines), errored


class BatchStore(ObjectStore[_Batch]):
    """Ended batches by id, charged to the emulator's memory budget.

    Args:
        budget: The shared memory budget.
    """

    def add(self, results: bytes, total: int, errored: int, now: float) -> str:
        """Store an ended batch; return its ``msgbatch_…`` id."""
        with self._lock:
            ident = make_id("msgbatch_emu_", b"batch", self._next())
            self._add(
                ident, _Batch(now, now, total - errored, errored, results), 512 + len(results)
            )
            return ident

    def _get(self, ident: str) -> _Batch:
        found = self._find(ident)
        if found is None:
            raise Rejection(
                f"message_batch: {ident} not found", status=404, error_type="not_found_error"
            )
        return found

    def describe(self, ident: str, base_url: str) -> dict[str, Any]:
        """Return the ``message_batch`` object; ``base_url`` prefixes ``results_url``.

        Raises:
            Rejection: 404, no such batch.
        """
        with self._lock:
            batch = self._get(ident)
            return {
                "id": ident,
                "type": "message_batch",
                "processing_status": "ended",
                "request_counts": {
                    "processing": 0,
                    "succeeded": batch.succeeded,
                    "errored": batch.errored,
                    "canceled": 0,
                    "expired": 0,
                },
                "ended_at": rfc3339(batch.ended),
                "created_at": rfc3339(batch.created),
                "expires_at": rfc3339(batch.created + EXPIRES_SECONDS),
                "archived_at": None,
                "cancel_initiated_at": rfc3339(batch.ended) if batch.canceled else None,
                "results_url": f"{base_url}/v1/messages/batches/{ident}/results",
            }

    def ids(self) -> list[str]:
        """Return every batch id, newest first (the list endpoint's order)."""
        with self._lock:
            return list(reversed(self._entries))

    def results(self, ident: str) -> bytes:
        """Return the batch's JSONL results.

        Raises:
            Rejection: 404, no such batch.
        """
        with self._lock:
            return self._get(ident).results

    def cancel(self, ident: str) -> None:
        """Mark a cancel request (the batch has already ended: nothing changes but the time).

        Raises:
            Rejection: 404, no such batch.
        """
        with self._lock:
            self._get(ident).canceled = True

    def delete(self, ident: str) -> None:
        """Forget the batch.

        Raises:
            Rejection: 404, no such batch.
        """
        with self._lock:
            self._get(ident)
            self._drop(ident)
