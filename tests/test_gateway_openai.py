"""The OpenAI-compatible endpoint, driven by the official ``openai`` client (sync, async, streaming), with
what the scripted model server received checked: the client's conversation, and nothing else's."""

from __future__ import annotations

import asyncio
import base64
import json
import time

import httpx
import openai
import pytest

from tests.fakes.gateway_kit import TOKEN, RunningGateway, gateway_config, gateway_over_fake_ollama
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.openai_shapes import assert_matches_reference


def _respond(body: dict) -> Reply:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return Reply(content=f"the tool said {last['content']}")
    text = last["content"]
    if text.startswith("remember "):
        return Reply(tool_calls=[("remember", {"text": text.removeprefix("remember ")})])
    if text.startswith("weather in "):
        return Reply(tool_calls=[("get_weather", {"city": text.removeprefix("weather in ")})])
    if text.endswith("fail please"):
        return Reply(status=500, error="model exploded")
    return Reply(content=f"answer to {text.splitlines()[-1]} in several words", thinking="hmm")


@pytest.fixture
def gw(isolated_home):
    with gateway_over_fake_ollama(isolated_home, _respond) as running:
        yield running


def openai_client(gw, **kwargs) -> openai.OpenAI:
    kwargs.setdefault("max_retries", 0)
    return openai.OpenAI(base_url=gw.url + "/v1", api_key=TOKEN, timeout=30, **kwargs)


def http(gw) -> httpx.Client:
    return httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)


def sent_text(request: dict) -> str:
    return json.dumps(request["messages"])


def transcripts(gw) -> dict[str, list[str]]:
    """Every OpenAI conversation's recorded messages (role: content), read through the store."""
    store = gw.gateway.assistant.astore

    async def read() -> dict[str, list[str]]:
        keys = [key for key in await store.transcripts.keys() if key.startswith("openai:")]
        return {key: [f"{e.message.role}: {e.message.content}" for e in await store.transcripts.read(key)]
                for key in keys}

    return gw.call(read())


WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


# -- the request's messages are the conversation --------------------------------------------------------

def test_the_model_sees_the_clients_system_message_and_whole_history(gw):
    completion = openai_client(gw).chat.completions.create(model="picoora", messages=[
        {"role": "system", "content": "You are a pirate."},
        {"role": "user", "content": "an earlier question"},
        {"role": "assistant", "content": "an earlier answer"},
        {"role": "user", "content": "what now?"},
    ])
    assert completion.choices[0].message.content == "answer to what now? in several words"
    sent = gw.fake.requests[-1]["messages"]
    assert [(m["role"], m["content"]) for m in sent[1:]] == [
        ("user", "an earlier question"), ("assistant", "an earlier answer"), ("user", "what now?")]
    system = sent[0]["content"]
    assert system.startswith("You are a pirate.")  # the client's persona first, as written
    assert "You are picoora" not in system  # picoora's own identity does not override it
    assert "Current time" in system


def offered(request: dict) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools") or []}


MEMORY_TOOLS = {"remember", "recall", "forget"}
UNASKED_MEMORY_TOOLS = {"remember", "recall"}  # never forget: it deletes the owner's memories


def test_a_client_without_tools_gets_remember_and_recall_not_picooras_actions(gw):
    client = openai_client(gw)
    client.chat.completions.create(model="picoora", messages=[
        {"role": "system", "content": "You are a shell command generator."}, {"role": "user", "content": "ls"}])
    request = gw.fake.requests[-1]
    assert offered(request) == UNASKED_MEMORY_TOOLS  # no forget, exec, write_file, spawn...
    system = request["messages"][0]["content"]
    assert system.startswith("You are a shell command generator.")
    assert "## Memory" in system and "Use tools to act" not in system and "## Rules" not in system
    client.chat.completions.create(model="picoora", messages=[{"role": "user", "content": "hi"}])
    request = gw.fake.requests[-1]
    assert "You are picoora" in request["messages"][0]["content"] and offered(request) == UNASKED_MEMORY_TOOLS
    assert "Use tools to act" not in request["messages"][0]["content"]


@pytest.mark.parametrize("model, headers", [("picoora-agent", {}), ("picoora", {"X-Picoora-Agent": "1"})])
def test_a_client_that_opts_in_gets_picooras_agent(gw, model, headers):
    openai_client(gw, default_headers=headers).chat.completions.create(model=model, messages=[
        {"role": "system", "content": "You are terse."}, {"role": "user", "content": "tidy my workspace"}])
    request = gw.fake.requests[-1]
    assert {"exec", "write_file", *MEMORY_TOOLS} <= offered(request)
    assert "Use tools to act" in request["messages"][0]["content"]


def test_a_json_answer_without_client_tools_offers_no_tools(gw):
    openai_client(gw).chat.completions.create(model="picoora", messages=[{"role": "user", "content": "hi"}],
                                              response_format={"type": "json_object"})
    assert offered(gw.fake.requests[-1]) == set() and gw.fake.requests[-1]["format"] == "json"


def test_two_conversations_without_ids_never_see_each_other(gw):
    client = openai_client(gw)
    client.chat.completions.create(model="picoora", messages=[{"role": "user", "content": "my secret is plum"}])
    client.chat.completions.create(model="picoora", messages=[{"role": "user", "content": "a brand-new chat"}])
    assert "plum" not in sent_text(gw.fake.requests[-1])
    recorded = transcripts(gw)
    assert len(recorded) == 2
    assert sum("plum" in json.dumps(lines) for lines in recorded.values()) == 1


def test_a_conversation_continues_in_one_transcript_without_duplicates(gw):
    client = openai_client(gw)
    first = [{"role": "user", "content": "hello there"}]
    reply = client.chat.completions.create(model="picoora", messages=first).choices[0].message.content
    client.chat.completions.create(model="picoora", messages=[
        *first, {"role": "assistant", "content": reply}, {"role": "user", "content": "and then?"}])
    (lines,) = transcripts(gw).values()
    assert lines == ["user: hello there", f"assistant: {reply}", "user: and then?",
                     "assistant: answer to and then? in several words"]


def test_the_session_header_or_prompt_cache_key_names_the_transcript(gw):
    openai_client(gw, default_headers={"X-Session-Id": "my editor/1"}).chat.completions.create(
        model="picoora", messages=[{"role": "user", "content": "hi"}])
    openai_client(gw).chat.completions.create(model="picoora", messages=[{"role": "user", "content": "yo"}],
                                              extra_body={"prompt_cache_key": "thread-7"})
    assert {"openai:my_editor_1", "openai:thread-7"} <= set(transcripts(gw))


def test_openai_conversations_are_listed_among_the_sessions(gw):
    openai_client(gw, default_headers={"X-Session-Id": "editor"}).chat.completions.create(
        model="picoora", messages=[{"role": "user", "content": "hi"}])
    with http(gw) as client:
        listed = {s["key"]: s for s in client.get("/v1/sessions").json()}
        assert listed["openai:editor"]["messages"] == 2 and listed["openai:editor"]["updated_at"]
        history = client.get("/v1/sessions/openai:editor").json()["entries"]
    assert [e["message"]["role"] for e in history] == ["user", "assistant"]


def test_the_user_field_prefixes_the_conversation_key(gw):
    openai_client(gw).chat.completions.create(model="picoora", user="carol",
                                              messages=[{"role": "user", "content": "hi"}])
    (key,) = transcripts(gw)
    assert key.startswith("openai:carol.c")


def test_memories_are_recalled_for_the_last_user_message(isolated_home):
    with FakeOllama(responder=_respond) as fake, \
            RunningGateway(gateway_config(isolated_home, fake.url, embedder="minilm")) as gw:
        with http(gw) as client:
            client.post("/v1/memory", json={"content": "The gate code is 4421"}).raise_for_status()
        openai_client(gw).chat.completions.create(model="picoora", messages=[
            {"role": "system", "content": "You are terse."}, {"role": "user", "content": "what is the gate code?"}])
        system = fake.requests[-1]["messages"][0]["content"]
    assert system.startswith("You are terse.") and "4421" in system


def test_picooras_tools_run_on_the_server_when_the_client_brings_none(gw):
    answer = openai_client(gw).chat.completions.create(
        model="picoora", messages=[{"role": "user", "content": "remember the gate code is 4421"}])
    assert answer.choices[0].finish_reason == "stop" and answer.choices[0].message.tool_calls is None
    with http(gw) as client:
        assert "4421" in client.get("/v1/memory", params={"q": "gate code"}).text


# -- the client's tools and formats -------------------------------------------------------------------

def test_the_clients_tools_replace_picooras_and_calls_come_back(gw):
    client = openai_client(gw)
    messages = [{"role": "user", "content": "weather in Oslo"}]
    completion = client.chat.completions.create(model="picoora", messages=messages, tools=[WEATHER_TOOL])
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {"city": "Oslo"}
    assert [t["function"]["name"] for t in gw.fake.requests[-1]["tools"]] == ["get_weather"]
    follow_up = client.chat.completions.create(model="picoora", tools=[WEATHER_TOOL], messages=[
        *messages, choice.message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "sunny, 21 C"}])
    assert follow_up.choices[0].message.content == "the tool said sunny, 21 C"
    sent = gw.fake.requests[-1]["messages"]
    assert sent[-2]["tool_calls"][0]["function"]["name"] == "get_weather" and sent[-1]["role"] == "tool"


def test_streamed_tool_calls_come_back_as_deltas(gw):
    stream = openai_client(gw).chat.completions.create(
        model="picoora", stream=True, tools=[WEATHER_TOOL], messages=[{"role": "user", "content": "weather in Rome"}])
    chunks = list(stream)
    calls = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []]
    assert [(c.index, c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        (0, "get_weather", {"city": "Rome"})]
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_tool_choice_none_offers_no_tools(gw):
    client = openai_client(gw)
    client.chat.completions.create(model="picoora", tools=[WEATHER_TOOL], tool_choice="none",
                                   messages=[{"role": "user", "content": "hi"}])
    assert not gw.fake.requests[-1].get("tools")


def test_response_format_and_sampling_parameters_reach_the_model(gw):
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    client = openai_client(gw)
    client.chat.completions.create(
        model="picoora", messages=[{"role": "user", "content": "hi"}], temperature=0.1, max_tokens=50,
        stop=["END"], response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": schema}})
    request = gw.fake.requests[-1]
    assert request["format"] == schema
    assert request["options"]["temperature"] == 0.1 and request["options"]["num_predict"] == 50
    assert request["options"]["stop"] == ["END"]
    client.chat.completions.create(model="picoora", messages=[{"role": "user", "content": "hi"}],
                                   response_format={"type": "json_object"}, max_completion_tokens=20)
    assert gw.fake.requests[-1]["format"] == "json" and gw.fake.requests[-1]["options"]["num_predict"] == 20


PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


def picture_message(text: str) -> dict:
    url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    return {"role": "user", "content": [{"type": "text", "text": text},
                                        {"type": "image_url", "image_url": {"url": url}}]}


def test_an_image_url_reaches_a_vision_model(isolated_home):
    with FakeOllama(responder=_respond, vision_models=("qwen3:latest",)) as fake, \
            RunningGateway(gateway_config(isolated_home, fake.url)) as gw:
        answer = openai_client(gw).chat.completions.create(model="picoora", messages=[picture_message("what is it?")])
        sent = fake.requests[-1]["messages"][-1]
    assert answer.choices[0].message.content.startswith("answer to what is it?")
    assert sent["content"] == "what is it?" and sent["images"] == [base64.b64encode(PNG).decode()]


def test_an_image_for_a_model_that_cannot_see_is_a_clear_400(gw):
    with pytest.raises(openai.BadRequestError) as refused:
        openai_client(gw).chat.completions.create(model="picoora", messages=[picture_message("what is it?")])
    assert "cannot look at pictures" in refused.value.message and not gw.fake.requests


def test_top_p_seed_and_penalties_reach_ollama(gw):
    openai_client(gw).chat.completions.create(model="picoora", messages=[{"role": "user", "content": "hi"}],
                                              top_p=0.5, seed=7, presence_penalty=0.25, frequency_penalty=-0.5)
    options = gw.fake.requests[-1]["options"]
    assert (options["top_p"], options["seed"], options["presence_penalty"], options["frequency_penalty"]) == (
        0.5, 7, 0.25, -0.5)


def test_n_above_one_is_a_clear_400(gw):
    with pytest.raises(openai.BadRequestError) as refused:
        openai_client(gw).chat.completions.create(model="picoora", n=2, messages=[{"role": "user", "content": "hi"}])
    assert refused.value.param == "n"


def test_a_named_model_answers_and_the_response_says_which(isolated_home):
    with FakeOllama(responder=_respond, models=("qwen3:latest", "llama3.2:latest")) as fake, \
            RunningGateway(gateway_config(isolated_home, fake.url)) as gw:
        client = openai_client(gw)
        named = client.chat.completions.create(model="llama3.2", messages=[{"role": "user", "content": "hi"}])
        assert fake.requests[-1]["model"] == "llama3.2" and named.model == "ollama/llama3.2"
        default = client.chat.completions.create(model="picoora", messages=[{"role": "user", "content": "hi"}])
        assert default.model == "ollama/qwen3:latest"
        with pytest.raises(openai.NotFoundError) as missing:
            client.chat.completions.create(model="gpt-9", messages=[{"role": "user", "content": "hi"}])
        assert missing.value.code == "model_not_found" and missing.value.param == "model"


# -- retries never duplicate ----------------------------------------------------------------------------

def test_a_failed_model_call_is_one_turn_despite_the_sdks_default_retries(gw):
    client = openai_client(gw, max_retries=2)  # the SDK's default
    with pytest.raises(openai.APIStatusError) as failed:
        client.chat.completions.create(model="picoora", messages=[{"role": "user", "content": "fail please"}])
    assert failed.value.status_code == 502 and failed.value.response.headers["x-should-retry"] == "false"
    assert len(gw.fake.requests) == 1  # no retry reached the model
    (lines,) = transcripts(gw).values()
    assert [line for line in lines if line.startswith("user:")] == ["user: fail please"]


def test_a_failed_streamed_turn_is_an_api_error_not_an_answer(gw):
    with pytest.raises(openai.APIError, match="model exploded"):
        list(openai_client(gw).chat.completions.create(model="picoora", stream=True,
                                                       messages=[{"role": "user", "content": "fail please"}]))


def test_a_retried_body_gets_the_first_turn_not_a_new_one(gw):
    body = {"model": "picoora", "messages": [{"role": "user", "content": "fail please"}]}
    with http(gw) as client:
        statuses = [client.post("/v1/chat/completions", json=body).status_code for _ in range(3)]
    assert statuses == [502, 502, 502] and len(gw.fake.requests) == 1


@pytest.mark.parametrize("headers, turns", [
    ([{}, {}, {}], 1),  # an SDK's retries of a running request share its turn
    ([{"X-Session-Id": "s0"}, {"X-Session-Id": "s1"}], 2),  # parallel sampling, two clients: a turn each
])
def test_the_same_body_sent_while_it_runs_shares_its_turn_only_in_one_conversation(isolated_home, headers, turns):
    with FakeOllama(responder=_respond, delay=0.5) as fake, \
            RunningGateway(gateway_config(isolated_home, fake.url)) as gw:
        async def send() -> list[dict]:
            async with httpx.AsyncClient(base_url=gw.url, headers={"Authorization": f"Bearer {TOKEN}"},
                                         timeout=30) as client:
                body = {"model": "picoora", "messages": [{"role": "user", "content": "slow one"}]}
                first = asyncio.ensure_future(client.post("/v1/chat/completions", json=body, headers=headers[0]))
                await asyncio.sleep(0.2)  # the first is running when the rest come
                rest = [client.post("/v1/chat/completions", json=body, headers=h) for h in headers[1:]]
                return [r.json() for r in await asyncio.gather(first, *rest)]

        answers = asyncio.run(send())
        assert len({a["id"] for a in answers}) == turns and len(fake.requests) == turns


def test_an_answered_body_sent_again_is_a_new_answer_but_an_idempotency_key_replays(gw):
    client = openai_client(gw)
    messages = [{"role": "user", "content": "regenerate me"}]
    ids = {client.chat.completions.create(model="picoora", messages=messages).id for _ in range(2)}
    assert len(ids) == 2 and len(gw.fake.requests) == 2  # a chat UI's "regenerate"
    keyed = [client.chat.completions.create(model="picoora", messages=messages,
                                            extra_headers={"Idempotency-Key": "k-1"}).id for _ in range(2)]
    assert keyed[0] == keyed[1] and len(gw.fake.requests) == 3


def test_an_idempotency_key_sent_with_another_body_is_refused(gw):
    client = openai_client(gw, default_headers={"Idempotency-Key": "k-2"})
    client.chat.completions.create(model="picoora", messages=[{"role": "user", "content": "first"}])
    with pytest.raises(openai.UnprocessableEntityError) as refused:
        client.chat.completions.create(model="picoora", messages=[{"role": "user", "content": "second"}])
    assert refused.value.code == "idempotency_key_reused" and len(gw.fake.requests) == 1


def test_a_message_over_max_message_chars_is_413_saying_how_to_raise_it(isolated_home):
    with FakeOllama(responder=_respond) as fake, \
            RunningGateway(gateway_config(isolated_home, fake.url, max_message_chars=1000)) as gw:
        with pytest.raises(openai.APIStatusError) as refused:  # cat big.py | sgpt "summarize this"
            openai_client(gw).chat.completions.create(model="picoora", messages=[
                {"role": "user", "content": "summarize this\n" + "x = 1\n" * 300}])
        assert refused.value.status_code == 413 and refused.value.code == "message_too_large"
        assert "1,000 characters" in refused.value.message
        assert "PICO_GATEWAY_MAX_MESSAGE_CHARS" in refused.value.message and fake.requests == []


# -- a request over the context window -------------------------------------------------------------------

BIG = "word " * 30_000  # about 37,500 tokens by picoora's estimate: over the default 16,384 window


@pytest.mark.parametrize("messages, larger", [
    ([{"role": "system", "content": BIG}, {"role": "user", "content": "summarize"}], "The system prompt is"),
    ([{"role": "user", "content": BIG[:30_000]}, {"role": "assistant", "content": "ok"},
      {"role": "user", "content": BIG[:30_000]}, {"role": "assistant", "content": "ok"},
      {"role": "user", "content": "summarize"}], "The conversation does not fit"),
])
def test_a_request_over_the_context_window_is_openais_context_length_exceeded(gw, messages, larger):
    client = openai_client(gw)
    with pytest.raises(openai.BadRequestError) as refused:  # litellm: ContextWindowExceededError; aider trims
        client.chat.completions.create(model="picoora", messages=messages)
    assert refused.value.code == "context_length_exceeded" and refused.value.param == "messages"
    assert str(refused.value.body["message"]).startswith(larger)
    with pytest.raises(openai.APIError) as streamed:
        list(client.chat.completions.create(model="picoora", messages=messages, stream=True,
                                            extra_headers={"X-Session-Id": "streamed"}))
    assert streamed.value.code == "context_length_exceeded"
    assert gw.fake.requests == []


def test_a_client_that_leaves_its_stream_stops_the_turn(isolated_home):
    from picoora.agent.record import CANCELLED_MARK

    slow = Reply(pieces=[f"word{i} " for i in range(60)], piece_delay=0.1)  # 6 s of typing
    with FakeOllama(responder=lambda body: slow) as fake, \
            RunningGateway(gateway_config(isolated_home, fake.url)) as gw:
        body = {"model": "picoora", "stream": True, "messages": [{"role": "user", "content": "a long story"}]}
        with http(gw) as client, client.stream("POST", "/v1/chat/completions", json=body,
                                               headers={"X-Session-Id": "left"}) as response:
            lines = response.iter_lines()
            assert "word0" in next(line for line in lines if "word0" in line)  # the model is typing
        # Ctrl+C in aider: the connection is closed; the turn stops as with the web chat's Stop.
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and transcripts(gw).get("openai:left", [""])[-1] != \
                f"assistant: {CANCELLED_MARK}":
            time.sleep(0.1)
        lines = transcripts(gw)["openai:left"]
        assert lines[0] == "user: a long story" and lines[-1] == f"assistant: {CANCELLED_MARK}"
        assert "word59" not in json.dumps(lines)  # the model's call was cut, not waited out
        openai_client(gw).chat.completions.create(model="picoora", messages=body["messages"],
                                                  extra_headers={"X-Session-Id": "left"})  # sent again
        assert len(fake.requests) == 2  # a new turn, not the stopped one replayed


# -- spec shapes --------------------------------------------------------------------------------------

def test_a_completion_has_usage_and_the_reference_shape(gw):
    with http(gw) as client:
        body = client.post("/v1/chat/completions", json={
            "model": "picoora", "messages": [{"role": "user", "content": "hi"}]}).json()
    from openai.types.chat import ChatCompletion

    assert_matches_reference(ChatCompletion, body)
    usage = body["usage"]
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    choice = body["choices"][0]
    assert choice["logprobs"] is None and choice["message"]["refusal"] is None
    assert abs(body["created"] - time.time()) < 120


def test_streaming_deltas_add_up_and_include_usage_adds_a_usage_chunk(gw):
    from openai.types.chat import ChatCompletionChunk

    stream = openai_client(gw).chat.completions.create(
        model="picoora", stream=True, stream_options={"include_usage": True},
        messages=[{"role": "user", "content": "stream it"}])
    chunks = list(stream)
    for chunk in chunks:
        assert_matches_reference(ChatCompletionChunk, chunk.model_dump())
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert content == "answer to stream it in several words"
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens > 0
    assert len({c.id for c in chunks}) == 1


def test_with_include_usage_every_content_chunk_says_usage_null(gw):
    with http(gw) as client:
        text = client.post("/v1/chat/completions", json={
            "model": "picoora", "stream": True, "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": "stream it"}]}).text
    chunks = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: {")]
    assert all("usage" in c and c["usage"] is None for c in chunks if c["choices"])
    assert chunks[-1]["usage"]["total_tokens"] > 0


def test_models_list_and_retrieve(gw):
    from openai.types import Model

    client = openai_client(gw)
    listed = client.models.list().data
    assert [m.id for m in listed] == ["picoora", "picoora-agent", "qwen3:latest"]
    assert all(abs(m.created - time.time()) < 3600 for m in listed)  # a real time, not 0
    retrieved = client.models.retrieve("picoora")
    assert_matches_reference(Model, retrieved.model_dump())
    assert client.models.retrieve("qwen3:latest").id == "qwen3:latest"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("no-such-model")


@pytest.mark.parametrize("body, param", [
    ({"model": "picoora", "messages": []}, "messages"),
    ({"model": "picoora"}, "messages"),
    ({"model": "picoora", "messages": [{"role": "wizard", "content": "hi"}]}, "messages.0.role"),
    ({"model": "picoora", "messages": [{"role": "user", "content": "hi"}], "temperature": 9}, "temperature"),
    ({"model": "picoora", "messages": [{"role": "assistant", "content": "no user here"}]}, "messages"),
    ({"model": "picoora", "messages": [{"role": "user", "content": "  "}]}, "messages"),
    ({"model": "picoora", "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "http://x/y.png"}}]}]}, "messages.0.content.0.image_url"),
    ({"model": "picoora", "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,bm90IGEgcGljdHVyZQ=="}}]}]},
     "messages.0.content.0.image_url"),
    ({"model": "picoora", "messages": [{"role": "user", "content": [
        {"type": "input_audio", "input_audio": {"data": "", "format": "wav"}}]}]}, "messages.0.content"),
    ({"model": "picoora", "messages": [{"role": "user", "content": "hi"}], "tool_choice": "required"}, "tool_choice"),
    ({"model": "picoora", "messages": [{"role": "user", "content": "hi"}], "tools": [WEATHER_TOOL] * 129}, "tools"),
    ({"model": "picoora", "messages": [{"role": "user", "content": "hi"}], "tools": [WEATHER_TOOL],
      "tool_choice": {"type": "function", "function": {"name": "exec"}}}, "tool_choice"),
    ({"model": "picoora", "messages": [{"role": "user", "content": "hi"}], "stop": ["a", "b", "c", "d", "e"]}, "stop"),
    ({"model": "picoora", "messages": [{"role": "user", "content": "hi"}],
      "response_format": {"type": "json_schema", "json_schema": {"name": "x"}}}, "response_format"),
])
def test_bad_requests_are_400_with_the_param_named(gw, body, param):
    with http(gw) as client:
        response = client.post("/v1/chat/completions", json=body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"]
    assert error["param"] is not None and error["param"].startswith(param)


def test_text_parts_are_joined(gw):
    completion = openai_client(gw).chat.completions.create(model="picoora", messages=[
        {"role": "user", "content": [{"type": "text", "text": "part one"}, {"type": "text", "text": "part two"}]}])
    assert completion.choices[0].message.content == "answer to part two in several words"
    assert gw.fake.requests[-1]["messages"][-1]["content"] == "part one\npart two"


def test_a_wrong_key_is_an_authentication_error(gw):
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="not-the-gateway-token", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        client.models.list()


def test_the_openapi_document_lists_the_statuses_the_endpoint_returns(gw):
    with http(gw) as client:
        document = client.get("/openapi.json").json()
    completions = document["paths"]["/v1/chat/completions"]["post"]["responses"]
    assert {"200", "400", "401", "413", "422", "502", "503"} <= set(completions)
    # the only 422 is the turn routes' own (an Idempotency-Key reused with another body), never a validation one
    assert completions["422"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorResponse")
    assert "HTTPValidationError" not in json.dumps(document)
    with_422 = {path for path, operations in document["paths"].items()
                if any("422" in operation.get("responses", {}) for operation in operations.values())}
    assert with_422 == {"/v1/chat/completions", "/v1/responses"}
    assert completions["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/ChatCompletion")


def test_the_async_client_streams_and_answers(gw):
    async def use() -> tuple[str, str]:
        async with openai.AsyncOpenAI(base_url=gw.url + "/v1", api_key=TOKEN, max_retries=0) as client:
            whole = await client.chat.completions.create(model="picoora",
                                                         messages=[{"role": "user", "content": "async one"}])
            stream = await client.chat.completions.create(model="picoora", stream=True,
                                                          messages=[{"role": "user", "content": "async two"}])
            streamed = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
            return whole.choices[0].message.content, streamed

    assert asyncio.run(use()) == ("answer to async one in several words", "answer to async two in several words")


# -- embeddings ---------------------------------------------------------------------------------------

def test_embeddings_through_the_sdk_float_and_base64(isolated_home):
    with FakeOllama(responder=_respond) as fake, \
            RunningGateway(gateway_config(isolated_home, fake.url, embedder="minilm")) as gw:
        client = openai_client(gw)
        default = client.embeddings.create(model="picoora", input=["the gate code", "a cat"])  # base64 on the wire
        floats = client.embeddings.create(model="picoora", input="the gate code", encoding_format="float")
    assert len(default.data) == 2 and len(default.data[0].embedding) == 384
    assert default.data[0].embedding == pytest.approx(floats.data[0].embedding, abs=1e-6)
    assert default.usage.prompt_tokens > 0 and default.model


def test_embeddings_without_an_embedder_are_model_not_found(gw):
    with http(gw) as client:
        response = client.post("/v1/embeddings", json={"input": "x"})
    error = response.json()["error"]
    assert response.status_code == 404 and error["code"] == "model_not_found" and "memory.embedder" in error["message"]
