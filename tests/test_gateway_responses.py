"""``POST /v1/responses``, OpenAI's Responses API, stateless: driven by the official ``openai`` SDK and
openai-agents (whose default model speaks it), every body and stream event checked against the SDK's own
types, and what the scripted model server received checked too."""

from __future__ import annotations

import json

import httpx
import openai
import pytest
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import BaseModel, TypeAdapter

from tests.fakes.gateway_kit import TOKEN, gateway_over_fake_ollama
from tests.fakes.ollama_server import Reply
from tests.openai_shapes import assert_matches_reference

STREAM_EVENT = TypeAdapter(ResponseStreamEvent)
WEATHER = {"type": "function", "name": "get_weather", "description": "The weather in a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


def _respond(body: dict) -> Reply:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return Reply(content=f"the tool said {last['content']}")
    if isinstance(body.get("format"), dict):
        return Reply(content=json.dumps({"name": "Ada", "born": 1815}))
    if body.get("tools") and "weather" in last["content"]:
        return Reply(tool_calls=[("get_weather", {"city": "Oslo"})])
    if last["content"].endswith("fail please"):
        return Reply(status=500, error="model exploded")
    return Reply(content=f"answer to {last['content']}")


@pytest.fixture
def gw(isolated_home):
    with gateway_over_fake_ollama(isolated_home, _respond) as running:
        yield running


def client(gw) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.url + "/v1", api_key=TOKEN, max_retries=0, timeout=30)


def post(gw, body: dict) -> httpx.Response:
    return httpx.post(gw.url + "/v1/responses", json=body, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)


def stream_events(gw, body: dict) -> list[dict]:
    """The raw events of a streamed response, each validated as the SDK's ``ResponseStreamEvent``."""
    response = post(gw, {**body, "stream": True})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    events = []
    for block in response.text.split("\n\n"):
        lines = block.splitlines()
        data = [line.removeprefix("data: ") for line in lines if line.startswith("data: ")]
        if data:
            event = json.loads("\n".join(data))
            assert f"event: {event['type']}" in lines  # the SSE event name is the event's type
            STREAM_EVENT.validate_python(event)
            events.append(event)
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    return events


def test_text_input_with_instructions_answers_in_the_reference_shape(gw):
    raw = post(gw, {"model": "picoora", "input": "hello", "instructions": "Be terse."})
    assert raw.status_code == 200
    assert_matches_reference(Response, raw.json())
    response = client(gw).responses.create(model="picoora", input="hello again", instructions="Be terse.")
    assert response.output_text == "answer to hello again" and response.status == "completed"
    assert response.usage.total_tokens == response.usage.input_tokens + response.usage.output_tokens > 0
    sent = gw.fake.requests[-1]["messages"]
    assert sent[0]["content"].startswith("Be terse.") and sent[-1] == {"role": "user", "content": "hello again"}


def test_items_carry_the_conversation_and_function_calls_go_back_and_forth(gw):
    sdk = client(gw)
    asked = sdk.responses.create(model="picoora", tools=[WEATHER], input=[
        {"role": "user", "content": [{"type": "input_text", "text": "weather in Oslo"}]}])
    assert_matches_reference(Response, asked.model_dump(mode="json", exclude_unset=True))
    (call,) = [item for item in asked.output if item.type == "function_call"]
    assert call.name == "get_weather" and json.loads(call.arguments) == {"city": "Oslo"}
    assert gw.fake.requests[-1]["tools"][0]["function"]["parameters"] == WEATHER["parameters"]
    answered = sdk.responses.create(model="picoora", tools=[WEATHER], input=[
        {"role": "user", "content": "weather in Oslo"}, call.model_dump(exclude_none=True),
        {"type": "function_call_output", "call_id": call.call_id, "output": "sunny, 21 C"}])
    assert answered.output_text == "the tool said sunny, 21 C"
    sent = gw.fake.requests[-1]["messages"]
    assert sent[-2]["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": {"city": "Oslo"}}
    assert sent[-1] == {"role": "tool", "content": "sunny, 21 C", "tool_name": "get_weather"}


def test_text_format_json_schema_reaches_the_model_and_parse_reads_it(gw):
    class Person(BaseModel):
        name: str
        born: int

    parsed = client(gw).responses.parse(model="picoora", input="who wrote the first program?", text_format=Person)
    assert parsed.output_parsed == Person(name="Ada", born=1815)
    assert gw.fake.requests[-1]["format"]["properties"]["born"] == {"title": "Born", "type": "integer"}


def test_a_streamed_answer_has_the_documented_events_in_order(gw):
    events = stream_events(gw, {"model": "picoora", "input": "stream please"})
    kinds = [e["type"] for e in events]
    assert kinds[:4] == ["response.created", "response.in_progress", "response.output_item.added",
                         "response.content_part.added"]
    assert kinds[-4:] == ["response.output_text.done", "response.content_part.done", "response.output_item.done",
                          "response.completed"]
    deltas = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
    assert len(deltas) > 1 and "".join(deltas) == "answer to stream please"
    done = events[-1]["response"]
    assert_matches_reference(Response, done)
    assert done["output"][0]["content"][0]["text"] == "answer to stream please" and done["usage"]["total_tokens"] > 0


def test_a_streamed_function_call_comes_as_call_events(gw):
    events = stream_events(gw, {"model": "picoora", "input": "weather in Oslo", "tools": [WEATHER]})
    kinds = [e["type"] for e in events]
    assert kinds[2:] == ["response.output_item.added", "response.function_call_arguments.delta",
                         "response.function_call_arguments.done", "response.output_item.done", "response.completed"]
    (call,) = events[-1]["response"]["output"]
    assert call["type"] == "function_call" and json.loads(call["arguments"]) == {"city": "Oslo"}
    with client(gw).responses.stream(model="picoora", input="weather in Oslo", tools=[WEATHER]) as stream:
        final = stream.get_final_response()
    assert final.output[0].name == "get_weather"


def test_a_failed_model_is_an_openai_error_and_a_failed_event_when_streamed(gw):
    with pytest.raises(openai.APIStatusError) as failed:
        client(gw).responses.create(model="picoora", input="fail please")
    assert failed.value.status_code == 502 and failed.value.body["type"] == "model_error"
    events = stream_events(gw, {"model": "picoora", "input": "again fail please"})
    assert events[-1]["type"] == "response.failed" and events[-1]["response"]["error"]["message"]


def test_input_over_the_context_window_is_context_length_exceeded(gw):
    instructions = "word " * 30_000  # over the default 16,384-token window by picoora's estimate
    with pytest.raises(openai.BadRequestError) as refused:
        client(gw).responses.create(model="picoora", instructions=instructions, input="summarize")
    assert refused.value.code == "context_length_exceeded"
    assert str(refused.value.body["message"]).startswith("The system prompt is too long")
    events = stream_events(gw, {"model": "picoora", "instructions": instructions, "input": "summarize it"})
    assert events[-1]["type"] == "response.failed"
    assert events[-1]["response"]["error"]["code"] == "invalid_prompt"  # the spec's codes for response.failed


@pytest.mark.parametrize("body, param", [
    ({"model": "picoora", "input": "hi", "previous_response_id": "resp_1"}, "previous_response_id"),
    ({"model": "picoora", "input": "hi", "tools": [{"type": "web_search"}]}, "tools.0"),
    ({"model": "picoora", "input": [{"type": "item_reference", "id": "x"}]}, "input.0"),
    ({"model": "picoora", "input": [{"type": "function_call_output", "output": "x"}]}, "input.0.call_id"),
    ({"model": "picoora", "input": [{"role": "wizard", "content": "hi"}]}, "input"),
    ({"model": "picoora", "input": "hi", "text": {"format": {"type": "json_schema", "name": "x"}}}, "text.format"),
    ({"model": "picoora", "input": ""}, "input"),
])
def test_bad_requests_are_400_naming_the_param(gw, body, param):
    response = post(gw, body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["param"] == param


def test_openai_agents_default_responses_model_runs_a_tool_loop(gw):
    agents = pytest.importorskip("agents", reason="openai-agents is in the test extras")
    agents.set_tracing_disabled(True)

    @agents.function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    model = agents.OpenAIResponsesModel("picoora", openai.AsyncOpenAI(base_url=gw.url + "/v1", api_key=TOKEN,
                                                                      max_retries=0))
    agent = agents.Agent(name="helper", instructions="Be terse.", tools=[get_weather], model=model)
    result = agents.Runner.run_sync(agent, "weather in Oslo?")
    assert result.final_output == "the tool said sunny in Oslo"
    first, second = gw.fake.requests[-2:]
    assert first["tools"][0]["function"]["name"] == "get_weather"
    assert second["messages"][0]["content"].startswith("Be terse.")
    assert second["messages"][-1] == {"role": "tool", "content": "sunny in Oslo", "tool_name": "get_weather"}


def test_a_404_under_v1_lists_the_endpoints(gw):
    response = httpx.get(gw.url + "/v1/nowhere", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 404
    message = response.json()["error"]["message"]
    assert "GET /v1/nowhere" in message
    assert "POST /v1/responses" in message and "POST /v1/chat/completions" in message
