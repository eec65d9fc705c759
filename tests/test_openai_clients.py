"""The OpenAI-compatible endpoint through clients we did not write: LangChain's ``ChatOpenAI`` and Simon
Willison's ``llm`` CLI, each checked on what the scripted model server received."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

from tests.fakes.gateway_kit import TOKEN, gateway_over_fake_ollama
from tests.fakes.ollama_server import Reply

langchain_openai = pytest.importorskip("langchain_openai", reason="langchain-openai is in the test extras")


def _respond(body: dict) -> Reply:
    last = body["messages"][-1]
    if body.get("format"):
        return Reply(content=json.dumps({"name": "Ada Lovelace", "born": 1815}))
    if last["role"] == "tool":
        return Reply(content=f"it is {last['content']}")
    if body.get("tools") and "weather" in last["content"]:
        return Reply(tool_calls=[("get_weather", {"city": "Paris"})])
    return Reply(content=f"answer to {last['content']}")


@pytest.fixture
def gw(isolated_home):
    with gateway_over_fake_ollama(isolated_home, _respond) as running:
        yield running


def chat_model(gw, **kwargs):
    return langchain_openai.ChatOpenAI(base_url=gw.url + "/v1", api_key=TOKEN, model="picoora", max_retries=0,
                                       **kwargs)


def test_langchain_sends_its_whole_history(gw):
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    reply = chat_model(gw).invoke([
        SystemMessage("You answer in French."), HumanMessage("I am Ada."), AIMessage("Bonjour Ada."),
        HumanMessage("Who am I?")])
    assert reply.content == "answer to Who am I?"
    sent = gw.fake.requests[-1]["messages"]
    assert sent[0]["content"].startswith("You answer in French.")
    assert [m["content"] for m in sent[1:]] == ["I am Ada.", "Bonjour Ada.", "Who am I?"]
    assert reply.usage_metadata["total_tokens"] > 0


def test_langchain_bind_tools_gets_tool_calls_and_sends_the_result_back(gw):
    from langchain_core.messages import HumanMessage, ToolMessage
    from langchain_core.tools import tool

    @tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    model = chat_model(gw).bind_tools([get_weather])
    question = HumanMessage("what is the weather?")
    asked = model.invoke([question])
    assert [(c["name"], c["args"]) for c in asked.tool_calls] == [("get_weather", {"city": "Paris"})]
    assert [t["function"]["name"] for t in gw.fake.requests[-1]["tools"]] == ["get_weather"]
    answered = model.invoke([question, asked, ToolMessage("sunny", tool_call_id=asked.tool_calls[0]["id"])])
    assert answered.content == "it is sunny"


def test_langchain_with_structured_output(gw):
    class Person(BaseModel):
        name: str
        born: int

    person = chat_model(gw).with_structured_output(Person).invoke("Who wrote the first program?")
    assert person == Person(name="Ada Lovelace", born=1815)
    assert gw.fake.requests[-1]["format"]["properties"]["born"]["type"] == "integer"


def test_langchain_streams(gw):
    pieces = [chunk.content for chunk in chat_model(gw).stream("stream please")]
    assert "".join(pieces) == "answer to stream please"


LLM_CLI = shutil.which("llm", path=str(Path(sys.executable).parent))


@pytest.mark.skipif(LLM_CLI is None, reason="the llm CLI is in the test extras")
def test_the_llm_cli_chats_and_continues_a_conversation(gw, tmp_path):
    user_dir = tmp_path / "llm"
    user_dir.mkdir()
    (user_dir / "extra-openai-models.yaml").write_text(
        f"- model_id: picoora\n  model_name: picoora\n  api_base: {gw.url}/v1\n  api_key_name: picoora\n")
    (user_dir / "keys.json").write_text(json.dumps({"picoora": TOKEN}))
    env = {**os.environ, "LLM_USER_PATH": str(user_dir)}

    def llm(*args: str) -> str:
        done = subprocess.run([LLM_CLI, *args], env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert llm("-m", "picoora", "first question") == "answer to first question"
    assert llm("-c", "second question") == "answer to second question"
    sent = [(m["role"], m["content"]) for m in gw.fake.requests[-1]["messages"][1:]]
    assert sent == [("user", "first question"), ("assistant", "answer to first question"),
                    ("user", "second question")]
    assert llm("-m", "picoora", "-s", "Be brief.", "third") == "answer to third"
    assert gw.fake.requests[-1]["messages"][0]["content"].startswith("Be brief.")
