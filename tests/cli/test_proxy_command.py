"""``llmcore proxy``: options, one-line errors, and a run in a child process (SPEC V6, R2)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from llmcore.cli.proxy import parse_listen, proxy_command
from llmcore.emulator import Emulator


def test_listen_addresses() -> None:
    assert parse_listen("127.0.0.1:8788") == ("127.0.0.1", 8788)
    assert parse_listen("[::1]:0") == ("::1", 0)
    assert parse_listen("9000") == ("127.0.0.1", 9000)
    with pytest.raises(ValueError, match="port from 0 to 65535"):
        parse_listen("localhost:99999")


def test_bad_options_are_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert proxy_command("https://api.anthropic.com", "nowhere:x") == 2
    assert proxy_command("api.anthropic.com") == 2
    assert proxy_command("https://api.anthropic.com", record=tmp_path / "missing" / "r.jsonl") == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 3 and all(line.startswith("llmcore: ") for line in lines)


def test_a_run_prints_breaks_and_the_table_and_writes_the_record(tmp_path: Path) -> None:
    record = tmp_path / "run.jsonl"
    with Emulator() as emu:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "llmcore",
                "proxy",
                "--upstream",
                emu.base_url,
                "--record",
                str(record),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stderr is not None
            ready = proc.stderr.readline()
            url = ready.split("listening: ")[1].split(" ")[0]
            body = {
                "model": "gpt-4o",
                "messages": [{"role": "system", "content": "A"}, {"role": "user", "content": "q"}],
            }
            for system in ("A", "A", "B"):
                body["messages"][0]["content"] = system
                assert (
                    httpx.post(
                        url + "/v1/chat/completions",
                        json=body,
                        headers={"authorization": "Bearer sk-K9"},
                    ).status_code
                    == 200
                )
            break_line = proc.stderr.readline()
        finally:
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=30)
    assert break_line.startswith(
        "llmcore proxy: request 2 (conversation 0): break at messages[0].content"
    )
    assert (
        proc.returncode == 0 and "openai-chat · gpt-4o" in out and "#2 messages[0].content" in out
    )
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert [line["status"] for line in lines] == [200, 200, 200]
    assert "sk-K9" not in record.read_text() + out + err
