"""Structured output and forced tool calls through the libraries' default modes, against the gateway with a
scripted Ollama behind it: instructor (TOOLS: a named ``tool_choice``) and pydantic-ai (``output_type``: an
output tool under ``tool_choice: required``). Ollama cannot be made to call a tool, so the gateway asks for the
call as JSON held to the tool's schema (``format``); each test checks what the fake model received against
what the client sent."""

from __future__ import annotations

import json

import httpx
import openai
import pytest
from pydantic import BaseModel, Field

from tests.fakes.gateway_kit import TOKEN, gateway_over_fake_ollama
from tests.fakes.ollama_server import Reply

instructor = pytest.importorskip("instructor", reason="instructor is in the test extras")
pydantic_ai = pytest.importorskip("pydantic_ai", reason="pydantic-ai-slim[openai] is in the test extras")


class Place(BaseModel):
    city: str
    country: str = "Italy"


class Trip(BaseModel):
    to: Place  # a nested model: pydantic writes it as a $ref into $defs
    nights: int = Field(2, ge=1)


TRIP = {"to": {"city": "Rome", "country": "Italy"}, "nights": 3}


def _respond(body: dict) -> Reply:
    """A model held to ``format``: the call's arguments, or a {"name", "arguments"} call of the first tool."""
    schema = body.get("format")
    if isinstance(schema, dict) and "anyOf" in schema:
        return Reply(json.dumps({"name": schema["anyOf"][0]["properties"]["name"]["const"], "arguments": TRIP}))
    if isinstance(schema, dict):
        return Reply(json.dumps(TRIP))
    return Reply(f"a plain answer to {body['messages'][-1]['content']}")


class Recorded(list):
    """The JSON bodies a client sent, from an httpx request hook."""

    def __call__(self, request: httpx.Request) -> None:
        if request.content:
            self.append(json.loads(request.content))


@pytest.fixture
def gw(isolated_home):
    with gateway_over_fake_ollama(isolated_home, _respond) as running:
        yield running


def recording_client(gw, cls=openai.OpenAI, client_cls=httpx.Client):
    sent = Recorded()
    hook = sent if client_cls is httpx.Client else _async(sent)
    http_client = client_cls(event_hooks={"request": [hook]}, timeout=30)
    return cls(base_url=gw.url + "/v1", api_key=TOKEN, max_retries=0, http_client=http_client), sent


def _async(sent: Recorded):
    async def hook(request: httpx.Request) -> None:
        sent(request)
    return hook


def test_instructor_in_tools_mode_gets_its_model_through_a_forced_call(gw):
    client, sent = recording_client(gw)
    trip = instructor.from_openai(client).chat.completions.create(
        model="picoora", response_model=Trip, messages=[{"role": "user", "content": "plan a trip to Rome"}])
    assert trip.model_dump() == TRIP
    asked = sent[-1]
    assert asked["tool_choice"] == {"type": "function", "function": {"name": "Trip"}}
    received = gw.fake.requests[-1]
    assert received["format"] == asked["tools"][0]["function"]["parameters"]  # $defs, $ref, minimum, default
    assert "$defs" in received["format"] and received["format"]["properties"]["nights"]["minimum"] == 1
    assert "tools" not in received  # the call came back as JSON, not as a native call


def test_pydantic_ai_output_type_gets_its_model_through_tool_choice_required(gw):
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    client, sent = recording_client(gw, openai.AsyncOpenAI, httpx.AsyncClient)
    agent = Agent(OpenAIChatModel("picoora", provider=OpenAIProvider(openai_client=client)), output_type=Trip)
    result = agent.run_sync("plan a trip to Rome")
    assert result.output == Trip.model_validate(TRIP)
    asked = sent[-1]
    assert asked["tool_choice"] == "required" and len(asked["tools"]) == 1  # its one output tool
    assert gw.fake.requests[-1]["format"] == asked["tools"][0]["function"]["parameters"]


def test_pydantic_ai_streams_its_output_through_the_forced_call(gw):
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    client, sent = recording_client(gw, openai.AsyncOpenAI, httpx.AsyncClient)
    agent = Agent(OpenAIChatModel("picoora", provider=OpenAIProvider(openai_client=client)), output_type=Trip)

    async def run() -> Trip:
        async with agent.run_stream("plan a trip to Rome") as streamed:
            return await streamed.get_output()

    import asyncio

    assert asyncio.run(run()) == Trip.model_validate(TRIP)
    assert sent[-1]["stream"] is True and sent[-1]["tool_choice"] == "required"
    assert gw.fake.requests[-1]["format"] == sent[-1]["tools"][0]["function"]["parameters"]


def test_a_streamed_required_call_among_tools_arrives_as_tool_call_chunks(gw):
    client, _ = recording_client(gw)
    tools = [{"type": "function", "function": {"name": name, "parameters": Trip.model_json_schema()}}
             for name in ("plan", "replan")]
    chunks = list(client.chat.completions.create(
        model="picoora", stream=True, tools=tools, tool_choice="required",
        messages=[{"role": "user", "content": "plan a trip"}]))
    calls = [call for chunk in chunks if chunk.choices for call in chunk.choices[0].delta.tool_calls or []]
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [("plan", TRIP)]
    members = gw.fake.requests[-1]["format"]["anyOf"]
    assert [m["properties"]["name"]["const"] for m in members] == ["plan", "replan"]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == ""  # no JSON as text
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_response_format_beside_client_tools_answers_in_the_format(gw):
    client, _ = recording_client(gw)
    weather = {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
    completion = client.chat.completions.create(
        model="picoora", tools=[weather], messages=[{"role": "user", "content": "plan"}],
        response_format={"type": "json_schema", "json_schema": {"name": "Trip", "schema": Trip.model_json_schema()}})
    # the scripted model takes the union's first member: a call of the client's tool
    assert completion.choices[0].message.tool_calls[0].function.name == "get_weather"
    assert gw.fake.requests[-1]["format"]["anyOf"][-1]["properties"]["to"] == {"$ref": "#/anyOf/1/$defs/Place"}


def test_openai_agents_over_chat_completions_with_tool_choice_required(gw):
    agents = pytest.importorskip("agents", reason="openai-agents is in the test extras")
    agents.set_tracing_disabled(True)
    client, sent = recording_client(gw, openai.AsyncOpenAI, httpx.AsyncClient)
    model = agents.OpenAIChatCompletionsModel("picoora", client)
    agent = agents.Agent(name="planner", model=model, output_type=Trip)
    result = agents.Runner.run_sync(agent, "plan a trip to Rome")
    assert result.final_output.model_dump() == TRIP
    assert sent[-1]["response_format"]["type"] == "json_schema"
    assert gw.fake.requests[-1]["format"] == sent[-1]["response_format"]["json_schema"]["schema"]


def test_litellm_gets_a_forced_call(gw):
    litellm = pytest.importorskip("litellm", reason="litellm is in the test extras")
    tool = {"type": "function", "function": {"name": "plan", "parameters": Trip.model_json_schema()}}
    response = litellm.completion(model="openai/picoora", api_base=gw.url + "/v1", api_key=TOKEN, tools=[tool],
                                  tool_choice={"type": "function", "function": {"name": "plan"}},
                                  messages=[{"role": "user", "content": "plan a trip"}])
    call = response.choices[0].message.tool_calls[0]
    assert call.function.name == "plan" and json.loads(call.function.arguments) == TRIP
    assert gw.fake.requests[-1]["format"] == Trip.model_json_schema()
