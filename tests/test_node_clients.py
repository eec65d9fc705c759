"""Node clients against the gateway with a scripted Ollama behind it: the ``openai`` SDK (chat, stream, tools,
``runTools``) and the Vercel AI SDK (``generateText`` with tools and ``toolChoice: "required"``,
``generateObject``; its default OpenAI model speaks the Responses API). Each scenario is
``tests/node/clients.mjs``; what the fake model received is checked here. They need node and the packages
``.ci/run`` installs (``npm ci --prefix tests/node``), and skip, saying which, without them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.fakes.gateway_kit import TOKEN, gateway_over_fake_ollama
from tests.fakes.ollama_server import Reply

NODE_DIR = Path(__file__).parent / "node"
NODE = shutil.which("node")
MIN_NODE = 20  # the AI SDK's own floor is 22; its code runs on 20 (tested here), not on Debian 12's 18


def _node_major() -> int:
    if NODE is None:
        return 0
    version = subprocess.run([NODE, "--version"], capture_output=True, text=True, timeout=30).stdout
    return int(version.strip().lstrip("v").split(".")[0] or 0)


pytestmark = [
    pytest.mark.slow,  # each test starts node and a gateway: with the real-process-heavy groups
    pytest.mark.skipif(NODE is None, reason="node is not installed (.ci/run installs it with npm)"),
    pytest.mark.skipif(NODE is not None and _node_major() < MIN_NODE, reason=f"node is older than {MIN_NODE}"),
    pytest.mark.skipif(not (NODE_DIR / "node_modules").is_dir(),
                       reason="the Node clients are not installed: npm ci --prefix tests/node (.ci/run does it)"),
]
PERSON = {"name": "Ada", "born": 1815}


def _respond(body: dict) -> Reply:
    last = body["messages"][-1]
    schema = body.get("format")
    if isinstance(schema, dict) and "anyOf" in schema:  # tool_choice required among tools
        name = schema["anyOf"][0]["properties"]["name"]["const"]
        return Reply(json.dumps({"name": name, "arguments": {"city": "Oslo"}}))
    if isinstance(schema, dict) and "city" in schema.get("properties", {}):  # the one tool, forced
        return Reply(json.dumps({"city": "Oslo"}))
    if schema:
        return Reply(json.dumps(PERSON))
    if last["role"] == "tool":
        return Reply(f"the tool said {last['content']}")
    if body.get("tools") and "weather" in last["content"]:
        return Reply(tool_calls=[("get_weather", {"city": "Oslo"})])
    return Reply(f"answer to {last['content']} in words")


@pytest.fixture
def gw(isolated_home):
    with gateway_over_fake_ollama(isolated_home, _respond) as running:
        yield running


def run(gw, scenario: str) -> dict:
    env = {**os.environ, "PICOORA_URL": gw.url, "PICOORA_TOKEN": TOKEN}
    done = subprocess.run([NODE, "clients.mjs", scenario], cwd=NODE_DIR, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_openai_sdk_chats(gw):
    got = run(gw, "chat")
    assert got["text"] == "answer to hello from node in words" and got["usage"] > 0
    assert gw.fake.requests[-1]["messages"][-1] == {"role": "user", "content": "hello from node"}


def test_the_openai_sdk_streams_with_usage(gw):
    got = run(gw, "stream")
    assert got["text"] == "answer to stream to node in words" and got["pieces"] > 1 and got["usage"] > 0


def test_the_openai_sdk_gets_tool_calls(gw):
    assert run(gw, "tools") == {"name": "get_weather", "arguments": {"city": "Oslo"}}
    assert gw.fake.requests[-1]["tools"][0]["function"]["parameters"]["required"] == ["city"]


def test_the_openai_sdk_run_tools_loop(gw):
    assert run(gw, "runTools") == {"text": "the tool said sunny in Oslo"}
    assert gw.fake.requests[-1]["messages"][-1] == {"role": "tool", "content": "sunny in Oslo",
                                                    "tool_name": "get_weather"}


def test_the_ai_sdk_generate_text_with_tool_choice_required(gw):
    got = run(gw, "generateTextRequired")
    assert got == {"calls": [["get_weather", {"city": "Oslo"}]], "results": ["sunny in Oslo"]}
    assert gw.fake.requests[-1]["format"]["properties"]["city"] == {"type": "string"}  # forced through format


def test_the_ai_sdk_generate_text_runs_its_tools(gw):
    assert run(gw, "generateTextTools") == {"text": "the tool said sunny in Oslo"}


def test_the_ai_sdk_generate_object_over_responses_and_chat(gw):
    assert run(gw, "generateObject") == {"object": PERSON}
    assert gw.fake.requests[-1]["format"]["required"] == ["name", "born"]
    assert run(gw, "generateObjectChat") == {"object": PERSON}
