"""The image budget is not silent after a reopen (SPEC A6, P5; issue 22).

Three images of 7 MiB, saved: the oldest is saved as ``imageOmitted``. Before, reopening showed
no notice and ``llmcore verify`` said "OK … identical". Now the reopened conversation has one
notice naming how many images were omitted and what the next body changes, and ``verify``
reports the difference (exit 1) unless given ``--allow-omitted``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from llmcore import ArchiveStore, Conversation, Image, Message, Request, get_provider
from llmcore.cli.verify import verify_archive, verify_command

PNG = b"\x89PNG\r\n\x1a\n"
MIB = 1024 * 1024


def _three_images(folder: Path, size: int = 7 * MIB, budget: int | None = None) -> Conversation:
    images = [Image(data=PNG + bytes([n]) * size, mime_type="image/png") for n in range(3)]
    conversation = Conversation()
    conversation.end_turn(
        messages=[Message.user("Look.", *images), Message.assistant("Three images.")],
        provider="anthropic",
        model="claude-sonnet-4-6",
    )
    store = ArchiveStore(folder) if budget is None else ArchiveStore(folder, image_budget=budget)
    assert store.save(conversation).images_omitted == 1
    return conversation


def test_reopen_names_the_omitted_images(tmp_path: Path) -> None:
    folder = tmp_path / "agent"
    _three_images(folder)
    reopened = ArchiveStore(folder).open()
    assert len(reopened.notices) == 1
    notice = reopened.notices[0]
    assert notice.message.startswith("1 of the saved conversation's images was omitted")
    assert "20 MiB image budget" in notice.message
    assert "first in message 0" in notice.reason and "next request differs" in notice.reason


def test_the_notice_counts_every_omitted_image(tmp_path: Path) -> None:
    folder = tmp_path / "agent"
    images = [Image(data=PNG + bytes([n]) * 100, mime_type="image/png") for n in range(4)]
    conversation = Conversation()
    conversation.end_turn(
        messages=[Message.user("Hi."), Message.assistant("Hello."), Message.user(*images)],
        provider="anthropic",
        model="m",
    )
    ArchiveStore(folder, image_budget=250).save(conversation)
    notice = ArchiveStore(folder).open().notices[0]
    assert notice.message.startswith("2 of the saved conversation's images were omitted")
    assert "2 imageOmitted blocks, the first in message 2" in notice.reason


def test_no_notice_without_omitted_images(tmp_path: Path) -> None:
    folder = tmp_path / "agent"
    conversation = Conversation()
    image = Image(data=PNG + b"x", mime_type="image/png")
    conversation.end_turn(
        messages=[Message.user("Look.", image), Message.assistant("One.")], provider="a", model="m"
    )
    ArchiveStore(folder).save(conversation)
    assert ArchiveStore(folder).open().notices == ()


def test_the_reopened_body_differs_at_the_omitted_image(tmp_path: Path) -> None:
    folder = tmp_path / "agent"
    before = _three_images(folder, size=200, budget=500)
    reopened = ArchiveStore(folder).open()

    def body(history: tuple[Message, ...]) -> bytes:
        request = Request(model="claude-sonnet-4-6", messages=(*history, Message.user("Next?")))
        return get_provider("anthropic").build_body(request)

    open_body, reopened_body = body(before.history), body(reopened.history)
    assert open_body != reopened_body
    first = next(
        i for i, (a, b) in enumerate(zip(open_body, reopened_body, strict=False)) if a != b
    )
    result = verify_archive(folder)
    assert not result.identical and result.omitted_images == 1
    assert result.first_difference() == reopened_body.find(b"[Image omitted:")
    assert reopened_body[:first] == open_body[:first]


def test_verify_reports_the_budget_unless_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "agent"
    _three_images(folder)
    assert verify_command(folder, None, None) == 1
    out = capsys.readouterr().out
    assert out.startswith("DIFFERS at byte ")
    assert "1 image of the archive is saved as imageOmitted" in out
    assert "--allow-omitted" in out
    assert verify_command(folder, None, None, allow_image_budget=True) == 0
    assert capsys.readouterr().out.startswith("OK: ")


def test_verify_without_a_request_says_what_it_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "agent"
    conversation = Conversation()
    conversation.end_turn(
        messages=[Message.user("Hi."), Message.assistant("Hello.")], provider="anthropic", model="m"
    )
    ArchiveStore(folder).save(conversation)
    assert verify_command(folder, None, None) == 0
    assert "holds no system prompt or tools" in capsys.readouterr().out
    request = tmp_path / "request.json"
    request.write_text('{"model": "m", "system": "Be terse."}')
    assert verify_command(folder, request, None) == 0
    assert "holds no system prompt" not in capsys.readouterr().out
