"""``llmcore emulate --access-log``: one stderr line per request, run as a real process."""

from __future__ import annotations

import queue
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import httpx
import pytest

from tests.emulator import rawhttp
from tests.emulator.helpers import ANTHROPIC_HEADERS, OPENAI_HEADERS

ROOT = Path(__file__).resolve().parents[2]
SERVER = (
    "import sys; from llmcore.cli.emulate import emulate_command; "
    "sys.exit(emulate_command(0, None, access_log=True))"
)
ACCESS = re.compile(
    r'^127\.0\.0\.1:(\d+) "(POST|GET) (\S+)" (\d{3}) (\d+) B (\d+\.\d) ms (req_emu_\d{20}|-)$'
)


class Served:
    """The emulator process, its base URL and its stderr lines as they come."""

    def __init__(self, proc: subprocess.Popen[str], url: str) -> None:
        self.proc = proc
        self.url = url
        self.lines: queue.Queue[str] = queue.Queue()
        assert proc.stderr is not None
        self.pump = threading.Thread(target=self._pump, args=(proc.stderr,), daemon=True)
        self.pump.start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self.lines.put(line.rstrip("\n"))

    def stop(self) -> list[str]:
        """Interrupt the process (as Ctrl+C does); return the stderr lines not read yet."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            self.proc.wait(timeout=rawhttp.SAFETY_TIMEOUT)
        self.pump.join(timeout=rawhttp.SAFETY_TIMEOUT)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        rest = []
        while not self.lines.empty():
            rest.append(self.lines.get())
        return rest

    def line(self) -> str:
        """The next stderr line (the 10 s timeout only turns a missing line into a failure)."""
        return self.lines.get(timeout=rawhttp.SAFETY_TIMEOUT)


@pytest.fixture
def served() -> Iterator[Served]:
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().split("anthropic base URL ")[1].split(" ")[0]
    served = Served(proc, url)
    yield served
    served.stop()


def test_access_log_prints_one_line_per_request(served: Served) -> None:
    ok = httpx.post(
        served.url + "/v1/messages",
        content=b'{"model":"claude-sonnet-4-5","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}',
        headers=ANTHROPIC_HEADERS,
        timeout=10,
    )
    assert ok.status_code == 200
    bad = httpx.post(
        served.url + "/v1/chat/completions", content=b"{", headers=OPENAI_HEADERS, timeout=10
    )
    assert bad.status_code == 400
    first, second = ACCESS.match(served.line()), ACCESS.match(served.line())
    assert first is not None and second is not None
    assert first.group(2, 3, 4) == ("POST", "/v1/messages", "200")
    assert int(first.group(5)) == len(ok.content)
    assert first.group(7) == ok.headers["request-id"]
    assert second.group(3, 4, 7) == ("/v1/chat/completions", "400", bad.headers["x-request-id"])
    assert served.stop() == []


def test_client_leaving_mid_body_is_one_warning_line_in_the_process_log(served: Served) -> None:
    port = int(served.url.rsplit(":", 1)[1])
    head = rawhttp.head("/v1/responses", {**OPENAI_HEADERS, "content-length": "50000"})
    with rawhttp.connect(port) as sock:
        sock.sendall(head + b"a" * 12345)
    warning = served.line()
    assert re.fullmatch(
        r"llmcore emulator: client disconnected mid-body \(POST /v1/responses, \d+ of 50000 bytes\)",
        warning,
    )
    access = ACCESS.match(served.line())
    assert access is not None and access.group(4, 7) == ("499", "-")
    rest = served.stop()
    assert not any("Traceback" in line or "Error" in line for line in rest), rest
