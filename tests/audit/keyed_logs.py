"""A generated gateway log: JSONL envelopes of interleaved agent conversations, keyed.

Each conversation sends growing histories (Anthropic Messages or OpenAI Chat), with a system
prompt and tools shared by many conversations (so the theoretical maximum crosses keys), and
now and then an edited earlier message (a break), a retry, a rejected request (status 500 or
no response), recorded usage and send times. Some lines are plain bodies with no envelope
(grouped across the whole input). Used by the ``--jobs`` and
engine tests (small counts) and ``benchmarks/bench_audit_scale.py`` (a size in bytes).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from llmcore import jsonbytes

WORDS = (
    "cache prefix request body token stable history message provider tool result image "
    "archive session turn byte order key value compaction summary breakpoint model"
).split()


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def _systems(rng: random.Random, count: int) -> list[str]:
    return [f"You are agent {i}. " + _text(rng, 300) for i in range(count)]


def _tools() -> list[dict[str, Any]]:
    return [
        {
            "name": f"tool_{i}",
            "description": f"Does thing {i} with the workspace.",
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
        }
        for i in range(3)
    ]


class _Conversation:
    def __init__(self, rng: random.Random, key: str, system: str, shape: str) -> None:
        self.rng = rng
        self.key = key
        self.system = system
        self.shape = shape
        self.messages: list[dict[str, Any]] = []
        self.last: bytes | None = None

    def next_body(self, answer_words: int) -> bytes:
        rng = self.rng
        if self.messages:
            self.messages.append({"role": "assistant", "content": _text(rng, answer_words)})
        self.messages.append({"role": "user", "content": _text(rng, answer_words // 2 + 1)})
        if len(self.messages) > 3 and rng.random() < 0.08:  # an edited earlier message: a break
            self.messages[1] = {"role": "assistant", "content": _text(rng, 5)}
        if self.shape == "anthropic":
            messages = [dict(m) for m in self.messages]
            last = messages[-1]
            last["content"] = [
                {"type": "text", "text": last["content"], "cache_control": {"type": "ephemeral"}}
            ]
            body: dict[str, Any] = {
                "model": "claude-sonnet-4-5",
                "max_tokens": 1024,
                "system": [{"type": "text", "text": self.system}],
                "tools": _tools(),
                "messages": messages,
            }
        else:
            body = {
                "model": "gpt-4.1",
                "messages": [{"role": "system", "content": self.system}, *self.messages],
            }
        return jsonbytes.dumps(body)


def _usage(shape: str, rng: random.Random) -> dict[str, int]:
    if shape == "anthropic":
        return {
            "input_tokens": rng.randint(1, 50),
            "cache_read_input_tokens": rng.randint(0, 4000),
            "cache_creation_input_tokens": rng.randint(0, 400),
            "output_tokens": 20,
        }
    return {"prompt_tokens": rng.randint(100, 5000), "completion_tokens": 20}


def _line(conv: _Conversation, body: bytes, rng: random.Random, when: float) -> bytes:
    roll = rng.random()
    if roll < 0.05:  # a plain body, grouped across the whole input
        return body
    envelope: dict[str, Any] = {"conversation": conv.key, "body": body.decode()}
    if roll < 0.08:
        envelope["status"] = rng.choice([500, None])
    else:
        envelope["status"] = 200
        envelope["usage"] = _usage(conv.shape, rng)
    envelope["time"] = when
    return jsonbytes.dumps(envelope)


def keyed_log(
    seed: int,
    *,
    conversations: int = 4,
    turns: int = 4,
    answer_words: int = 40,
    size: int | None = None,
) -> bytes:
    """The log's bytes; with ``size``, conversations are added until it holds that many bytes.

    Args:
        seed: The random seed (the same seed gives the same bytes).
        conversations: How many conversations run at once.
        turns: Requests per conversation.
        answer_words: Words per assistant answer (a user message has half).
        size: A target size in bytes, or ``None`` for exactly ``conversations``.
    """
    rng = random.Random(seed)
    systems = _systems(rng, 3)
    lines: list[bytes] = []
    total = 0
    when = 1_800_000_000.0
    made = 0
    while made < conversations or (size is not None and total < size):
        group = [
            _Conversation(
                rng, f"c{made + i}", rng.choice(systems), rng.choice(["anthropic", "chat"])
            )
            for i in range(conversations)
        ]
        made += conversations
        for _turn in range(turns):
            for conv in rng.sample(group, len(group)):
                body = conv.next_body(answer_words)
                if conv.last is not None and rng.random() < 0.04:
                    body = conv.last  # a retry: the same bytes again
                conv.last = body
                when += rng.random() * 20
                line = _line(conv, body, rng, when)
                lines.append(line)
                total += len(line) + 1
                if size is not None and total >= size:
                    return b"\n".join(lines) + b"\n"
    return b"\n".join(lines) + b"\n"


def write_keyed_log(path: Path, seed: int, **options: Any) -> Path:
    """Write :func:`keyed_log` to ``path`` and return it."""
    path.write_bytes(keyed_log(seed, **options))
    return path


def write_response_chain(path: Path) -> Path:
    """Three keyed Responses lines where key ``b``'s request chains to key ``a``'s response.

    ``previous_response_id`` joins the second line to the first across their keys, so a
    partition by key alone would audit them apart.
    """
    first = {"model": "gpt-4.1", "instructions": "shared " * 1500, "input": []}
    first["input"] = [{"role": "user", "content": "a"}]
    chained = {**first, "previous_response_id": "resp_1"}
    chained["input"] = [{"role": "user", "content": "b"}]
    envelopes = [
        {"conversation": "a", "body": first, "response_id": "resp_1"},
        {"conversation": "b", "body": chained},
        {"conversation": "c", "body": first},
    ]
    path.write_bytes(
        b"".join(
            jsonbytes.dumps({**e, "body": jsonbytes.dumps(e["body"]).decode()}) + b"\n"
            for e in envelopes
        )
    )
    return path


_RESPONSES_SYSTEM = "shared instructions " * 300


def responses_log(seed: int, lines: int, keys: int, tag: str) -> bytes:
    """A Responses log: keyed and unkeyed lines, many naming an earlier line's response.

    Links go to a response of any earlier line (its key, another key, a line without one),
    to a response never recorded, and to ``resp_other_file_0`` (the first response of a
    log made with ``tag="other_file"``); responses are named ``resp_{tag}_{line}``.
    """
    rng = random.Random(seed)
    recorded: list[str] = []
    out = []
    for n in range(lines):
        key = rng.choice([*(f"k{k}" for k in range(keys)), None])
        body: dict[str, Any] = {
            "model": "gpt-4.1",
            "instructions": _RESPONSES_SYSTEM,
            "input": [{"role": "user", "content": f"turn {n} of {key}"}],
        }
        roll = rng.random()
        if recorded and roll < 0.4:
            body["previous_response_id"] = rng.choice(recorded)
        elif roll < 0.5:
            body["previous_response_id"] = f"resp_{tag}_never"
        elif roll < 0.6:
            body["previous_response_id"] = "resp_other_file_0"
        answered = f"resp_{tag}_{n}"
        if key is None and rng.random() < 0.5:
            out.append(jsonbytes.dumps(body))  # a plain body: names, records nothing
            continue
        envelope: dict[str, Any] = {"body": jsonbytes.dumps(body).decode(), "time": 1e9 + n}
        if key is not None:
            envelope["conversation"] = key
        if rng.random() < 0.8:
            envelope["response_id"] = answered
            recorded.append(answered)
        out.append(jsonbytes.dumps(envelope))
    return b"\n".join(out) + b"\n"


def paired_responses_log(seed: int, lines: int, keys: int, tag: str) -> bytes:
    """A Responses log whose chains stay within pairs of keys (``k0`` and ``k1``, …).

    Each line names its key's last response; one line in twenty names its pair's instead, so
    the chains join each pair of keys and no more: ``keys // 2`` groups to partition.
    """
    rng = random.Random(seed)
    last: dict[str, str] = {}
    words = ("tool", "result", "prefix", "cache", "turn", "model", "token", "history")
    out = []
    for n in range(lines):
        number = rng.randrange(keys)
        key, pair = f"k{number}", f"k{number ^ 1}"
        text = " ".join(rng.choice(words) for _ in range(rng.randrange(20, 120)))
        body: dict[str, Any] = {
            "model": "gpt-4.1",
            "instructions": _RESPONSES_SYSTEM,
            "input": [{"role": "user", "content": f"turn {n} of {key}: {text}"}],
        }
        previous = last.get(pair) if rng.random() < 0.05 and pair in last else last.get(key)
        if previous is not None:
            body["previous_response_id"] = previous
        answered = last[key] = f"resp_{tag}_{n}"
        envelope = {
            "body": jsonbytes.dumps(body).decode(),
            "conversation": key,
            "time": 1e9 + n,
            "response_id": answered,
        }
        out.append(jsonbytes.dumps(envelope))
    return b"\n".join(out) + b"\n"
