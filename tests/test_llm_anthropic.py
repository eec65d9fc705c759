"""The Anthropic provider through the real ``anthropic`` client against the fake Messages API."""

from __future__ import annotations

import asyncio

import pytest

from picoora.llm.anthropic import to_anthropic_messages, to_anthropic_tool
from picoora.llm.base import AuthenticationError, ContextOverflowError, ModelNotFoundError
from picoora.messages import Message, ToolCall
from tests.fakes.anthropic_server import FakeAnthropic, Reply
from tests.llm_support import Deltas, make_llm

TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def anthropic_llm(fake: FakeAnthropic, **kwargs):
    return make_llm("anthropic", fake.url, model="claude-test", api_key=kwargs.pop("api_key", "fake-anthropic-key"),
                    **kwargs)


def test_system_goes_apart_and_consecutive_tool_results_share_one_user_message():
    calls = [ToolCall("toolu_1", "get_weather", {"city": "Oslo"}), ToolCall("toolu_2", "get_weather", {"city": "Rome"})]
    system, native = to_anthropic_messages(
        [
            Message("system", "be brief"),
            Message("system", "use metric"),
            Message("user", "weather in both?"),
            Message("assistant", "Checking.", tool_calls=calls),
            Message("tool", "snow", tool_call_id="toolu_1"),
            Message("tool", "sun", tool_call_id="toolu_2"),
            Message("assistant", "Snow and sun."),
        ]
    )
    assert system == "be brief\n\nuse metric"
    assert native == [
        {"role": "user", "content": [{"type": "text", "text": "weather in both?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}},
                {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Rome"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "snow"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "sun"},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Snow and sun."}]},
    ]


def test_tools_become_input_schemas():
    assert to_anthropic_tool(TOOL) == {
        "name": "get_weather",
        "description": "Weather for a city",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
    }


def test_plain_answer_sends_system_and_max_tokens_but_no_sampling_parameters():
    with FakeAnthropic([Reply("Hej!", thinking="Swedish greeting.")]) as fake:
        llm, _ = anthropic_llm(fake, max_tokens=321, temperature=0.2)
        response = asyncio.run(llm.chat([Message("system", "be brief"), Message("user", "hi")]))
    assert (response.content, response.reasoning, response.finish_reason) == ("Hej!", "Swedish greeting.", "stop")
    body = fake.requests[0]
    assert body["system"] == "be brief" and body["max_tokens"] == 321 and "temperature" not in body
    assert fake.request_headers[0]["authorization"] == "Bearer fake-anthropic-key"


def test_streaming_forwards_text_and_thinking_and_assembles_tool_input():
    reply = Reply("Let me check.", thinking="Need the weather tool.", tool_calls=[("get_weather", {"city": "Oslo"})])
    with FakeAnthropic([reply]) as fake:
        llm, _ = anthropic_llm(fake)
        deltas = Deltas()
        response = asyncio.run(llm.chat([Message("user", "Oslo?")], [TOOL], on_delta=deltas))
    assert deltas.text("token") == response.content == "Let me check."
    assert deltas.text("reasoning") == response.reasoning == "Need the weather tool."
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("toolu_fake_0", "get_weather", {"city": "Oslo"})]
    assert response.finish_reason == "tool_calls"
    assert fake.requests[0]["stream"] is True and fake.requests[0]["tools"][0]["name"] == "get_weather"


def test_tool_round_trip_sends_tool_use_and_tool_result_blocks():
    with FakeAnthropic([Reply(tool_calls=[("get_weather", {"city": "Oslo"})]), Reply("Snow.")]) as fake:
        llm, _ = anthropic_llm(fake)
        history = [Message("user", "Oslo?")]
        first = asyncio.run(llm.chat(history, [TOOL]))
        history += [Message("assistant", "", tool_calls=first.tool_calls),
                    Message("tool", "snow", tool_call_id=first.tool_calls[0].id)]
        assert asyncio.run(llm.chat(history, [TOOL])).content == "Snow."
    sent = fake.requests[1]["messages"]
    assert sent[1] == {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_fake_0", "name": "get_weather", "input": {"city": "Oslo"}}]}
    assert sent[2] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_fake_0", "content": "snow"}]}


def test_overloaded_529_and_429_retry_after_are_retried():
    replies = [Reply(status=529, error="Overloaded"),
               Reply(status=429, error="slow down", headers={"retry-after": "4"}), Reply("ok")]
    with FakeAnthropic(replies) as fake:
        llm, sleeps = anthropic_llm(fake)
        assert asyncio.run(llm.chat([Message("user", "hi")], on_delta=Deltas())).content == "ok"
    assert sleeps == [0.5, 4.0]


def test_401_is_not_retried_and_a_missing_key_fails_before_any_request():
    with FakeAnthropic([Reply(status=401, error="invalid x-api-key")]) as fake:
        llm, sleeps = anthropic_llm(fake)
        with pytest.raises(AuthenticationError, match="providers.anthropic.api_key"):
            asyncio.run(llm.chat([Message("user", "hi")]))
        keyless, _ = anthropic_llm(fake, api_key="")
        with pytest.raises(AuthenticationError, match="PICO_PROVIDERS_ANTHROPIC_API_KEY"):
            asyncio.run(keyless.chat([Message("user", "hi")]))
    assert len(fake.requests) == 1 and sleeps == []


def test_request_too_large_is_context_overflow_and_unknown_model_is_not_found():
    with FakeAnthropic([Reply(status=413, error="Request exceeds the maximum size"),
                        Reply(status=404, error="model: claude-test")]) as fake:
        llm, _ = anthropic_llm(fake)
        with pytest.raises(ContextOverflowError):
            asyncio.run(llm.chat([Message("user", "huge")]))
        with pytest.raises(ModelNotFoundError, match="claude-test"):
            asyncio.run(llm.chat([Message("user", "hi")]))


def test_call_options_map_to_the_messages_api_and_what_it_lacks_is_refused():
    from picoora.llm.anthropic import AnthropicLLM
    from picoora.llm.base import CallOptions

    with FakeAnthropic([Reply("ok"), Reply("ok")]) as fake:
        llm, _ = anthropic_llm(fake)
        asyncio.run(llm.chat([Message("user", "hi")], [TOOL],
                             options=CallOptions(max_tokens=11, stop=("END",), tool_choice="required")))
        asyncio.run(llm.chat([Message("user", "hi")], [TOOL], options=CallOptions(tool_choice="get_weather")))
    required, named = fake.requests
    assert (required["max_tokens"], required["stop_sequences"]) == (11, ["END"])
    assert required["tool_choice"] == {"type": "any"}
    assert named["tool_choice"] == {"type": "tool", "name": "get_weather"}
    assert AnthropicLLM.unsupported(CallOptions(json_object=True))[0] == "response_format"
    assert AnthropicLLM.unsupported(CallOptions(temperature=0.2))[0] == "temperature"
    assert AnthropicLLM.unsupported(CallOptions(tool_choice="required")) is None
