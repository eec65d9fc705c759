"""The Ollama provider through the real ``ollama`` client against the fake Ollama server."""

from __future__ import annotations

import asyncio
import json

import pytest

from picoora.llm.base import (
    AuthenticationError,
    CallOptions,
    LLMError,
    ModelNotFoundError,
    ProviderUnavailableError,
)
from picoora.llm.ollama import OllamaLLM, to_ollama_messages
from picoora.messages import Message, ToolCall
from tests.fakes._http import closed_port_url
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.llm_support import Deltas, make_llm

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def test_messages_translate_to_ollamas_native_shape():
    call = ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"})
    native = to_ollama_messages(
        [
            Message("system", "be brief"),
            Message("user", "weather?"),
            Message("assistant", "", tool_calls=[call]),
            Message("tool", "sunny", tool_call_id="call_1"),  # no name: found from the call
            Message("assistant", "It is sunny."),
        ]
    )
    assert native == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": "",
         "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "content": "sunny", "tool_name": "get_weather"},
        {"role": "assistant", "content": "It is sunny."},
    ]


NESTED_TOOL = {
    "type": "function",
    "function": {
        "name": "book_trip",
        "description": "Book a trip",
        "parameters": {
            "type": "object",
            "$defs": {"Place": {"type": "object", "properties": {"city": {"type": "string"}},
                                "required": ["city"]}},
            "properties": {
                "to": {"$ref": "#/$defs/Place"},
                "nights": {"type": "integer", "minimum": 1, "default": 2},
                "budget": {"anyOf": [{"type": "number"}, {"type": "null"}], "default": None},
                "party": {"type": "object", "properties": {"adults": {"type": "integer"}}, "required": ["adults"]},
            },
            "required": ["to", "party"],
        },
    },
}


def test_tool_schemas_reach_ollama_as_they_were_written():
    with FakeOllama([Reply("ok")]) as fake:
        llm, _ = make_llm("ollama", fake.url)
        asyncio.run(llm.chat([Message("user", "book")], [NESTED_TOOL, WEATHER_TOOL]))
    assert fake.requests[0]["tools"] == [NESTED_TOOL, WEATHER_TOOL]


def test_a_named_tool_choice_is_answered_through_format_with_its_parameters():
    arguments = {"to": {"city": "Rome"}, "nights": 3, "party": {"adults": 2}}
    with FakeOllama([Reply(json.dumps(arguments))]) as fake:
        llm, _ = make_llm("ollama", fake.url)
        deltas = Deltas()
        response = asyncio.run(llm.chat([Message("system", "be brief"), Message("user", "book Rome")],
                                        [NESTED_TOOL, WEATHER_TOOL], on_delta=deltas,
                                        options=CallOptions(tool_choice="book_trip")))
    assert [(c.name, c.arguments) for c in response.tool_calls] == [("book_trip", arguments)]
    assert response.content == "" and response.finish_reason == "tool_calls"
    assert deltas.text("token") == ""  # the JSON is the call, not an answer to show
    body = fake.requests[0]
    assert body["format"] == NESTED_TOOL["function"]["parameters"] and "tools" not in body
    system = body["messages"][0]["content"]
    assert system.startswith("be brief") and "`book_trip`" in system and '"minimum": 1' in system


def test_tool_choice_required_lets_the_model_pick_among_the_tools():
    with FakeOllama([Reply(json.dumps({"name": "get_weather", "arguments": {"city": "Oslo"}}))]) as fake:
        llm, _ = make_llm("ollama", fake.url)
        response = asyncio.run(llm.chat([Message("user", "weather?")], [NESTED_TOOL, WEATHER_TOOL],
                                        options=CallOptions(tool_choice="required")))
    assert [(c.name, c.arguments) for c in response.tool_calls] == [("get_weather", {"city": "Oslo"})]
    members = fake.requests[0]["format"]["anyOf"]
    assert [m["properties"]["name"] for m in members] == [{"const": "book_trip"}, {"const": "get_weather"}]
    # the union's references point where the parameters now sit, so the schema stays whole
    assert members[0]["properties"]["arguments"]["properties"]["to"] == {
        "$ref": "#/anyOf/0/properties/arguments/$defs/Place"}
    assert fake.requests[0]["messages"][0]["role"] == "system"


def test_response_format_beside_tools_takes_a_call_or_the_answer():
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    options = CallOptions(json_schema={"name": "Answer", "schema": schema})
    with FakeOllama([Reply(json.dumps({"answer": "42"})),
                     Reply(json.dumps({"name": "get_weather", "arguments": {"city": "Oslo"}}))]) as fake:
        llm, _ = make_llm("ollama", fake.url)
        answered = asyncio.run(llm.chat([Message("user", "q")], [WEATHER_TOOL], options=options))
        called = asyncio.run(llm.chat([Message("user", "q")], [WEATHER_TOOL], options=options))
    assert json.loads(answered.content) == {"answer": "42"} and answered.tool_calls == []
    assert [c.name for c in called.tool_calls] == ["get_weather"] and called.content == ""
    assert fake.requests[0]["format"]["anyOf"][-1] == schema


def test_a_required_call_the_model_did_not_write_is_an_error():
    with FakeOllama([Reply("I would rather chat")]) as fake:
        llm, _ = make_llm("ollama", fake.url)
        with pytest.raises(LLMError, match="was to call one of the tools"):
            asyncio.run(llm.chat([Message("user", "q")], [NESTED_TOOL, WEATHER_TOOL],
                                 options=CallOptions(tool_choice="required")))


def test_plain_answer_forwards_temperature_max_tokens_and_context_window():
    with FakeOllama([Reply("Paris is the capital.")]) as fake:
        llm, _ = make_llm("ollama", fake.url, temperature=0.2, max_tokens=123, context_window=8192)
        response = asyncio.run(llm.chat([Message("user", "Capital of France?")]))
    assert response.content == "Paris is the capital."
    assert response.finish_reason == "stop" and response.tool_calls == [] and response.notice is None
    assert response.usage.completion_tokens > 0
    body = fake.requests[0]
    assert body["options"] == {"temperature": 0.2, "num_predict": 123, "num_ctx": 8192}
    # always streamed (a silent server shows at the first part), even when nobody watches the tokens
    assert body["stream"] is True and body["messages"] == [{"role": "user", "content": "Capital of France?"}]


def test_streaming_forwards_tokens_and_thinking_as_they_arrive():
    with FakeOllama([Reply("The answer is 42.", thinking="Let me count carefully.")]) as fake:
        llm, _ = make_llm("ollama", fake.url)
        deltas = Deltas()
        response = asyncio.run(llm.chat([Message("user", "Answer?")], on_delta=deltas))
    assert fake.requests[0]["stream"] is True and fake.requests[0]["think"] is True
    assert len([k for k, _ in deltas if k == "token"]) > 1
    assert deltas.text("token") == response.content == "The answer is 42."
    assert deltas.text("reasoning") == response.reasoning == "Let me count carefully."


def test_a_sync_on_delta_callback_works_too():
    seen: list[str] = []
    with FakeOllama([Reply("one two three")]) as fake:
        llm, _ = make_llm("ollama", fake.url)
        asyncio.run(llm.chat([Message("user", "count")], on_delta=lambda kind, text: seen.append(text)))
    assert "".join(seen) == "one two three"


def test_thinking_is_only_requested_from_models_that_can_think():
    with FakeOllama([Reply("hi")], models=("llama3.2",), thinking_models=()) as fake:
        llm, _ = make_llm("ollama", fake.url, model="llama3.2")
        response = asyncio.run(llm.chat([Message("user", "hi")]))
    assert response.content == "hi" and "think" not in fake.requests[0]


def test_tool_call_round_trip_uses_ollamas_native_shapes():
    replies = [Reply(tool_calls=[("get_weather", {"city": "Paris"})]), Reply("Sunny in Paris.")]
    with FakeOllama(replies) as fake:
        llm, _ = make_llm("ollama", fake.url)
        history = [Message("user", "Weather in Paris?")]
        first = asyncio.run(llm.chat(history, [WEATHER_TOOL]))
        assert first.finish_reason == "tool_calls"
        [call] = first.tool_calls
        assert call.name == "get_weather" and call.arguments == {"city": "Paris"} and call.id
        history += [
            Message("assistant", "", tool_calls=first.tool_calls),
            Message("tool", "sunny, 21C", tool_call_id=call.id, name="get_weather"),
        ]
        second = asyncio.run(llm.chat(history, [WEATHER_TOOL]))
    assert second.content == "Sunny in Paris."
    assert fake.requests[0]["tools"][0]["function"]["name"] == "get_weather"
    sent = fake.requests[1]["messages"]
    assert sent[1]["tool_calls"] == [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]
    assert sent[2] == {"role": "tool", "content": "sunny, 21C", "tool_name": "get_weather"}


def test_a_model_that_is_not_pulled_names_the_pull_command():
    with FakeOllama(models=("qwen3",)) as fake:
        llm, sleeps = make_llm("ollama", fake.url, model="llama3.2")
        with pytest.raises(ModelNotFoundError, match="ollama pull llama3.2"):
            asyncio.run(llm.chat([Message("user", "hi")]))
    assert sleeps == []


def test_ollama_not_running_says_how_to_start_it_without_retrying():
    url = closed_port_url()
    llm, sleeps = make_llm("ollama", url)
    with pytest.raises(ProviderUnavailableError) as caught:
        asyncio.run(llm.chat([Message("user", "hi")], on_delta=Deltas()))
    message = str(caught.value)
    assert url in message and "ollama serve" in message and "https://ollama.com/download" in message
    assert sleeps == []


def test_a_model_without_tools_answers_without_them_and_says_so_once():
    with FakeOllama([Reply("I cannot look that up."), Reply("Still no tools.")], models=("gemma3",),
                    tool_models=()) as fake:
        llm, _ = make_llm("ollama", fake.url, model="gemma3")
        first = asyncio.run(llm.chat([Message("user", "Weather?")], [WEATHER_TOOL]))
        second = asyncio.run(llm.chat([Message("user", "Weather now?")], [WEATHER_TOOL]))
    assert first.content == "I cannot look that up."
    assert first.notice.startswith("gemma3 cannot call tools; answering without them. Pick a tool-capable model:")
    assert second.content == "Still no tools." and second.notice is None
    assert all(not body.get("tools") for body in fake.requests)


def test_429_with_retry_after_is_waited_out_then_answered():
    replies = [Reply(status=429, error="too many requests", headers={"Retry-After": "2"}), Reply("finally")]
    with FakeOllama(replies) as fake:
        llm, sleeps = make_llm("ollama", fake.url)
        response = asyncio.run(llm.chat([Message("user", "hi")], on_delta=Deltas()))
    assert response.content == "finally" and sleeps == [2.0] and len(fake.requests) == 2


def test_500_is_retried_with_backoff():
    with FakeOllama([Reply(status=500, error="runner crashed"), Reply("recovered")]) as fake:
        llm, sleeps = make_llm("ollama", fake.url)
        response = asyncio.run(llm.chat([Message("user", "hi")]))
    assert response.content == "recovered" and sleeps == [0.5]


def test_401_is_not_retried():
    with FakeOllama([Reply(status=401, error="unauthorized"), Reply("never")]) as fake:
        llm, sleeps = make_llm("ollama", fake.url)
        with pytest.raises(AuthenticationError, match="401"):
            asyncio.run(llm.chat([Message("user", "hi")]))
    assert len(fake.requests) == 1 and sleeps == []


def test_one_provider_serves_concurrent_chats_and_successive_event_loops():
    def echo(body: dict) -> Reply:
        return Reply(f"echo: {body['messages'][-1]['content']}")

    async def many(llm: OllamaLLM) -> list[str]:
        answers = await asyncio.gather(*(llm.chat([Message("user", f"q{i}")], on_delta=Deltas()) for i in range(5)))
        await llm.close()
        return [a.content for a in answers]

    with FakeOllama(responder=echo, delay=0.01) as fake:
        llm, _ = make_llm("ollama", fake.url + "/v1")  # an OpenAI-style base is accepted too
        assert asyncio.run(many(llm)) == [f"echo: q{i}" for i in range(5)]
        assert asyncio.run(llm.chat([Message("user", "again")])).content == "echo: again"


def test_chats_that_start_together_share_one_capability_probe_and_a_failed_one_is_asked_again():
    class Counting(FakeOllama):
        def route(self, exchange):
            if exchange.path == "/api/show":
                self.shows += 1
                if self.shows == 1:  # the first probe fails (not retried: max_retries=0)
                    exchange.send_json(500, {"error": "busy"})
                    return
            super().route(exchange)

    async def burst(llm: OllamaLLM, n: int) -> list[str]:
        answers = await asyncio.gather(*(llm.chat([Message("user", f"q{i}")]) for i in range(n)),
                                       return_exceptions=True)
        return [a.content if not isinstance(a, BaseException) else "failed" for a in answers]

    async def scenario(llm: OllamaLLM) -> tuple[list[str], list[str], list[str]]:
        first = await burst(llm, 5)
        second = await burst(llm, 5)
        third = await burst(llm, 5)
        await llm.close()
        return first, second, third

    with Counting(responder=lambda body: Reply("ok"), delay=0.01) as fake:
        fake.shows = 0
        llm, _ = make_llm("ollama", fake.url, max_retries=0)
        first, second, third = asyncio.run(scenario(llm))
        assert first == ["failed"] * 5  # all five waited for the one probe, which failed
        assert second == third == ["ok"] * 5
        assert fake.shows == 2  # the failed probe, then one for the ten chats after it
        assert len(fake.requests) == 10
