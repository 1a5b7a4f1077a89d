"""Endpoints real clients call besides model turns, parsed by the official SDKs (issue 20 item 4).

Anthropic: count_tokens, models, Message Batches; OpenAI: models, input_tokens, stored
responses, Conversations; both: an unknown path is the provider's JSON 404.
"""

from __future__ import annotations

from collections.abc import Iterator

import anthropic
import httpx
import openai
import pytest

from llmcore.emulator import Emulator, ManualClock

MODEL = "claude-sonnet-4-6"  # 2,048-token minimum
DOC = "A paragraph of the project's guide, repeated to fill the cache. " * 200  # ~3,300 tokens


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with Emulator(clock=ManualClock()) as server:
        yield server


@pytest.fixture
def claude(emu: Emulator) -> Iterator[anthropic.Anthropic]:
    emu.reset()
    client = anthropic.Anthropic(api_key="k", base_url=emu.base_url, max_retries=0)
    yield client
    client.close()


@pytest.fixture
def oai(emu: Emulator) -> Iterator[openai.OpenAI]:
    emu.reset()
    client = openai.OpenAI(api_key="k", base_url=emu.openai_base_url, max_retries=0)
    yield client
    client.close()


def _cached_system() -> list[dict[str, object]]:
    return [{"type": "text", "text": DOC, "cache_control": {"type": "ephemeral"}}]


def test_count_tokens_equals_the_billed_input_of_the_same_request(
    claude: anthropic.Anthropic,
) -> None:
    messages = [{"role": "user", "content": "Summarize the guide."}]
    counted = claude.messages.count_tokens(
        model=MODEL,
        system=_cached_system(),  # type: ignore[arg-type]
        messages=messages,  # type: ignore[arg-type]
    )
    reply = claude.messages.create(
        model=MODEL,
        max_tokens=64,
        system=_cached_system(),  # type: ignore[arg-type]
        messages=messages,  # type: ignore[arg-type]
    )
    usage = reply.usage
    billed = (
        usage.input_tokens
        + (usage.cache_creation_input_tokens or 0)
        + (usage.cache_read_input_tokens or 0)
    )
    assert counted.input_tokens == billed > 3_000
    with pytest.raises(anthropic.BadRequestError, match="max_tokens: Extra inputs"):
        claude.messages.count_tokens(
            model=MODEL,
            messages=messages,  # type: ignore[arg-type]
            extra_body={"max_tokens": 5},
        )


def test_anthropic_models_list_and_retrieve(claude: anthropic.Anthropic) -> None:
    listed = list(claude.models.list())
    assert MODEL in [model.id for model in listed]
    assert all(model.type == "model" and model.display_name for model in listed)
    one = claude.models.retrieve("claude-haiku-4-5")
    assert one.id == "claude-haiku-4-5-20251001" and one.display_name == "Claude Haiku 4.5"
    with pytest.raises(anthropic.NotFoundError) as caught:
        claude.models.retrieve("claude-nothing-1")
    assert caught.value.body["error"]["type"] == "not_found_error"  # type: ignore[index]


def test_message_batch_runs_in_order_with_its_cache_accounting(
    claude: anthropic.Anthropic,
) -> None:
    def params(question: str) -> dict[str, object]:
        return {
            "model": MODEL,
            "max_tokens": 64,
            "system": _cached_system(),
            "messages": [{"role": "user", "content": question}],
        }

    batch = claude.messages.batches.create(
        requests=[
            {"custom_id": "first", "params": params("One?")},  # type: ignore[typeddict-item]
            {"custom_id": "second", "params": params("Two?")},  # type: ignore[typeddict-item]
            {"custom_id": "bad", "params": {"model": MODEL, "messages": []}},  # type: ignore[typeddict-item]
        ]
    )
    assert batch.processing_status == "ended"
    assert (batch.request_counts.succeeded, batch.request_counts.errored) == (2, 1)
    assert claude.messages.batches.retrieve(batch.id).id == batch.id
    assert [b.id for b in claude.messages.batches.list()] == [batch.id]
    results = {entry.custom_id: entry.result for entry in claude.messages.batches.results(batch.id)}
    first, second, bad = results["first"], results["second"], results["bad"]
    assert first.type == "succeeded" and second.type == "succeeded"
    assert first.message.usage.cache_creation_input_tokens > 3_000
    assert second.message.usage.cache_read_input_tokens == (
        first.message.usage.cache_creation_input_tokens
    )
    assert bad.type == "errored" and "max_tokens: Field required" in bad.error.error.message
    deleted = claude.messages.batches.delete(batch.id)
    assert deleted.type == "message_batch_deleted"
    with pytest.raises(anthropic.NotFoundError):
        claude.messages.batches.retrieve(batch.id)


def test_openai_models_list_and_retrieve(oai: openai.OpenAI) -> None:
    ids = [model.id for model in oai.models.list()]
    assert "gpt-5" in ids
    assert oai.models.retrieve("gpt-5").created == 1754524800  # 2025-08-07
    with pytest.raises(openai.NotFoundError) as caught:
        oai.models.retrieve("gpt-nothing")
    assert caught.value.code == "model_not_found"


def test_input_tokens_equals_the_responses_usage(oai: openai.OpenAI) -> None:
    counted = oai.responses.input_tokens.count(model="gpt-5", input=DOC, instructions="Be brief.")
    made = oai.responses.create(model="gpt-5", input=DOC, instructions="Be brief.")
    assert made.usage is not None
    assert counted.input_tokens == made.usage.input_tokens > 3_000
    after = oai.responses.input_tokens.count(
        model="gpt-5", previous_response_id=made.id, input="More?"
    )
    assert after.input_tokens > made.usage.input_tokens


def test_stored_response_retrieve_input_items_and_delete(oai: openai.OpenAI) -> None:
    made = oai.responses.create(model="gpt-5", input="What is here?")
    again = oai.responses.retrieve(made.id)
    assert again.id == made.id and again.output_text == made.output_text
    items = list(oai.responses.input_items.list(made.id))
    assert [(item.type, item.role) for item in items] == [("message", "user")]  # type: ignore[union-attr]
    oai.responses.delete(made.id)
    with pytest.raises(openai.NotFoundError):
        oai.responses.retrieve(made.id)
    with pytest.raises(openai.BadRequestError, match="not found"):
        oai.responses.create(model="gpt-5", previous_response_id=made.id, input="More?")


def test_conversations_hold_items_and_feed_the_cache(oai: openai.OpenAI) -> None:
    conversation = oai.conversations.create(items=[{"role": "user", "content": DOC}])
    assert conversation.object == "conversation"
    first = oai.responses.create(model="gpt-5", conversation=conversation.id, input="Summary?")
    second = oai.responses.create(model="gpt-5", conversation=conversation.id, input="Shorter?")
    assert first.usage is not None and second.usage is not None
    assert second.usage.input_tokens_details.cached_tokens >= 3_000
    items = list(oai.conversations.items.list(conversation.id, order="asc"))
    assert [item.type for item in items] == ["message"] * 5  # doc, 2 × (question, answer)
    added = oai.conversations.items.create(
        conversation.id, items=[{"type": "message", "role": "user", "content": "Note."}]
    )
    assert len(added.data) == 1
    fetched = oai.conversations.items.retrieve(added.data[0].id, conversation_id=conversation.id)
    assert fetched.id == added.data[0].id
    assert oai.conversations.retrieve(conversation.id).id == conversation.id
    assert oai.conversations.delete(conversation.id).deleted is True
    with pytest.raises(openai.NotFoundError):
        oai.conversations.retrieve(conversation.id)


def test_unknown_paths_are_json_404_in_the_provider_shape(emu: Emulator) -> None:
    anthropic_answer = httpx.get(
        emu.base_url + "/v1/nothing", headers={"anthropic-version": "2023-06-01"}
    )
    assert anthropic_answer.status_code == 404
    assert anthropic_answer.json()["error"]["type"] == "not_found_error"
    assert anthropic_answer.json()["type"] == "error"
    openai_answer = httpx.post(emu.base_url + "/v1/nothing", headers={"authorization": "Bearer k"})
    assert openai_answer.status_code == 404
    assert openai_answer.json()["error"]["message"] == "Invalid URL (POST /v1/nothing)"
    wrong_method = httpx.get(emu.base_url + "/v1/messages", headers={"x-api-key": "k"})
    assert wrong_method.status_code == 405 and wrong_method.json()["type"] == "error"
    with (
        anthropic.Anthropic(api_key="k", base_url=emu.base_url, max_retries=0) as client,
        pytest.raises(anthropic.NotFoundError),
    ):
        client.get("/v1/nothing", cast_to=object)
    # Claude Code's connectivity preflight is answered as the real front door answers it
    assert httpx.head(emu.base_url + "/").status_code == 200
    assert httpx.head(emu.base_url + "/api/hello").status_code == 200
