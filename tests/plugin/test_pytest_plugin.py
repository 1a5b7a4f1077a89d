"""The pytest plugin (SPEC V3): inner pytest sessions replaying cassettes with vcrpy.

Every inner test replays (``record_mode="none"`` / ``--record-mode=none``) through an httpx
client that vcrpy patches, or records against a loopback server started by the inner test:
nothing touches the network.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
import yaml

import llmcore.pytest_plugin as plugin

from ._cassettes import BREAK_OFFSET, BREAKING, RESPONSE, STABLE, URL, cassette_text, write_cassette

# An inner test module replaying cassettes/conversation.yaml with plain vcrpy (decorator).
REPLAY = """
import httpx
import pytest
import vcr

BODIES = {bodies!r}

{marker}
@vcr.use_cassette("cassettes/conversation.yaml", record_mode="none", match_on=["method", "uri", "body"])
def test_conversation():
    with httpx.Client() as client:
        for body in BODIES:
            assert client.post({url!r}, content=body).json()["content"][0]["text"] == "ok"
"""

# A loopback Anthropic-like server for the recording runs.
SERVER = """
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

ANSWER = {answer!r}.encode()


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(ANSWER)))
        self.end_headers()
        self.wfile.write(ANSWER)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever)
    thread.start()
    yield f"http://127.0.0.1:{{httpd.server_port}}/v1/messages"
    httpd.shutdown()
    thread.join()
    httpd.server_close()
"""


def _replay(pytester: pytest.Pytester, bodies: list[str], marker: str = "") -> None:
    write_cassette(pytester.path / "cassettes" / "conversation.yaml", bodies)
    pytester.makepyfile(test_replay=REPLAY.format(bodies=bodies, marker=marker, url=URL))


def _break_lines(cassette: str, request: int = 1) -> list[str]:
    """Patterns (for ``re_match_lines``) of the failure for the break of ``BREAKING``."""
    lines = [
        f"llmcore audit: prompt-cache break in cassette {cassette}",
        f"  request {request} (compared with request 0): first differing byte at offset "
        f"{BREAK_OFFSET}, JSON path messages[1].content",
        "    messages[1] differs: was 'Where to?\"}', now 'Where to, exactly?\"}'",
        "if the boundary is intended, mark the test @pytest.mark.llmcore_cache_boundary(reason=",
    ]
    return [re.escape(line) for line in lines]


def test_a_stable_conversation_passes_and_is_counted(pytester: pytest.Pytester) -> None:
    _replay(pytester, STABLE)
    result = pytester.runpytest_inprocess("--llmcore-audit")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*llmcore cassette audit*", "1 cassette file audited; 0 *"])


def test_a_break_fails_the_test_with_offset_path_and_snippets(pytester: pytest.Pytester) -> None:
    _replay(pytester, BREAKING)
    result = pytester.runpytest_inprocess("--llmcore-audit")
    result.assert_outcomes(failed=1)
    result.stdout.re_match_lines(_break_lines("cassettes/conversation.yaml"))
    assert "INTERNALERROR" not in result.stdout.str()


def test_the_ini_key_turns_the_audit_on(pytester: pytest.Pytester) -> None:
    _replay(pytester, BREAKING)
    pytester.makeini("[pytest]\nllmcore_audit = true\n")
    result = pytester.runpytest_inprocess()
    result.assert_outcomes(failed=1)
    result.stdout.re_match_lines(_break_lines("cassettes/conversation.yaml"))


def test_off_nothing_is_audited(pytester: pytest.Pytester) -> None:
    _replay(pytester, BREAKING)
    result = pytester.runpytest_inprocess()
    result.assert_outcomes(passed=1)
    assert "llmcore cassette audit" not in result.stdout.str()
    assert "prompt-cache break" not in result.stdout.str()


def test_help_lists_the_option_when_off(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_inprocess("--help")
    result.stdout.fnmatch_lines(
        ["*--llmcore-audit*audit every VCR cassette*", "*llmcore_audit (bool)*"]
    )
    markers = pytester.runpytest_inprocess("--markers")
    markers.stdout.fnmatch_lines(["@pytest.mark.llmcore_cache_boundary(reason, request=None)*"])


def test_disabling_the_entry_point_drops_the_option(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_inprocess("-p", "no:llmcore", "--help")
    assert "--llmcore-audit" not in result.stdout.str()


@pytest.mark.parametrize(
    "marker",
    [
        '@pytest.mark.llmcore_cache_boundary(reason="the system prompt is rewritten on purpose")',
        '@pytest.mark.llmcore_cache_boundary("the system prompt is rewritten on purpose", request=1)',
    ],
)
def test_a_marked_boundary_is_reported_not_failed(pytester: pytest.Pytester, marker: str) -> None:
    _replay(pytester, BREAKING, marker)
    result = pytester.runpytest_inprocess("--llmcore-audit")
    result.assert_outcomes(passed=1)
    result.stdout.re_match_lines(
        [
            ".*llmcore cassette audit",
            re.escape(
                "1 cassette file audited; 1 break exempt by @pytest.mark.llmcore_cache_boundary"
            ),
            re.escape(
                "  test_replay.py::test_conversation: cassettes/conversation.yaml: request 1 "
                f"(compared with request 0): first differing byte at offset {BREAK_OFFSET}, JSON path "
                "messages[1].content: messages[1] differs: was 'Where to?\"}', now 'Where to, "
                "exactly?\"}' (reason: the system prompt is rewritten on purpose)"
            ),
        ]
    )


def test_a_marker_for_another_request_does_not_exempt_the_break(pytester: pytest.Pytester) -> None:
    _replay(pytester, BREAKING, '@pytest.mark.llmcore_cache_boundary(reason="x", request=0)')
    result = pytester.runpytest_inprocess("--llmcore-audit")
    result.assert_outcomes(failed=1)
    result.stdout.re_match_lines(_break_lines("cassettes/conversation.yaml"))


@pytest.mark.parametrize("audit", [True, False])
def test_a_marker_without_reason_errors_the_test(pytester: pytest.Pytester, audit: bool) -> None:
    pytester.makepyfile(
        test_marked="""
        import pytest

        @pytest.mark.llmcore_cache_boundary(request=1)
        def test_marked():
            pass
        """
    )
    result = pytester.runpytest_inprocess(*(["--llmcore-audit"] if audit else []))
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of test_marked*",
            "test_marked.py::test_marked: @pytest.mark.llmcore_cache_boundary needs a reason: "
            "say why the prompt-cache prefix is meant to change, as "
            '@pytest.mark.llmcore_cache_boundary(reason="...")',
        ]
    )
    assert "During handling" not in result.stdout.str()


def test_pytest_recording_replay(pytester: pytest.Pytester) -> None:
    write_cassette(pytester.path / "cassettes" / "test_rec" / "test_chat.yaml", BREAKING)
    write_cassette(pytester.path / "cassettes" / "test_rec" / "test_steady.yaml", STABLE)
    pytester.makepyfile(
        test_rec=f"""
        import httpx
        import pytest

        @pytest.mark.vcr
        def test_chat():
            for body in {BREAKING!r}:
                httpx.post({URL!r}, content=body)

        @pytest.mark.vcr
        def test_steady(vcr):
            assert vcr.play_count == 0
            for body in {STABLE!r}:
                httpx.post({URL!r}, content=body)
        """
    )
    result = pytester.runpytest_inprocess("--llmcore-audit", "--record-mode=none")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.re_match_lines(
        [*_break_lines("cassettes/test_rec/test_chat.yaml"), ".*FAILED test_rec.py::test_chat"]
    )
    result.stdout.fnmatch_lines(["2 cassette files audited; 0 *"])


def test_pytest_recording_extra_cassettes_are_audited(pytester: pytest.Pytester) -> None:
    write_cassette(pytester.path / "cassettes" / "test_extra" / "shared.yaml", BREAKING)
    pytester.makepyfile(
        test_extra="""
        import pytest

        @pytest.mark.vcr("shared.yaml")
        def test_uses_shared(vcr):
            assert len(vcr.data) == 2
        """
    )
    result = pytester.runpytest_inprocess("--llmcore-audit", "--record-mode=none")
    result.assert_outcomes(failed=1)
    result.stdout.re_match_lines(_break_lines("cassettes/test_extra/shared.yaml"))


def test_plain_vcrpy_context_manager_and_several_cassettes(pytester: pytest.Pytester) -> None:
    write_cassette(pytester.path / "a.yaml", STABLE)
    write_cassette(pytester.path / "b.yaml", BREAKING)
    pytester.makepyfile(
        test_cm="""
        import vcr

        def test_two_cassettes():
            with vcr.use_cassette("a.yaml", record_mode="none"):
                pass
            with vcr.use_cassette("b.yaml", record_mode="none"):
                pass
        """
    )
    result = pytester.runpytest_inprocess("--llmcore-audit")
    result.assert_outcomes(failed=1)
    result.stdout.re_match_lines(_break_lines("b.yaml"))
    assert "a.yaml" not in result.stdout.str()


def test_a_recorded_break_fails_after_the_cassette_is_saved(pytester: pytest.Pytester) -> None:
    """Recording: a ``with`` block saves during the body (failure); the fixture at teardown.

    The inner tests record only the in-test server on 127.0.0.1 (the ``server`` fixture): no
    request leaves the machine.
    """
    pytester.makeconftest(SERVER.format(answer=RESPONSE))
    pytester.makepyfile(
        test_record=f"""
        import httpx
        import pytest
        import vcr

        def test_block(server):
            with vcr.use_cassette("block.yaml", record_mode="once"):
                for body in {BREAKING!r}:
                    httpx.post(server, content=body)

        @pytest.mark.vcr
        def test_fixture(server):
            for body in {BREAKING!r}:
                httpx.post(server, content=body)
        """
    )
    result = pytester.runpytest_inprocess("--llmcore-audit", "--record-mode=once")
    result.assert_outcomes(passed=1, failed=1, errors=1)
    assert (pytester.path / "block.yaml").is_file()
    assert (pytester.path / "cassettes" / "test_record" / "test_fixture.yaml").is_file()
    result.stdout.fnmatch_lines(["*FAILED test_record.py::test_block*"])
    result.stdout.re_match_lines(
        [
            ".*ERROR at teardown of test_fixture",
            *_break_lines("cassettes/test_record/test_fixture.yaml"),
        ]
    )


def test_a_failing_body_is_not_audited(pytester: pytest.Pytester) -> None:
    _replay(pytester, BREAKING)
    pytester.makepyfile(
        test_replay=REPLAY.format(bodies=BREAKING, marker="", url=URL)
        + "    assert False, 'own failure'\n"
    )
    result = pytester.runpytest_inprocess("--llmcore-audit")
    result.assert_outcomes(failed=1)
    assert "own failure" in result.stdout.str()
    assert "prompt-cache break" not in result.stdout.str()


def test_an_unreadable_cassette_fails_with_its_name(pytester: pytest.Pytester) -> None:
    # vcrpy reads YAML aliases; the auditor refuses them (one alias can expand without bound).
    lines = cassette_text(STABLE).splitlines()
    first, second = (i for i, line in enumerate(lines) if line.startswith("    body: '"))
    lines[first] = lines[first].replace("body: ", "body: &b ", 1)
    lines[second] = "    body: *b"
    (pytester.path / "bad.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    pytester.makepyfile(
        test_bad="""
        import vcr

        def test_bad():
            with vcr.use_cassette("bad.yaml", record_mode="none"):
                pass
        """
    )
    result = pytester.runpytest_inprocess("--llmcore-audit")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*cannot audit cassette bad.yaml: *YAML aliases are not allowed*"])
    assert "Traceback" not in result.stdout.str()


def test_a_json_cassette_is_audited_and_another_serializer_is_listed(
    pytester: pytest.Pytester,
) -> None:
    (pytester.path / "c.json").write_text(
        json.dumps(
            {"interactions": yaml.safe_load(cassette_text(BREAKING))["interactions"], "version": 1}
        ),
        encoding="utf-8",
    )
    (pytester.path / "c.cbor").write_bytes(b"\xa0")
    pytester.makepyfile(
        test_json="""
        import vcr

        def test_json():
            with vcr.use_cassette("c.json", serializer="json", record_mode="none") as cassette:
                assert len(cassette.data) == 2

        def test_other(monkeypatch):
            import vcr.cassette
            monkeypatch.setattr(vcr.cassette.Cassette, "_load", lambda self: None)
            with vcr.use_cassette("c.cbor", record_mode="none"):
                pass
        """
    )
    result = pytester.runpytest_inprocess("--llmcore-audit")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "c.json" in out and f"offset {BREAK_OFFSET}" in out
    result.stdout.fnmatch_lines(
        [
            "1 cassette file not audited:",
            "  test_json.py::test_other: c.cbor: not a YAML or JSON cassette file",
        ]
    )


def test_the_module_imports_nothing_heavy() -> None:
    """vcrpy and the auditor are imported inside hooks, only when the audit is on."""
    tree = ast.parse(Path(plugin.__file__).read_text(encoding="utf-8"))
    top = {
        alias.name.split(".")[0]
        for node in tree.body
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in (
            node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")]
        )
    }
    assert top == {
        "__future__",
        "importlib",
        "os",
        "collections",
        "contextlib",
        "dataclasses",
        "pathlib",
        "typing",
        "pytest",
    }


def test_a_parameter_break_fails_the_test_with_the_audit_message(pytester: pytest.Pytester) -> None:
    """Issue 19: a tool_choice change keeps every byte of the prefix but discards the messages
    cache; the plugin fails the test with the detail ``llmcore audit`` prints."""
    first = json.loads(STABLE[0])
    second = {**json.loads(STABLE[1]), "tool_choice": {"type": "auto"}}
    bodies = [STABLE[0], json.dumps(second, separators=(",", ":"))]
    assert first["messages"] == second["messages"][:3]
    _replay(pytester, bodies)
    result = pytester.runpytest_inprocess("--llmcore-audit")
    result.assert_outcomes(failed=1)
    result.stdout.re_match_lines(
        [
            re.escape("llmcore audit: prompt-cache break in cassette cassettes/conversation.yaml"),
            re.escape("  request 1 (compared with request 0): first differing byte at offset ")
            + r"\d+, JSON path tool_choice",
            re.escape(
                '    parameter tool_choice changed from absent to {"type":"auto"}: the provider'
                " keys its messages cache on it, so the cache of messages is discarded"
            ),
        ]
    )
