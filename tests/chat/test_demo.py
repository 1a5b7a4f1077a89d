"""``llmcore chat`` on the embedded emulator: the demo model (issue 22).

The chat runs in this process against an :class:`~llmcore.emulator.engine.Engine` with
:data:`~llmcore.chat.demo.DEMO_SCRIPT` (the model the command starts), so these tests see what
a user sees: a prompt long enough to cache (the hit rate of a later turn is real and high),
answers that quote the user's line and what the named files hold, and a file written only
where the user asked for it.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from rich.console import Console

from llmcore.chat.demo import DEMO_SCRIPT, read_exchange
from llmcore.cli.chat import APP, NOT_A_TERMINAL, ChatSetup, chat_command, run_chat
from llmcore.emulator.engine import Engine
from llmcore.errors import SessionNotFoundError
from llmcore.session import ProjectPaths, SessionStore, list_sessions
from llmcore.transport import HTTPTransport

MODEL = "claude-sonnet-4-6"
_STATUS = re.compile(r"turn (\d+) · (\d+) requests? · .*? hit rate ([\d.]+)%")


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "README.md").write_text("# greeter\n\nSays hello to each name.\n")
    (ws / "src" / "app.py").write_text("def main():\n    return 0\n")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)  # the folder the user ran the command from
    yield ws
    assert list(cwd.iterdir()) == []  # nothing is ever written into it


class Demo:
    """One engine (its cache lives as long as the embedded emulator would) and a chat runner."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self.engine = Engine(script=DEMO_SCRIPT)
        self.prompts: list[str] = []
        """The prompts ``read_line`` was given, in order."""

    def _transport(self) -> HTTPTransport:
        def handle(request: httpx.Request) -> httpx.Response:
            prepared = self.engine.anthropic_messages(request.content, "demo")
            prepared.commit()
            if not prepared.stream:  # the session's extraction call
                return httpx.Response(200, json=None, content=prepared.body)
            headers = {"content-type": "text/event-stream"}
            return httpx.Response(200, headers=headers, content=b"".join(prepared.events))

        return HTTPTransport(
            client=httpx.Client(transport=httpx.MockTransport(handle)),
            base_urls={"anthropic": "http://emulator.invalid"},
            api_keys={"anthropic": "demo"},
        )

    def chat(
        self,
        *lines: str,
        resume: bool | None = True,
        session_id: str | None = None,
        interactive: bool = True,
    ) -> str:
        queue = list(lines)

        def read_line(prompt: str) -> str:
            self.prompts.append(prompt)
            if not queue:
                raise EOFError
            return queue.pop(0)

        out = io.StringIO()
        console = Console(file=out, width=400, highlight=False, no_color=True)
        setup = ChatSetup(
            workspace=self.workspace, config_dir=self.workspace.parent / "cfg",
            provider="anthropic", model=MODEL, console=console, read_line=read_line,
            resume=resume, session_id=session_id, interactive=interactive,
        )  # fmt: skip
        with self._transport() as transport:
            assert run_chat(setup, transport, "embedded emulator") == 0
        return out.getvalue()

    @property
    def store(self) -> SessionStore:
        config = self.workspace.parent / "cfg"
        return SessionStore(ProjectPaths.for_workspace(self.workspace, app=APP, config=config))


def _statuses(out: str) -> list[tuple[int, int, float]]:
    return [(int(t), int(n), float(r)) for t, n, r in _STATUS.findall(out)]


def test_the_answer_uses_the_users_words_and_the_files_and_later_turns_hit_the_cache(
    workspace: Path,
) -> None:
    out = Demo(workspace).chat("hello there", "read README.md and src/app.py", "list the files")
    statuses = _statuses(out)
    assert [(turn, requests) for turn, requests, _ in statuses] == [(1, 2), (2, 2), (3, 2)]
    assert all(rate > 90.0 for _, _, rate in statuses[1:])  # the prompt is long enough to cache
    assert statuses[0][2] > 40.0  # even turn 1: its 2nd request reads what the 1st wrote
    assert "You said: «hello there»." in out
    assert "The workspace has 2 files: README.md, src/app.py." in out
    assert "You said: «read README.md and src/app.py»." in out
    assert "- README.md has 36 bytes in 3 lines; it begins: «# greeter»" in out
    assert "- src/app.py has 25 bytes in 2 lines; it begins: «def main():»" in out
    assert "↳ read_file README.md" in out and "↳ read_file src/app.py" in out
    assert sorted(p.name for p in workspace.rglob("*")) == ["README.md", "app.py", "src"]


def test_a_file_is_written_only_where_the_user_asked(workspace: Path) -> None:
    demo = Demo(workspace)
    out = demo.chat(
        "don't write anything, read README.md",
        "write notes/todo.md: buy milk",
        "save a summary to docs/summary.md",
        "read docs/missing.md",
        "create a file hello.txt containing hi there",
    )
    assert "↳ write_file notes/todo.md" in out and "wrote 9 bytes to notes/todo.md" in out
    assert (workspace / "notes" / "todo.md").read_text() == "buy milk\n"
    assert (workspace / "docs" / "summary.md").read_text() == (
        "# docs/summary.md\n\nWritten at your request: save a summary to docs/summary.md\n"
    )
    assert "read_file docs/missing.md failed: no such file" in out
    assert (workspace / "hello.txt").read_text() == "hi there\n"
    assert (workspace / "README.md").read_text().startswith("# greeter")  # not overwritten
    written = {p.relative_to(workspace).as_posix() for p in workspace.rglob("*") if p.is_file()}
    assert written == {"README.md", "src/app.py", "notes/todo.md", "docs/summary.md", "hello.txt"}


def test_the_turn_counter_and_the_summary_belong_to_the_session(workspace: Path) -> None:
    demo = Demo(workspace)
    first = demo.chat("hello", "read README.md")
    session_id = re.search(r"New session ([0-9a-f]{12})", first)
    assert session_id is not None
    again = demo.chat("list the files")
    assert f"Resumed session {session_id[1]}" in again
    assert [turn for turn, _, _ in _statuses(again)] == [3]
    assert _statuses(again)[0][2] > 90.0  # the same emulator: the resumed prefix is cached
    (info,) = list_sessions(demo.store).sessions
    assert info.session_id == session_id[1] and info.turns == 3
    assert info.summary == "The user asked: «hello»; «read README.md»; «list the files»."


def test_an_empty_session_is_not_kept_and_a_chosen_one_resumes(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = Demo(workspace)
    demo.chat("first task")
    (first,) = list_sessions(demo.store).ids()
    out = demo.chat(resume=False)  # answer n, then leave without a message
    assert "Nothing to save: no message in this session." in out
    demo.chat("second task", resume=False)
    listing = list_sessions(demo.store).sessions
    second = next(info.session_id for info in listing if info.session_id != first)
    assert len(listing) == 2 and listing[0].updated_at >= listing[1].updated_at  # newest first
    chosen = demo.chat("more", session_id=first)
    assert f"Resumed session {first} (4 messages of history)" in chosen
    assert [turn for turn, _, _ in _statuses(chosen)] == [2]
    with pytest.raises(SessionNotFoundError) as caught:
        demo.chat("x", session_id="0123456789ab")
    known = caught.value.message.split("known sessions (newest first): ", 1)[1]
    assert sorted(known.split(", ")) == sorted([first, second])

    code = chat_command(
        workspace=workspace, config_dir=workspace.parent / "cfg", live=False,
        provider="anthropic", model=None, base_url=None, resume=None, list_sessions=True,
    )  # fmt: skip
    lines = capsys.readouterr().out.splitlines()
    assert code == 0 and lines[0].split() == ["session", "last", "active", "messages", "summary"]
    rows = {line.split()[0]: line for line in lines[1:3]}
    assert set(rows) == {first, second}
    assert "«first task»; «more»" in rows[first] and "    8 messages  " in rows[first]
    assert "«second task»" in rows[second]
    assert lines[-1] == "Resume one with: llmcore chat --session ID"


@pytest.mark.parametrize(
    ("shape", "body"),
    [
        (
            "chat",
            {"tools": [{}], "messages": [
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "read notes.txt"},
                {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                 "function": {"name": "read_file", "arguments": '{"path": "notes.txt"}'}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "alpha\n"},
            ]},
        ),
        (
            "responses",
            {"tools": [{}], "instructions": "sys", "input": [
                {"role": "user", "content": [{"type": "input_text", "text": "read notes.txt"}]},
                {"type": "function_call", "call_id": "c1", "name": "read_file",
                 "arguments": '{"path":"notes.txt"}'},
                {"type": "function_call_output", "call_id": "c1", "output": "alpha\n"},
            ]},
        ),
    ],
)  # fmt: skip
def test_the_openai_shapes_are_read_like_the_anthropic_one(shape: str, body: dict) -> None:
    exchange = read_exchange(shape, body)
    assert exchange.user_text == "read notes.txt" and exchange.system == "sys"
    assert exchange.results == (("read_file notes.txt", "alpha\n", False),)
    reply = DEMO_SCRIPT.reply_to(shape, body, "read notes.txt", 1)
    assert reply.text == (
        "You said: «read notes.txt».\n- notes.txt has 6 bytes in 1 line; it begins: «alpha»"
    )
    first = DEMO_SCRIPT.reply_to(shape, {**body, "messages": body.get("messages", [])[:2],
                                         "input": body.get("input", [])[:1]}, "", 0)  # fmt: skip
    assert [(c.name, c.arguments) for c in first.tool_calls] == [
        ("read_file", '{"path":"notes.txt"}')
    ]


def test_the_resume_question_is_read_only_from_a_terminal(workspace: Path) -> None:
    demo = Demo(workspace)
    demo.chat("first task")
    (first,) = list_sessions(demo.store).ids()
    piped = demo.chat("second task", resume=None, interactive=False)
    assert "Resume previous session?" not in "".join(demo.prompts)  # never asked
    assert f"{NOT_A_TERMINAL}\nResumed session {first} (4 messages of history)" in piped
    assert [turn for turn, _, _ in _statuses(piped)] == [2]
    demo.prompts.clear()
    ended = demo.chat(resume=None)  # a terminal, end of input at the question: the default
    assert demo.prompts[0] == "Resume previous session? [Y/n] "
    assert f"Resumed session {first} (8 messages of history)" in ended
    assert NOT_A_TERMINAL not in ended
    declined = demo.chat("n", "third task", resume=None)
    assert "New session " in declined and NOT_A_TERMINAL not in declined
    assert [turn for turn, _, _ in _statuses(declined)] == [1]
    assert len(list_sessions(demo.store).ids()) == 2
