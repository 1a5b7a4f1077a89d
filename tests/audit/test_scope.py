"""Scope (issue 11, SPEC V1): cassette files, conversation keys, chains, ``--group``."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore import jsonbytes
from llmcore.audit import AuditInput, AuditInputError, Verdict, audit_bodies, audit_paths
from llmcore.cli.audit import EXIT_BREAK, audit_command

from . import _bodies as b
from . import _cassettes as cas


def _conversation(words: list[str]) -> list[bytes]:
    """Growing requests of one conversation: [u0], [u0 a0 u1], …"""
    msgs = []
    for i, w in enumerate(words):
        if i:
            msgs.append(b.assistant(f"answer {i}"))
        msgs.append(b.user(w))
    return [b.anthropic(msgs[: 2 * n + 1]) for n in range(len(words))]


def test_requests_of_different_cassettes_are_never_grouped(tmp_path: Path):
    bodies = _conversation(["same start", "one", "two"])
    first = cas.write(tmp_path / "a.yaml", [cas.interaction(x) for x in bodies[:2]])
    second = cas.write(tmp_path / "b.yaml", [cas.interaction(bodies[2])])
    report = audit_paths([first, second])
    assert [r.conversation for r in report.requests] == [0, 0, 1]
    assert [r.verdict for r in report.requests] == [Verdict.NEW, Verdict.STABLE, Verdict.NEW]
    assert [r.file for r in report.requests] == [str(first), str(first), str(second)]
    assert [r.position for r in report.requests] == [0, 1, 0]
    # --group prefix groups across files as the longest shared run says
    joined = audit_paths([first, second], group="prefix")
    assert [r.conversation for r in joined.requests] == [0, 0, 0]
    assert joined.requests[2].compared_with == 1


def test_jsonl_keeps_the_longest_run_grouping_and_group_file_splits_it(tmp_path: Path):
    bodies = _conversation(["start", "more", "most"])
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    one.write_bytes(bodies[0] + b"\n" + bodies[1] + b"\n")
    two.write_bytes(bodies[2] + b"\n")
    report = audit_paths([one, two])
    assert [r.conversation for r in report.requests] == [0, 0, 0]
    assert [r.position for r in report.requests] == [1, 2, 1]
    split = audit_paths([one, two], group="file")
    assert [r.conversation for r in split.requests] == [0, 0, 1]
    assert split.requests[2].verdict is Verdict.NEW


def test_a_changed_first_message_in_one_file_is_a_break_not_a_new_conversation(tmp_path: Path):
    first = b.anthropic([b.user("Summarize a.txt"), b.assistant("ok"), b.user("more")])
    edited = b.anthropic([b.user("Summarize b.txt"), b.assistant("ok"), b.user("more")])
    path = cas.write(tmp_path / "t.yaml", [cas.interaction(first), cas.interaction(edited)])
    rec = audit_paths([path]).requests[1]
    assert rec.conversation == 0 and rec.compared_with == 0
    assert rec.verdict is Verdict.BREAK
    assert rec.divergence == "messages"
    assert rec.path == "messages[0].content[0].text"
    assert rec.first_break_offset == edited.index(b"b.txt")
    assert rec.grouping == (
        "joined: same model, tools and system as request 0 of its file scope, first message differs"
        f" (within file {path})"
    )
    out, err = io.StringIO(), io.StringIO()
    assert audit_command([path], None, False, out=out, err=err) == EXIT_BREAK
    assert "break (messages)" in out.getvalue()
    text = " ".join(out.getvalue().split())  # the summary wraps where the temp path ends
    assert "interactions[1]): break in messages: messages[0] differs" in text
    # Without a file scope (--group prefix, plain bodies) the messages after the edited first
    # one still match, so it is the same break (issue 19; it was a new conversation before).
    assert audit_command([path], None, True, group="prefix", out=out, err=err) == EXIT_BREAK
    assert '"group":"prefix"' in out.getvalue()
    plain = audit_bodies([first, edited])
    assert plain.requests[1].verdict is Verdict.BREAK
    assert plain.requests[1].path == "messages[0].content[0].text"


def test_a_changed_first_message_with_another_system_prompt_is_a_new_conversation(tmp_path):
    first = b.anthropic([b.user("q1")], system="You are a poet.")
    other = b.anthropic([b.user("q2")], system="You are a judge.")
    path = cas.write(tmp_path / "t.yaml", [cas.interaction(first), cas.interaction(other)])
    report = audit_paths([path])
    assert [r.verdict for r in report.requests] == [Verdict.NEW, Verdict.NEW]
    assert report.conversations == 2


def test_another_model_with_another_first_message_is_a_new_conversation(tmp_path: Path):
    first = b.anthropic([b.user("q1")], model="claude-sonnet-4-5")
    other = b.anthropic([b.user("q2")], model="claude-haiku-4-5")
    path = cas.write(tmp_path / "t.yaml", [cas.interaction(first), cas.interaction(other)])
    assert [r.verdict for r in audit_paths([path]).requests] == [Verdict.NEW, Verdict.NEW]


def test_chat_system_messages_count_as_system_for_the_first_message_rule(tmp_path: Path):
    sys_msg = {"role": "system", "content": "Shared."}
    a = b.chat([sys_msg, {"role": "user", "content": "first"}])
    c = b.chat(
        [
            sys_msg,
            {"role": "user", "content": "second"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "go on"},
        ]
    )
    path = cas.write(
        tmp_path / "c.yaml", [cas.interaction(a, "openai-chat"), cas.interaction(c, "openai-chat")]
    )
    rec = audit_paths([path]).requests[1]
    assert rec.verdict is Verdict.BREAK and rec.divergence == "messages"
    assert rec.path == "messages[1].content"


def _chat_with(key: str, value: object, text: str) -> bytes:
    body = {"model": "gpt-4.1", key: value, "messages": [{"role": "user", "content": text}]}
    return jsonbytes.dumps(body)


def test_prompt_cache_key_separates_within_a_file_and_joins_across_files_with_group_key(
    tmp_path: Path,
):
    a1 = _chat_with("prompt_cache_key", "conv-a", "hello")
    b1 = _chat_with("prompt_cache_key", "conv-b", "hello there")
    a2 = jsonbytes.dumps(
        {
            "model": "gpt-4.1",
            "prompt_cache_key": "conv-a",
            "messages": [
                {"role": "user", "content": "hello"},
                {"role": "assistant", "content": "hi"},
                {"role": "user", "content": "bye"},
            ],
        }
    )
    chat = "openai-chat"
    one = cas.write(tmp_path / "1.yaml", [cas.interaction(a1, chat), cas.interaction(b1, chat)])
    two = cas.write(tmp_path / "2.yaml", [cas.interaction(a2, chat)])
    report = audit_paths([one, two])  # keys split file 1; file 2 stays apart
    assert [r.conversation for r in report.requests] == [0, 1, 2]
    assert [r.verdict for r in report.requests] == [Verdict.NEW] * 3
    assert report.requests[1].grouping.endswith(f"(key prompt_cache_key=conv-b in file {one})")
    by_key = audit_paths([one, two], group="key")
    assert [r.conversation for r in by_key.requests] == [0, 1, 0]
    assert [r.verdict for r in by_key.requests] == [Verdict.NEW, Verdict.NEW, Verdict.STABLE]
    assert by_key.requests[2].grouping == (
        "joined: shares 1 leading history message with request 0 (key prompt_cache_key=conv-a)"
    )
    # --group file ignores the keys: b1, a lone first message, is a fresh run inside file 1.
    by_file = audit_paths([one, two], group="file")
    assert [r.verdict for r in by_file.requests] == [Verdict.NEW, Verdict.NEW, Verdict.NEW]
    assert [r.conversation for r in by_file.requests] == [0, 1, 2]


def test_a_key_shared_by_unrelated_cassettes_does_not_join_them(tmp_path: Path):
    def body(text: str) -> bytes:
        return b.anthropic([b.user(text)], extra={"metadata": {"user_id": "ci"}})

    one = cas.write(tmp_path / "1.yaml", [cas.interaction(body("first test"))])
    two = cas.write(tmp_path / "2.yaml", [cas.interaction(body("second test"))])
    assert [r.verdict for r in audit_paths([one, two]).requests] == [Verdict.NEW, Verdict.NEW]


def test_anthropic_metadata_user_id_is_a_key():
    def body(user: str, text: str) -> bytes:
        return b.anthropic([b.user(text)], extra={"metadata": {"user_id": user}})

    report = audit_bodies([body("u1", "x"), body("u2", "y"), body("u1", "z")])
    assert [r.conversation for r in report.requests] == [0, 1, 0]
    # inside the key scope, the changed first message is a break
    assert report.requests[2].verdict is Verdict.BREAK
    assert report.requests[2].divergence == "messages"


def test_jsonl_envelope_conversation_key(tmp_path: Path):
    first = b.anthropic([b.user("one")])
    second = b.anthropic([b.user("two")])
    lines = [
        jsonbytes.dumps({"conversation": "c-1", "body": first.decode()}),
        jsonbytes.dumps({"conversation": "c-2", "body": jsonbytes.loads(second)}),
        jsonbytes.dumps({"conversation": "c-1", "body": second.decode()}),
    ]
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    report = audit_paths([path])
    assert [r.conversation for r in report.requests] == [0, 1, 0]
    assert report.requests[2].verdict is Verdict.BREAK
    assert report.requests[1].source == f"{path}:2"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b'{"body": 5}', "envelope 'body' is an integer of 1 digit, not a string or object"),
        (b'{"conversation": 3, "body": "{}"}', "envelope 'conversation' is an integer"),
    ],
)
def test_a_bad_envelope_is_a_typed_error(tmp_path: Path, line: bytes, message: str):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(line + b"\n")
    with pytest.raises(AuditInputError, match=message) as info:
        audit_paths([path])
    assert info.value.location == f"{path}:1"


def _responses_body(items: list[dict[str, object]], **extra: object) -> bytes:
    body: dict[str, object] = {"model": "gpt-5", "instructions": "Be brief.", "input": items}
    body.update(extra)
    return jsonbytes.dumps(body)


def _response(rid: str) -> str:
    usage = {"input_tokens": 2000, "input_tokens_details": {"cached_tokens": 1536}}
    return jsonbytes.dumps({"id": rid, "object": "response", "usage": usage}).decode()


def test_previous_response_id_continues_the_recorded_response(tmp_path: Path):
    user = {"role": "user", "content": "Weather in Paris?"}
    follow = {"role": "user", "content": "And tomorrow?"}
    first = _responses_body([user])
    second = _responses_body([follow], previous_response_id="resp_1")
    changed = _responses_body([follow], previous_response_id="resp_1", instructions="Be long.")
    unknown = _responses_body([follow], previous_response_id="resp_404")
    path = cas.write(
        tmp_path / "r.yaml",
        [
            cas.interaction(first, "openai-responses", _response("resp_1")),
            cas.interaction(second, "openai-responses", _response("resp_2")),
            cas.interaction(changed, "openai-responses"),
            cas.interaction(unknown, "openai-responses"),
        ],
    )
    report = audit_paths([path])
    r = report.requests
    assert [x.verdict for x in r] == [
        Verdict.NEW,
        Verdict.CONTINUATION,
        Verdict.BREAK,
        Verdict.NEW,
    ]
    assert r[1].conversation == r[2].conversation == 0 and r[1].compared_with == 0
    assert r[1].grouping == "joined: previous_response_id names the response to request 0"
    assert r[1].path == "input[0]"
    assert r[2].divergence == "system" and r[2].path == "instructions"
    assert r[3].conversation == 1
    assert report.stable is False
    by_file = audit_paths([path], group="file")  # the chain stays inside its file
    assert by_file.requests[1].verdict is Verdict.CONTINUATION
    by_prefix = audit_paths([path], group="prefix")  # no chains: the lone item is new
    assert by_prefix.requests[1].verdict is Verdict.NEW


def test_unknown_grouping_is_refused():
    with pytest.raises(AuditInputError, match="unknown grouping 'files'") as info:
        audit_bodies([b.anthropic([b.user("x")])], group="files")
    assert info.value.location == "--group"


def test_group_key_groups_keyless_requests_across_files(tmp_path: Path):
    bodies = _conversation(["shared", "next"])
    one = cas.write(tmp_path / "1.yaml", [cas.interaction(bodies[0])])
    two = cas.write(tmp_path / "2.yaml", [cas.interaction(bodies[1])])
    assert [r.conversation for r in audit_paths([one, two]).requests] == [0, 1]
    assert [r.conversation for r in audit_paths([one, two], group="key").requests] == [0, 0]


_WORDS = st.sampled_from(["alpha", "beta", "gamma", "same"])


@settings(max_examples=60, deadline=None)
@given(
    plan=st.lists(
        st.tuples(
            st.integers(0, 2),
            st.lists(_WORDS, min_size=1, max_size=3),
            st.sampled_from([None, "u1", "u2"]),
        ),
        min_size=1,
        max_size=12,
    ),
    group=st.sampled_from([None, "file"]),
)
def test_group_file_never_joins_requests_of_different_files(plan, group):
    inputs = []
    for k, (file_no, words, user) in enumerate(plan):
        msgs = []
        for i, w in enumerate(words):
            msgs += ([b.assistant(f"a{i}")] if i else []) + [b.user(w)]
        extra = {"metadata": {"user_id": user}} if user else None
        name = f"f{file_no}.yaml"
        body = b.anthropic(msgs, extra=extra)
        inputs.append(AuditInput(body=body, source=f"{name}#{k}", file=name, scope=name))
    report = audit_bodies(inputs, group=group)
    files_of: dict[int, set[str | None]] = {}
    for rec in report.requests:
        files_of.setdefault(rec.conversation, set()).add(rec.file)
        if rec.compared_with is not None:
            assert report.requests[rec.compared_with].file == rec.file
    assert all(len(files) == 1 for files in files_of.values())


def test_a_continuation_that_re_sends_the_held_input_says_so(tmp_path: Path):
    user = {"role": "user", "content": "Weather in Paris?"}
    follow = {"role": "user", "content": "And tomorrow?"}
    path = cas.write(
        tmp_path / "r.yaml",
        [
            cas.interaction(_responses_body([user]), "openai-responses", _response("resp_1")),
            cas.interaction(
                _responses_body([user, follow], previous_response_id="resp_1"), "openai-responses"
            ),
        ],
    )
    r = audit_paths([path]).requests[1]
    assert r.verdict is Verdict.CONTINUATION
    assert r.detail == (
        "server-side continuation of request 0's response: 2 appended input items; it re-sends"
        " 1 of request 0's input items, which the server already holds (they are counted twice)"
    )


def test_a_lone_first_message_in_a_file_is_a_fresh_run_and_a_longer_one_is_a_break(
    tmp_path: Path,
):
    first = b.anthropic([b.user("summarize")])
    fresh = b.anthropic([b.user("describe")])
    edited = b.anthropic([b.user("describe"), b.assistant("It is a note."), b.user("more")])
    path = cas.write(
        tmp_path / "t.yaml",
        [cas.interaction(first), cas.interaction(fresh), cas.interaction(edited)],
    )
    r = audit_paths([path]).requests
    assert [x.verdict for x in r] == [Verdict.NEW, Verdict.NEW, Verdict.STABLE]
    alone = cas.write(tmp_path / "u.yaml", [cas.interaction(first), cas.interaction(edited)])
    r = audit_paths([alone]).requests
    assert [x.verdict for x in r] == [Verdict.NEW, Verdict.BREAK]
    assert r[1].path == "messages[0].content[0].text" and r[1].divergence == "messages"


def test_the_conversation_parameter_continues_the_server_side_conversation(tmp_path: Path):
    user = {"role": "user", "content": "Weather in Paris?"}
    out = {"type": "function_call_output", "call_id": "c1", "output": "18 C"}
    first = _responses_body([user], conversation="conv_1")
    second = _responses_body([out], conversation={"id": "conv_1"})
    other = _responses_body([out], conversation="conv_2")
    path = cas.write(
        tmp_path / "r.yaml",
        [cas.interaction(x, "openai-responses") for x in (first, second, other)],
    )
    r = audit_paths([path]).requests
    assert [x.verdict for x in r] == [Verdict.NEW, Verdict.CONTINUATION, Verdict.NEW]
    assert r[1].grouping.startswith(
        "joined: the conversation parameter names the server-side conversation of request 0"
    )
    assert audit_paths([path], group="prefix").requests[1].verdict is Verdict.NEW


def test_a_responses_compaction_item_replacing_the_history_is_compaction(tmp_path: Path):
    user = {"role": "user", "content": "What is 2+2?"}
    answer = {"role": "assistant", "content": "4"}
    follow = {"role": "user", "content": "And 3+3?"}
    item = {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAA"}
    bodies = [
        _responses_body([user]),
        _responses_body([user, answer, follow]),
        _responses_body([item, follow]),
    ]
    path = cas.write(tmp_path / "r.yaml", [cas.interaction(x, "openai-responses") for x in bodies])
    r = audit_paths([path]).requests
    assert [x.verdict for x in r] == [Verdict.NEW, Verdict.STABLE, Verdict.COMPACTION]
    assert r[2].conversation == 0 and r[2].path == "input[0]"


def test_openrouter_text_shorthand_is_the_same_prompt_and_other_edits_still_break(
    tmp_path: Path,
):
    def body(first: object, *rest: dict) -> bytes:
        messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": first}]
        return jsonbytes.dumps(
            {"model": "anthropic/claude-sonnet-4.6", "messages": messages + list(rest)}
        )

    part = [{"type": "text", "text": "Long prompt.", "cache_control": {"type": "ephemeral"}}]
    more = ({"role": "assistant", "content": "ok"}, {"role": "user", "content": "next"})
    bodies = [body(part), body("Long prompt.", *more), body("Long prompt!", *more)]
    path = cas.write(tmp_path / "o.yaml", [cas.interaction(x, "openrouter") for x in bodies])
    report = audit_paths([path])
    assert [r.verdict for r in report.requests] == [Verdict.NEW, Verdict.STABLE, Verdict.BREAK]
    assert report.requests[2].path == "messages[1].content"


def test_a_response_id_reused_in_another_file_does_not_join_the_files(tmp_path: Path):
    user = {"role": "user", "content": "Weather in Paris?"}
    follow = {"role": "user", "content": "And tomorrow?"}
    one = cas.write(
        tmp_path / "1.yaml",
        [cas.interaction(_responses_body([user]), "openai-responses", _response("r1"))],
    )
    two = cas.write(
        tmp_path / "2.yaml",
        [cas.interaction(_responses_body([follow], previous_response_id="r1"), "openai-responses")],
    )
    r = audit_paths([one, two]).requests
    assert [x.verdict for x in r] == [Verdict.NEW, Verdict.NEW]
    assert r[0].conversation != r[1].conversation
    by_key = audit_paths([one, two], group="key").requests
    assert [x.verdict for x in by_key] == [Verdict.NEW, Verdict.CONTINUATION]
