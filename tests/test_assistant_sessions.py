"""Per-session runtime: each session its own model, shared clients, nothing failed or re-sent on a switch."""

from __future__ import annotations

import asyncio
import threading

import pytest

from picoora.assistant import TurnFailed, build_assistant
from picoora.config import load_config
from picoora.llm.base import ModelNotFoundError
from picoora.llm.ollama import OllamaLLM
from tests.cli_support import write_config
from tests.fakes.agent_kit import Collector
from tests.fakes.ollama_server import FakeOllama, Reply


def _last_user(body: dict) -> str:
    return next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")


class GatedOllama(FakeOllama):
    """Holds the answers for sessions a and b until ``release`` is set, so their turns overlap."""

    def __init__(self, **kwargs):
        super().__init__(responder=self.respond, **kwargs)
        self.release = threading.Event()
        self.waiting = 0

    def respond(self, body: dict) -> Reply:
        text = _last_user(body)
        if text.startswith("slow"):
            with self._lock:
                self.waiting += 1
            assert self.release.wait(10), "the test never released the slow answers"
        return Reply(content=f"{body['model']} answers {text} with several words")


def test_two_sessions_stream_while_a_third_switches_model(isolated_home, monkeypatch):
    closed: list[str] = []  # the models whose client the pool closed, in order
    real_close = OllamaLLM.close

    async def recording_close(llm):
        closed.append(llm.model)
        await real_close(llm)

    monkeypatch.setattr(OllamaLLM, "close", recording_close)
    with GatedOllama(models=("m1", "m2", "m3")) as fake:
        config = load_config(write_config(isolated_home, ollama_url=fake.url, model="m1"))

        async def scenario():
            async with build_assistant(config) as assistant:
                a, b = Collector(), Collector()
                turn_a = asyncio.create_task(assistant.ask("slow a", "web:a", on_event=a))
                turn_b = asyncio.create_task(assistant.ask("slow b", "web:b", on_event=b))
                while fake.waiting < 2:  # both requests are in flight on m1
                    await asyncio.sleep(0.01)
                await assistant.set_session_model("web:c", "m2")
                answer_c = await assistant.answer("quick c", "web:c")
                await assistant.set_session_model("web:c", "m3")  # m2 now has no user: its client closes
                for _ in range(3):  # the close runs as a task of its own
                    await asyncio.sleep(0)
                closed_while_waiting = list(closed)
                fake.release.set()
                results = await asyncio.gather(turn_a, turn_b)
                models = {key: (await assistant.session_model(key)).model for key in ("web:a", "web:b", "web:c")}
                return a, b, results, answer_c, closed_while_waiting, models

        a, b, results, answer_c, closed_while_waiting, models = asyncio.run(scenario())

    assert [r.stop_reason for r in results] == ["answer", "answer"]
    assert results[0].text == "m1 answers slow a with several words"
    assert answer_c == "m2 answers quick c with several words"
    assert models == {"web:a": "m1", "web:b": "m1", "web:c": "m3"}
    assert closed_while_waiting == ["m2"]  # m1 kept for a and b, m3 for c; m2 closed once unused
    # Each turn reached the server exactly once: nothing failed over or was re-sent.
    chats = [(r["model"], _last_user(r)) for r in fake.requests]
    assert sorted(chats) == [("m1", "slow a"), ("m1", "slow b"), ("m2", "quick c")]
    for events in (a, b):
        assert len(events.of("token")) > 1  # streamed
        assert events.of("turn_started")[0].model == "ollama/m1"


def test_a_sessions_model_survives_a_restart_and_a_bad_model_changes_nothing(isolated_home):
    with FakeOllama(models=("m1", "m2"), responder=lambda body: Reply(content=body["model"])) as fake:
        config = load_config(write_config(isolated_home, ollama_url=fake.url, model="m1"))

        async def first_process():
            async with build_assistant(config) as assistant:
                await assistant.set_session_model("cli:x", "m2")
                with pytest.raises(ModelNotFoundError, match="ollama pull nosuch"):
                    await assistant.set_session_model("cli:x", "nosuch")
                return (await assistant.session_model("cli:x")).model

        async def second_process():
            async with build_assistant(config) as assistant:
                return await assistant.answer("which model?", "cli:x"), await assistant.answer("and you?", "cli:y")

        assert asyncio.run(first_process()) == "m2"
        assert asyncio.run(second_process()) == ("m2", "m1")


def test_answer_raises_instead_of_returning_an_error_as_text(isolated_home):
    with FakeOllama(models=("m1",), replies=[Reply(status=500, error="boom")]) as fake:
        config = load_config(write_config(isolated_home, ollama_url=fake.url, model="m1"))

        async def scenario():
            async with build_assistant(config) as assistant:
                await assistant.answer("hi")

        with pytest.raises(TurnFailed) as failure:
            asyncio.run(scenario())
    assert failure.value.result.stop_reason == "error"


def test_sessions_history_and_new_session_through_the_library(isolated_home):
    with FakeOllama(models=("m1",), responder=lambda body: Reply(content="ok")) as fake:
        config = load_config(write_config(isolated_home, ollama_url=fake.url, model="m1"))

        async def scenario():
            async with build_assistant(config) as assistant:
                await assistant.answer("hello", "web:h")
                keys = [s.key for s in await assistant.sessions()]
                await assistant.new_session("web:h")
                after_reset = [s.key for s in await assistant.sessions()]
                history = [(e.message.role, e.message.content) for e in await assistant.history("web:h")]
                return keys, after_reset, history

        keys, after_reset, history = asyncio.run(scenario())
    assert keys == ["web:h"] and after_reset == []
    assert history == [("user", "hello"), ("assistant", "ok")]  # the transcript keeps what was said


def test_a_chosen_model_is_the_sessions_and_going_back_gives_the_default_again(isolated_home, monkeypatch):
    with FakeOllama(models=("m1", "m2", "m3"), responder=lambda body: Reply(content=body["model"])) as fake:
        write_config(isolated_home, ollama_url=fake.url, model="m1")

        async def choose():
            async with build_assistant(load_config()) as assistant:
                before = await assistant.model_source("cli:x")
                await assistant.set_session_model("cli:x", "m2")
                return before, await assistant.model_source("cli:x")

        async def later_with(model_from_env: str):
            monkeypatch.setenv("PICO_AGENTS_DEFAULTS_MODEL", model_from_env)
            async with build_assistant(load_config()) as assistant:
                chosen = await assistant.model_source("cli:x")
                other = await assistant.model_source("cli:never-chose")
                answer = await assistant.answer("which?", "cli:x")
                back = await assistant.reset_session_model("cli:x")
                after = await assistant.model_source("cli:x")
                return chosen, other, answer, back, after, await assistant.answer("and now?", "cli:x")

        async def next_process():
            async with build_assistant(load_config()) as assistant:
                return await assistant.model_source("cli:x")

        before, chosen_now = asyncio.run(choose())
        chosen, other, answer, back, after, answer_after = asyncio.run(later_with("m3"))
        restarted = asyncio.run(next_process())

    assert (before.model, before.source, before.default_source) == ("m1", "config", "config")
    assert (chosen_now.model, chosen_now.source) == ("m2", "session")
    # The environment now names another default: the session keeps its own choice, and says so.
    assert (chosen.model, chosen.source, chosen.default_model, chosen.default_source) == ("m2", "session", "m3", "env")
    assert chosen.env_vars == ("PICO_AGENTS_DEFAULTS_MODEL",)
    assert "chosen for session cli:x with /model" in chosen.why() and "ollama/m3" in chosen.why()
    assert "PICO_AGENTS_DEFAULTS_MODEL" in chosen.why()
    assert (other.model, other.source) == ("m3", "env")  # a session that never chose gets the default
    assert answer == "m2"
    assert (back.model, after.model, after.source, answer_after) == ("m3", "m3", "env", "m3")
    assert (restarted.model, restarted.source) == ("m3", "env")  # the choice stays taken back


def test_an_unreadable_or_unusable_stored_choice_falls_back_to_the_default_and_says_so(isolated_home):
    from picoora.session_models import state_key

    with FakeOllama(models=("m1",)) as fake:
        config = load_config(write_config(isolated_home, ollama_url=fake.url, model="m1"))

        async def scenario():
            async with build_assistant(config) as assistant:
                await assistant.astore.state.set(state_key("cli:bad"), "not json")
                await assistant.astore.state.set(state_key("cli:gone"), '["nosuch-provider", "m9"]')
                return [await assistant.model_source(key) for key in ("cli:bad", "cli:gone")]

        described = asyncio.run(scenario())
    assert [(d.label, d.source) for d in described] == [("ollama/m1", "config"), ("ollama/m1", "config")]
