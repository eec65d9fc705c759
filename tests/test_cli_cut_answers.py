"""Nothing the user saw is missing from the record: a stream cut midway leaves its visible part in the
transcript (marked), and two tool calls that share an id both run and both answer the model."""

from __future__ import annotations

import json

import pytest

from picoora.agent.record import FAILED_MARK
from picoora.agent.repair import repair_history
from picoora.store.files import FileStore
from tests.cli_support import run_cli, write_config
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.fakes.openai_server import FakeOpenAI


def _transcript(home):
    store = FileStore(home / "workspace")
    try:
        return [e.message for e in store.transcripts.read("cli:default")], store.sessions.load("cli:default").messages
    finally:
        store.close()


@pytest.mark.slow
def test_a_stream_cut_midway_keeps_what_the_user_saw(isolated_home):
    answer = "The capital of France is Paris, a city on the Seine with many bridges."
    with FakeOllama(replies=[Reply(content=answer, cut_after=5)]) as fake:
        write_config(isolated_home, ollama_url=fake.url)
        result = run_cli("agent", "-m", "Capital of France?", "--stream", home=isolated_home)
    assert result.returncode == 1
    shown = result.stdout.strip()
    assert shown and answer.startswith(shown), result.stdout  # part of the answer reached the screen
    assert "broke off midway" in result.stderr and "Traceback" not in result.stderr
    transcript, session = _transcript(isolated_home)
    assert [m.role for m in transcript] == ["user", "assistant", "assistant"]
    assert transcript[1].content == shown + " [the answer was cut off here]"
    assert transcript[2].content == FAILED_MARK  # the turn failed: kept, marked, not sent again
    assert session == repair_history(session) and session[-2].content == transcript[1].content
    assert session[-1].content == FAILED_MARK and all(m.cancelled for m in session)


def _openai_config(home, url: str) -> None:
    (home / "config.json").write_text(json.dumps({
        "agents": {"defaults": {"provider": "openai", "model": "fake-model"}},
        "providers": {"openai": {"api_base": f"{url}/v1", "max_retries": 0}},
        "memory": {"embedder": "none"},
    }))


@pytest.mark.slow
def test_two_tool_calls_sharing_an_id_both_run_and_both_answer_the_model(isolated_home):
    twin_calls = Reply(tool_calls=[("remember", {"text": "The boat is called Ondine"}),
                                   ("remember", {"text": "The cat is called Miso"})], call_ids=["call_x", "call_x"])
    with FakeOpenAI(replies=[twin_calls, Reply(content="Both saved.")]) as fake:
        _openai_config(isolated_home, fake.url)
        result = run_cli("agent", "-m", "Remember my boat and my cat", home=isolated_home)
        listed = run_cli("memory", "list", "--json", home=isolated_home)
    assert result.returncode == 0, result.stderr
    assert sorted(m["content"] for m in json.loads(listed.stdout)) == ["The boat is called Ondine",
                                                                       "The cat is called Miso"]
    follow_up = fake.requests[-1]["messages"]
    call_ids = [c["id"] for m in follow_up if m.get("tool_calls") for c in m["tool_calls"]]
    result_ids = [m["tool_call_id"] for m in follow_up if m["role"] == "tool"]
    assert len(set(call_ids)) == 2 and result_ids == call_ids  # each call answered under its own id


@pytest.mark.slow
def test_arguments_nested_100_000_deep_are_told_to_the_model_not_a_crash(isolated_home):
    deep = '{"text": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with FakeOpenAI(replies=[Reply(tool_calls=[("remember", deep)]), Reply(content="Sorry.")]) as fake:
        _openai_config(isolated_home, fake.url)
        result = run_cli("agent", "-m", "Remember this", home=isolated_home)
    assert result.returncode == 0 and "Sorry." in result.stdout, result.stderr[-500:]
    told = next(m["content"] for m in fake.requests[-1]["messages"] if m["role"] == "tool")
    assert "nested more than 64 levels deep" in told and "RecursionError" not in result.stderr
