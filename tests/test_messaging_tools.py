"""message and spawn (background, or waited for): in the gateway through the turn service (the final reply
never sent twice, a spawned task's result delivered to the chat that asked), and in the terminal (printed;
one-shot waits for tasks)."""

from __future__ import annotations

import asyncio

import pytest

from picoora.assistant import build_assistant
from picoora.config import load_config
from picoora.gateway.channels.links import Inbound
from picoora.identities import Person
from tests.cli_support import run_cli, write_config
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.fakes.runtime_kit import running_runtime


def _model(body: dict) -> Reply:
    """Scripted by the user's words; tool results come back as the last message."""
    messages = body["messages"]
    last, user = messages[-1], next(m["content"] for m in reversed(messages) if m["role"] == "user")
    if last["role"] == "tool":
        return Reply(content=f"done after: {last['content']}" if "echo" not in user else "Working on it.")
    if user.startswith("say"):
        return Reply(tool_calls=[("message", {"text": "Working on it."})])
    if user.startswith("background"):
        return Reply(tool_calls=[("spawn", {"task": "count the sheep"})])
    if user.startswith("nested"):
        return Reply(tool_calls=[("spawn", {"task": "spawn another", "wait": True})])
    if user.startswith("spawn another"):
        return Reply(tool_calls=[("spawn", {"task": "forever"})])
    if user == "count the sheep":
        return Reply(content="42 sheep")
    return Reply(content="plain answer")


def _gateway(home, texts):
    with FakeOllama(responder=_model) as fake:
        config = load_config(write_config(home, ollama_url=fake.url))

        async def scenario():
            async with build_assistant(config) as assistant:
                async with running_runtime(assistant) as (runtime, recorders):
                    for text in texts:
                        await asyncio.wait_for(runtime._submit_chat(
                            Inbound("telegram", "42", text, "42", Person("owner", owner=True))), 20)
                    async with runtime.people.lease(Person("sam")) as sam:
                        guest_tools = sam.tools.names()
                # leaving the runtime drained the background tasks: their reports are in
            return [s.text for s in recorders.sent], guest_tools

        return asyncio.run(scenario())


def test_message_reaches_the_chat_and_the_same_final_reply_is_not_sent_twice(isolated_home):
    sent, _ = _gateway(isolated_home, ["say echo"])  # the model says "Working on it." twice: once with the tool
    assert sent == ["Working on it."]


def test_a_spawned_task_reports_to_the_chat_that_asked(isolated_home):
    sent, guest_tools = _gateway(isolated_home, ["background please"])
    # Both reach the chat; the task may finish before the turn that started it has replied.
    assert len(sent) == 2 and any(s.startswith("done after: Started background task") for s in sent)
    assert any(s.startswith("Background task") and "42 sheep" in s for s in sent)
    assert not {"message", "spawn"} & set(guest_tools)


def test_a_waited_for_task_is_waited_for_and_cannot_start_tasks_of_its_own(isolated_home):
    sent, _ = _gateway(isolated_home, ["nested work"])
    assert len(sent) == 1 and "cannot start another one" in sent[0]


@pytest.mark.slow
def test_in_the_terminal_one_shot_waits_for_the_background_task(isolated_home):
    with FakeOllama(responder=_model) as fake:
        write_config(isolated_home, ollama_url=fake.url)
        result = run_cli("agent", "-m", "background please", home=isolated_home)
        said = run_cli("agent", "-m", "say echo", "-s", "cli:other", home=isolated_home)
    assert result.returncode == 0, result.stderr
    assert "Started background task" in result.stdout and "42 sheep" in result.stdout
    assert said.stdout.count("Working on it.") >= 1
