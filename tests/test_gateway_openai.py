"""The OpenAI-compatible endpoint, driven by the official ``openai`` client, streaming and not."""

from __future__ import annotations

import httpx
import openai
import pytest

from tests.fakes.gateway_kit import TOKEN, RunningGateway, gateway_config
from tests.fakes.ollama_server import FakeOllama, Reply


def _respond(body: dict) -> Reply:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return Reply(content="Saved.")
    if last["content"].startswith("remember "):
        return Reply(tool_calls=[("remember", {"text": last["content"].removeprefix("remember ")})])
    if last["content"].endswith("fail please"):  # a failed turn leaves it unanswered: the next joins it
        return Reply(status=500, error="model exploded")
    return Reply(content=f"answer to {last['content']} in several words", thinking="hmm")


@pytest.fixture
def gw(isolated_home):
    with FakeOllama(responder=_respond) as fake, RunningGateway(gateway_config(isolated_home, fake.url)) as running:
        running.fake = fake
        yield running


def openai_client(gw, **kwargs) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.url + "/v1", api_key=TOKEN, max_retries=0, timeout=30, **kwargs)


def test_models_lists_the_assistant(gw):
    assert [m.id for m in openai_client(gw).models.list()] == ["picoora"]


def test_a_completion_is_the_last_user_message_in_the_users_session(gw):
    client = openai_client(gw)
    completion = client.chat.completions.create(model="picoora", user="carol", messages=[
        {"role": "system", "content": "You are a pirate."},
        {"role": "user", "content": "an earlier question"},
        {"role": "assistant", "content": "an earlier answer"},
        {"role": "user", "content": "what now?"},
    ])
    assert completion.choices[0].message.content == "answer to what now? in several words"
    assert completion.choices[0].finish_reason == "stop" and completion.model == "picoora"
    sent = gw.fake.requests[-1]["messages"]
    assert [m["content"] for m in sent if m["role"] == "user"] == ["what now?"]  # the rest is not replayed
    assert "pirate" not in str(sent)
    with httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        entries = http.get("/v1/sessions/openai:carol").json()["entries"]
    assert [e["message"]["content"] for e in entries] == ["what now?", "answer to what now? in several words"]


def test_the_session_header_wins_over_the_user_field_and_odd_ids_are_cleaned(gw):
    client = openai_client(gw, default_headers={"X-Session-Id": "my editor/1"})
    client.chat.completions.create(model="anything", user="dave", messages=[{"role": "user", "content": "hi"}])
    openai_client(gw).chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "yo"}])
    with httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        keys = sorted(s["key"] for s in http.get("/v1/sessions").json())
    assert keys == ["openai:default", "openai:my_editor_1"]


def test_streaming_deltas_add_up_to_the_answer(gw):
    stream = openai_client(gw).chat.completions.create(
        model="picoora", stream=True, messages=[{"role": "user", "content": "stream it"}])
    chunks = list(stream)
    content = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert content == "answer to stream it in several words"
    assert len([c for c in chunks if c.choices[0].delta.content]) > 1
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert len({c.id for c in chunks}) == 1


def test_a_turn_with_a_tool_streams_only_the_answer_text(gw):
    stream = openai_client(gw).chat.completions.create(
        model="picoora", stream=True, messages=[{"role": "user", "content": "remember the gate code is 4421"}])
    assert "".join(c.choices[0].delta.content or "" for c in stream) == "Saved."
    with httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        assert "4421" in http.get("/v1/memory", params={"q": "gate code"}).text


def test_a_failed_turn_is_an_api_error_streaming_and_not(gw):
    client = openai_client(gw)
    with pytest.raises(openai.APIStatusError) as failed:
        client.chat.completions.create(model="picoora", messages=[{"role": "user", "content": "fail please"}])
    assert failed.value.status_code == 502
    with pytest.raises(openai.APIError):
        list(client.chat.completions.create(model="picoora", stream=True,
                                            messages=[{"role": "user", "content": "fail please"}]))


@pytest.mark.parametrize("messages, status", [
    ([], 422),
    ([{"role": "assistant", "content": "no user here"}], 400),
    ([{"role": "user", "content": "  "}], 400),
    ([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "http://x/y.png"}}]}], 400),
    ([{"role": "wizard", "content": "hi"}], 422),
])
def test_bad_message_lists_are_4xx(gw, messages, status):
    with httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        response = http.post("/v1/chat/completions", json={"model": "picoora", "messages": messages})
    assert response.status_code == status and response.json()["error"]["message"]


def test_text_parts_are_joined(gw):
    completion = openai_client(gw).chat.completions.create(model="picoora", messages=[
        {"role": "user", "content": [{"type": "text", "text": "part one"}, {"type": "text", "text": "part two"}]}])
    assert completion.choices[0].message.content == "answer to part one\npart two in several words"


def test_a_wrong_key_is_an_authentication_error(gw):
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="not-the-gateway-token", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        client.models.list()
