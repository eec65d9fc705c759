"""``picoora agent``: one-shot turns through real subprocesses against a fake Ollama."""

from __future__ import annotations

import json

import pytest

from tests.cli_support import messages_text, run_cli, write_config
from tests.fakes._http import closed_port_url
from tests.fakes.ollama_server import FakeOllama, Reply

FACT = "The user's favorite programming language is Go"


def _answer_from_memory(body: dict) -> Reply:
    """A model that answers from whatever the system prompt recalled."""
    system = body["messages"][0]["content"]
    if "Go" in system and "favorite programming language" in system:
        return Reply(content="You prefer Go.")
    return Reply(content="I don't know yet.")


@pytest.mark.slow
def test_remember_then_recall_across_two_processes(isolated_home):
    replies = [
        Reply(tool_calls=[("remember", {"text": FACT, "importance": 0.8, "category": "preference"})]),
        Reply(content="Noted: your favorite language is Go."),
    ]
    with FakeOllama(replies=replies, responder=_answer_from_memory) as fake:
        write_config(isolated_home, ollama_url=fake.url, embedder="minilm")  # the real MiniLM embedder

        first = run_cli("agent", "-m", "Remember that my favorite language is Go", home=isolated_home)
        assert first.returncode == 0, first.stderr
        assert first.stdout.strip() == "Noted: your favorite language is Go."
        assert '→ remember(text="The user\'s favorite programming language is Go"' in first.stderr
        assert "✓" in first.stderr

        second = run_cli("agent", "-m", "What programming language do I prefer?", home=isolated_home)
        assert second.returncode == 0, second.stderr
        assert second.stdout.strip() == "You prefer Go."

    # The second process started cold: the memory reached the model through recall, not history.
    question_request = fake.requests[-1]
    assert "What programming language do I prefer?" in messages_text(question_request)
    system = question_request["messages"][0]
    assert system["role"] == "system"
    assert "Recalled memories" in system["content"]
    recalled = system["content"].split("Recalled memories", 1)[1]
    assert FACT in recalled


def test_message_from_stdin_when_no_m_flag(isolated_home):
    with FakeOllama(replies=[Reply(content="Hello from stdin.")]) as fake:
        write_config(isolated_home, ollama_url=fake.url)
        result = run_cli("agent", home=isolated_home, stdin="hello there\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Hello from stdin."
    assert "hello there" in messages_text(fake.requests[0])


def test_an_empty_message_is_a_usage_error(isolated_home):
    write_config(isolated_home, ollama_url=closed_port_url())
    for args, stdin in ((["agent"], ""), (["agent", "-m", "   "], "")):
        result = run_cli(*args, home=isolated_home, stdin=stdin)
        assert result.returncode == 2
        assert "no message" in result.stderr


@pytest.mark.slow
def test_streaming_shows_reasoning_on_stderr_and_the_answer_on_stdout(isolated_home):
    reply = Reply(content="Paris is the capital of France.", thinking="The user asks about France.")
    with FakeOllama(replies=[reply, reply]) as fake:
        write_config(isolated_home, ollama_url=fake.url)
        streamed = run_cli("agent", "--stream", "-m", "Capital of France?", home=isolated_home)
        quiet = run_cli("agent", "--no-stream", "-m", "Capital of France?", home=isolated_home)
    assert streamed.returncode == 0, streamed.stderr
    assert streamed.stdout == "Paris is the capital of France.\n"
    assert "The user asks about France." in streamed.stderr
    assert quiet.stdout == "Paris is the capital of France.\n"
    assert "The user asks about France." not in quiet.stderr


def test_failed_tool_call_is_marked(isolated_home):
    replies = [Reply(tool_calls=[("forget", {"id": "no-such-id"})]), Reply(content="I could not find it.")]
    with FakeOllama(replies=replies) as fake:
        write_config(isolated_home, ollama_url=fake.url)
        result = run_cli("agent", "-m", "Forget no-such-id", home=isolated_home)
    assert result.returncode == 0, result.stderr
    assert '→ forget(id="no-such-id") ✗' in result.stderr
    assert result.stdout.strip() == "I could not find it."


@pytest.mark.slow
def test_sessions_are_separate(isolated_home):
    with FakeOllama() as fake:
        write_config(isolated_home, ollama_url=fake.url)
        assert run_cli("agent", "-m", "first message in default", home=isolated_home).returncode == 0
        assert run_cli("agent", "-s", "work", "-m", "hello work", home=isolated_home).returncode == 0
        assert run_cli("agent", "-m", "second message in default", home=isolated_home).returncode == 0
    work, default_again = fake.requests[1], fake.requests[2]
    assert "first message in default" not in messages_text(work)
    assert "first message in default" in messages_text(default_again)


def test_model_without_tools_answers_and_says_so_once(isolated_home):
    with FakeOllama(models=("gemma3:1b",), tool_models=(), replies=[Reply(content="Hi there.")]) as fake:
        write_config(isolated_home, ollama_url=fake.url, model="gemma3:1b")
        result = run_cli("agent", "-m", "hello", home=isolated_home)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Hi there."
    assert result.stderr.count("cannot call tools") == 1
    assert "ollama pull qwen3" in result.stderr


def test_storage_fallback_is_one_line_and_the_turn_still_answers(isolated_home):
    closed_port = int(closed_port_url().rsplit(":", 1)[1])
    with FakeOllama(replies=[Reply(content="Still here.")]) as fake:
        config = write_config(isolated_home, ollama_url=fake.url)
        data = json.loads(config.read_text())
        data["oracle"] = {"enabled": True, "host": "127.0.0.1", "port": closed_port, "password": "unused"}
        config.write_text(json.dumps(data))
        result = run_cli("agent", "-m", "hello", home=isolated_home)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Still here."
    fallback = [line for line in result.stderr.splitlines() if "using file storage instead" in line]
    assert len(fallback) == 1 and f"127.0.0.1:{closed_port}" in fallback[0]


def test_ollama_down_exits_1_with_what_to_run(isolated_home):
    write_config(isolated_home, ollama_url=closed_port_url())
    result = run_cli("agent", "-m", "hello", home=isolated_home)
    assert result.returncode == 1
    assert "ollama serve" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_model_not_pulled_exits_1_with_the_pull_command(isolated_home):
    with FakeOllama(models=("llama3.1:8b",)) as fake:
        write_config(isolated_home, ollama_url=fake.url, model="qwen3:latest")
        result = run_cli("agent", "-m", "hello", home=isolated_home)
    assert result.returncode == 1
    assert "ollama pull qwen3:latest" in result.stderr
    assert "Traceback" not in result.stderr
