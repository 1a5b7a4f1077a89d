"""The plain ``llmcore body FILE -p P`` runs without typer and says exactly what the app says.

:func:`llmcore.cli.main` answers the plain form through :func:`llmcore.cli._body_run.fast_body`
(start-up: no typer, rich or click); every form it does not take goes to the typer
application. Each case runs both ways in this process and compares stdout, stderr and the exit
status byte for byte.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore.audit import wire_conflict
from llmcore.cli import main
from llmcore.cli._app import app
from llmcore.cli._body_run import fast_body
from llmcore.providers import get_provider
from tests.strategies import conversations

_HI = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
_NOT_AN_IMAGE = base64.b64encode(b"not an image").decode()

REQUESTS = {
    "plain.json": {"model": "m", "system": "terse", "messages": [_HI]},
    "extra.json": {"model": "m", "params": {"extra": {"contents": []}}, "messages": [_HI]},
    "unpaired.json": {
        "model": "m",
        "messages": [
            _HI,
            {
                "role": "assistant",
                "content": [{"type": "toolCall", "id": "c1", "name": "f", "arguments": "{}"}],
            },
        ],
    },
    "odd image.json": {
        "model": "m",
        "messages": [
            {
                "role": "user",
                "content": [{"type": "image", "mimeType": "image/png", "data": _NOT_AN_IMAGE}],
            }
        ],
    },
}


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, value in REQUESTS.items():
        (tmp_path / name).write_text(json.dumps(value))
    (tmp_path / "broken.json").write_text('{"model": ')
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _outcome(run, argv: list[str], capfd: pytest.CaptureFixture[bytes]) -> tuple[object, ...]:
    code: object = 0
    try:
        run(argv)
    except SystemExit as exc:
        code = exc.code
    out, err = capfd.readouterr()
    return code, out, err


def _through_main(argv: list[str]) -> None:
    sys.argv = ["llmcore", *argv]
    main()


def _through_app(argv: list[str]) -> None:
    app(argv, prog_name="llmcore")


@pytest.mark.parametrize(
    "argv",
    [
        ["body", "plain.json", "-p", "anthropic"],
        ["body", "--provider=openai-responses", "plain.json"],
        ["body", "-p", "openai-chat", "./sub/../plain.json"],
        ["body", ".//plain.json", "--provider", "openrouter"],
        ["body", "extra.json", "-p", "anthropic"],  # a warning: the body has another shape
        ["body", "plain.json", "-p", "anthrop"],  # an unknown provider, with a hint
        ["body", "missing.json", "-p", "anthropic"],
        ["body", "broken.json", "-p", "anthropic"],
        ["body", "unpaired.json", "-p", "openai-chat"],
        ["body", "odd image.json", "-p", "anthropic"],  # a warning: providers refuse it
        ["body", "folder/", "-p", "anthropic"],
    ],
)
def test_the_fast_path_writes_and_says_what_the_application_does(
    folder: Path, argv: list[str], capfdbinary: pytest.CaptureFixture[bytes], monkeypatch
) -> None:
    (folder / "folder").mkdir(exist_ok=True)
    assert fast_body(argv) is not None  # the fast path takes it
    capfdbinary.readouterr()
    fast = _outcome(_through_main, argv, capfdbinary)
    reference = _outcome(_through_app, argv, capfdbinary)
    assert fast == reference
    monkeypatch.setenv("LLMCORE_STRICT", "1")  # strict mode: the first finding is the error
    assert _outcome(_through_main, argv, capfdbinary) == _outcome(_through_app, argv, capfdbinary)


@pytest.mark.parametrize(
    "argv",
    [
        ["body", "--help"],
        ["body", "plain.json", "-p"],
        ["body", "plain.json"],
        ["body", "a.json", "b.json", "-p", "anthropic"],
        ["body", "plain.json", "-p", "anthropic", "-p", "openai-chat"],
        ["body", "-panthropic", "plain.json"],
        ["body", "--", "plain.json", "-p", "anthropic"],
        ["body", "", "-p", "anthropic"],
        ["body", "plain.json", "-p", "--provider"],
        ["body", "plain.json", "--provider="],
        ["bodies", "plain.json", "-p", "anthropic"],
    ],
)
def test_every_other_form_is_left_to_the_application(folder: Path, argv: list[str]) -> None:
    assert fast_body(argv) is None


@pytest.mark.parametrize("provider", ["anthropic", "openai-chat", "openai-responses", "openrouter"])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_a_body_without_extra_has_its_providers_shape(provider: str, data: st.DataObject) -> None:
    """Why the fast path (and the command) skips the shape check when there is no extra."""
    built = get_provider(provider)
    conversation = data.draw(conversations(provider), label="conversation")
    for request in conversation.requests():
        if not request.params.extra:
            body = built.build_body(request)
            assert wire_conflict(body, provider, name="f", done="built") is None
