"""``llmcore verify`` of an archive whose image file is gone or damaged names the file (A7).

The body built from the reopened archive carries placeholder text where the saved conversation
sent the image, so the verdict says that, instead of two identical excerpts of placeholder text.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from llmcore import ArchiveStore, Conversation, Image, Message
from llmcore.cli.verify import LostImage, verify_archive, verify_command

PNG = b"\x89PNG\r\n\x1a\n" + b"pixels"
SHA = hashlib.sha256(PNG).hexdigest()


def _archive(tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "agent"
    conversation = Conversation()
    conversation.end_turn(
        messages=[
            Message.user("Look.", Image(data=PNG, mime_type="image/png")),
            Message.assistant("A picture."),
        ],
        provider="anthropic",
        model="claude-sonnet-4-6",
    )
    ArchiveStore(folder).save(conversation)
    image = folder / "images" / f"{SHA}.png"
    assert image.read_bytes() == PNG
    return folder, image


def test_a_missing_image_file_is_named_instead_of_two_identical_excerpts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, image = _archive(tmp_path)
    image.unlink()
    result = verify_archive(folder)
    assert result.lost_files == (
        LostImage(
            file=str(image), path="$.history[0].content[1]", mime_type="image/png",
            problem="is missing",
        ),
    )  # fmt: skip
    assert verify_command(folder, None, None) == 1
    lines = capsys.readouterr().out.splitlines()
    offset = result.after.find(b"[Image omitted:")
    assert lines[0].startswith(f"DIFFERS at byte {offset} (anthropic, claude-sonnet-4-6; ")
    assert lines[1] == "  before: the image itself, which the conversation sent before it was saved"
    assert lines[2].startswith("  after:  b'") and "[Image omitted:" in lines[2]
    assert lines[3] == (
        f"  the image file {image} is missing ($.history[0].content[1], image/png): the reopened "
        "conversation cannot send its bytes and sends placeholder text instead"
    )
    assert lines[4] == "  put the file back, or pass --allow-omitted when this is expected"
    assert not any("imageOmitted (the 20 MiB" in line for line in lines)


def test_an_image_file_with_other_bytes_is_named_as_not_matching(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, image = _archive(tmp_path)
    image.write_bytes(b"other bytes")
    assert verify_command(folder, None, None) == 1
    out = capsys.readouterr().out
    assert f"the image file {image} does not match its name ($.history[0].content[1]" in out
    assert image.read_bytes() == b"other bytes"  # verify never writes into the archive


def test_a_missing_image_file_is_accepted_with_allow_omitted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, image = _archive(tmp_path)
    image.unlink()
    assert verify_command(folder, None, None, allow_image_budget=True) == 0
    assert capsys.readouterr().out.startswith("OK: ")


def test_an_intact_archive_lists_no_lost_file(tmp_path: Path) -> None:
    folder, _image = _archive(tmp_path)
    result = verify_archive(folder)
    assert result.identical and result.lost_files == () and result.omitted_images == 0
