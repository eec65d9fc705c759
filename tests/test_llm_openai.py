"""The OpenAI-compatible provider through the real ``openai`` client against the fake server."""

from __future__ import annotations

import asyncio
import json

import pytest

from picoora.llm.base import (
    RAW_ARGUMENTS_KEY,
    AuthenticationError,
    CallOptions,
    ContextOverflowError,
    ModelNotFoundError,
    ProviderUnavailableError,
)
from picoora.llm.openai_compat import to_openai_messages
from picoora.messages import Message, ToolCall
from tests.fakes._http import closed_port_url
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.llm_support import Deltas, make_llm

TOOL = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
}


def openai_llm(fake: FakeOpenAI, **kwargs):
    return make_llm("openai", fake.url + "/v1", model=kwargs.pop("model", "gpt-test"), **kwargs)


def test_messages_translate_to_the_openai_shape():
    call = ToolCall(id="call_9", name="get_weather", arguments={"city": "Oslo"})
    native = to_openai_messages(
        [
            Message("system", "be brief"),
            Message("user", "weather?"),
            Message("assistant", "", tool_calls=[call]),
            Message("tool", "snow", tool_call_id="call_9", name="get_weather"),
        ]
    )
    assert native == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "call_9", "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}],
        },
        {"role": "tool", "tool_call_id": "call_9", "content": "snow"},
    ]


def test_plain_answer_forwards_temperature_max_tokens_and_the_key():
    with FakeOpenAI([Reply("Hello!", thinking="greeting")]) as fake:
        llm, _ = openai_llm(fake, api_key="fk-test", temperature=0.3, max_tokens=77)
        response = asyncio.run(llm.chat([Message("user", "hi")]))
    assert (response.content, response.reasoning, response.finish_reason) == ("Hello!", "greeting", "stop")
    assert response.usage.prompt_tokens > 0
    body = fake.requests[0]
    assert (body["model"], body["temperature"], body["max_tokens"]) == ("gpt-test", 0.3, 77)
    assert fake.request_headers[0]["authorization"] == "Bearer fk-test"


def test_a_clients_sampling_parameters_are_forwarded():
    with FakeOpenAI([Reply("ok")]) as fake:
        llm, _ = openai_llm(fake)
        asyncio.run(llm.chat([Message("user", "hi")], options=CallOptions(top_p=0.9, seed=3, frequency_penalty=1.0)))
    body = fake.requests[0]
    assert (body["top_p"], body["seed"], body["frequency_penalty"]) == (0.9, 3, 1.0)
    assert "presence_penalty" not in body  # only what the client set


def test_streaming_assembles_tool_call_deltas_and_forwards_text_and_reasoning():
    reply = Reply("Checking both.", thinking="Two cities.",
                  tool_calls=[("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Rome"})])
    with FakeOpenAI([reply]) as fake:
        llm, _ = openai_llm(fake)
        deltas = Deltas()
        response = asyncio.run(llm.chat([Message("user", "weather?")], [TOOL], on_delta=deltas))
    assert deltas.text("token") == response.content == "Checking both."
    assert deltas.text("reasoning") == response.reasoning == "Two cities."
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("call_0", "get_weather", {"city": "Oslo"}),
        ("call_1", "get_weather", {"city": "Rome"}),
    ]
    assert response.finish_reason == "tool_calls" and response.usage.completion_tokens > 0
    assert fake.requests[0]["stream"] is True and fake.requests[0]["tools"] == [TOOL]


def test_tool_results_go_back_with_their_call_ids():
    with FakeOpenAI([Reply(tool_calls=[("get_weather", {"city": "Oslo"})]), Reply("Snowing in Oslo.")]) as fake:
        llm, _ = openai_llm(fake)
        history = [Message("user", "Oslo weather?")]
        first = asyncio.run(llm.chat(history, [TOOL]))
        history += [Message("assistant", "", tool_calls=first.tool_calls),
                    Message("tool", "snow", tool_call_id="call_0")]
        second = asyncio.run(llm.chat(history, [TOOL]))
    assert second.content == "Snowing in Oslo."
    sent = fake.requests[1]["messages"]
    assert json.loads(sent[1]["tool_calls"][0]["function"]["arguments"]) == {"city": "Oslo"}
    assert sent[2] == {"role": "tool", "tool_call_id": "call_0", "content": "snow"}


@pytest.mark.parametrize("stream", [False, True])
def test_broken_tool_call_json_is_kept_raw_instead_of_crashing(stream):
    with FakeOpenAI([Reply(tool_calls=[("get_weather", '{"city": "Os')])]) as fake:
        llm, _ = openai_llm(fake)
        response = asyncio.run(llm.chat([Message("user", "x")], [TOOL], on_delta=Deltas() if stream else None))
    [call] = response.tool_calls
    assert call.name == "get_weather" and call.arguments == {RAW_ARGUMENTS_KEY: '{"city": "Os'}


def test_429_with_retry_after_then_success():
    with FakeOpenAI([Reply(status=429, error="Rate limit reached", headers={"Retry-After": "3"}),
                     Reply("ok now")]) as fake:
        llm, sleeps = openai_llm(fake)
        assert asyncio.run(llm.chat([Message("user", "hi")], on_delta=Deltas())).content == "ok now"
    assert sleeps == [3.0] and len(fake.requests) == 2


def test_500_then_success():
    with FakeOpenAI([Reply(status=500, error="internal"), Reply(status=502, error="bad gateway"),
                     Reply("fine")]) as fake:
        llm, sleeps = openai_llm(fake)
        assert asyncio.run(llm.chat([Message("user", "hi")])).content == "fine"
    assert sleeps == [0.5, 1.0]


def test_401_is_reported_with_where_the_key_goes_and_not_retried():
    with FakeOpenAI([Reply(status=401, error="Incorrect API key provided", error_code="invalid_api_key")]) as fake:
        llm, sleeps = openai_llm(fake, api_key="wrong")
        with pytest.raises(AuthenticationError, match="providers.openai.api_key") as caught:
            asyncio.run(llm.chat([Message("user", "hi")]))
    assert "Incorrect API key provided" in str(caught.value)
    assert len(fake.requests) == 1 and sleeps == []


def test_the_official_endpoint_without_a_key_fails_before_any_request():
    llm, _ = make_llm("openai", "", model="gpt-5")
    with pytest.raises(AuthenticationError, match="PICO_PROVIDERS_OPENAI_API_KEY"):
        asyncio.run(llm.chat([Message("user", "hi")]))


def test_context_length_code_becomes_context_overflow():
    reply = Reply(status=400, error="This model's maximum context length is 8192 tokens",
                  error_code="context_length_exceeded")
    with FakeOpenAI([reply]) as fake:
        llm, sleeps = openai_llm(fake)
        with pytest.raises(ContextOverflowError):
            asyncio.run(llm.chat([Message("user", "long")]))
    assert sleeps == []


def test_an_unknown_model_is_model_not_found():
    with FakeOpenAI(models=["gpt-test"]) as fake:
        llm, _ = openai_llm(fake, model="gpt-nope")
        with pytest.raises(ModelNotFoundError, match="gpt-nope"):
            asyncio.run(llm.chat([Message("user", "hi")]))


def test_refused_max_tokens_and_temperature_are_adapted_once_and_remembered():
    def strict(body: dict) -> Reply:  # like OpenAI's reasoning models
        if "max_tokens" in body:
            return Reply(status=400, error="Use max_completion_tokens", error_code="unsupported_parameter",
                         error_param="max_tokens")
        if "temperature" in body:
            return Reply(status=400, error="Only the default (1) is supported", error_code="unsupported_value",
                         error_param="temperature")
        return Reply("reasoned")

    with FakeOpenAI(responder=strict) as fake:
        llm, sleeps = openai_llm(fake, max_tokens=500)
        assert asyncio.run(llm.chat([Message("user", "hi")])).content == "reasoned"
        assert asyncio.run(llm.chat([Message("user", "again")])).content == "reasoned"
    assert len(fake.requests) == 4  # two refusals, then one request per chat
    assert fake.requests[-1]["max_completion_tokens"] == 500 and "temperature" not in fake.requests[-1]
    assert sleeps == []


def test_a_server_that_is_not_running_is_unavailable():
    llm, sleeps = make_llm("openai", closed_port_url() + "/v1", model="local")
    with pytest.raises(ProviderUnavailableError, match="providers.openai.api_base"):
        asyncio.run(llm.chat([Message("user", "hi")]))
    assert sleeps == []


def test_a_preset_that_is_not_reachable_names_its_own_section():
    llm, _ = make_llm("groq", closed_port_url() + "/openai/v1", model="llama-3.3-70b", api_key="gsk-x")
    with pytest.raises(ProviderUnavailableError, match=r"Check providers\.groq\.api_base"):
        asyncio.run(llm.chat([Message("user", "hi")]))


def test_call_options_reach_the_api_as_its_own_parameters():
    from picoora.llm.base import CallOptions

    schema = {"name": "person", "schema": {"type": "object", "properties": {"name": {"type": "string"}}}}
    options = CallOptions(temperature=0.0, max_tokens=9, stop=("END",), json_schema=schema, tool_choice="get_weather")
    with FakeOpenAI([Reply("{}"), Reply("{}")]) as fake:
        llm, _ = openai_llm(fake, api_key="fk-test")
        asyncio.run(llm.chat([Message("user", "hi")], [TOOL], options=options))
        plain_options = CallOptions(json_object=True, tool_choice="none")
        asyncio.run(llm.chat([Message("user", "hi")], [TOOL], options=plain_options))
    forced, plain = fake.requests
    assert forced["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert (forced["temperature"], forced["max_tokens"], forced["stop"]) == (0.0, 9, ["END"])
    assert forced["response_format"] == {"type": "json_schema", "json_schema": schema}
    assert plain["tool_choice"] == "none" and plain["response_format"] == {"type": "json_object"}
