"""A turn as a stream: ids and sequence numbers, the answer last, consumers that fail or lag lose nothing."""

from __future__ import annotations

import asyncio

from picoora.tools.base import ToolResult
from tests.fakes.agent_kit import Collector, FunctionRegistry, file_store, make_agent
from tests.fakes.scripted_llm import ScriptedLLM, answer, calls


def _agent(tmp_path, *steps, **settings):
    tools = FunctionRegistry(echo=lambda args, ctx: ToolResult("echoed"))
    store = file_store(tmp_path)
    return store, make_agent(store, ScriptedLLM(*steps), tmp_path, tools=tools, **settings)


def test_every_event_has_the_turn_id_and_a_sequence_and_the_answer_is_last(tmp_path):
    store, agent = _agent(tmp_path, calls(("echo", {})), answer("All done here."), answer("Second."))
    first, second = Collector(), Collector()

    async def scenario():
        return await agent.run_turn("web:s", "go", first), await agent.run_turn("web:s", "again", second)

    result_1, result_2 = asyncio.run(scenario())
    for events, result in ((first, result_1), (second, result_2)):
        assert events.types()[0] == "turn_started"
        assert events.types()[-1] == "final_answer" and events.events[-1].text == result.text
        assert {e.turn_id for e in events.events} == {result.turn_id}
        assert [e.seq for e in events.events] == list(range(1, len(events.events) + 1))
        assert {e.session_key for e in events.events} == {"web:s"}
    assert result_1.turn_id != result_2.turn_id
    assert "tool_call_started" in first.types()


def test_a_sink_that_raises_on_every_event_loses_no_answer(tmp_path):
    store, agent = _agent(tmp_path, calls(("echo", {})), answer("Kept."))

    def broken(event):
        raise RuntimeError("the browser went away")

    result = asyncio.run(agent.run_turn("web:s", "go", broken))
    assert (result.text, result.stop_reason) == ("Kept.", "answer")
    assert [m.content for m in store.sessions.load("web:s").messages][-1] == "Kept."
    assert [e.message.content for e in store.transcripts.read("web:s")][-1] == "Kept."


def test_a_slow_async_sink_does_not_hold_up_the_turn_or_the_store(tmp_path):
    store, agent = _agent(tmp_path, answer("a fairly long answer streamed in many small pieces"))
    seen, stored_when_answer_arrived = [], []

    async def slow(event):
        if event.type == "final_answer":
            stored_when_answer_arrived.append(store.sessions.load("web:s").messages[-1].content)
        await asyncio.sleep(0.01)
        seen.append(event.type)

    result = asyncio.run(agent.run_turn("web:s", "go", slow))
    assert result.stop_reason == "answer"
    assert seen[-1] == "final_answer"  # every event still reached the sink, in order
    assert stored_when_answer_arrived == [result.text]  # recorded before the consumer got the answer


def test_a_sink_that_never_returns_is_dropped_after_the_drain_deadline(tmp_path, monkeypatch):
    from picoora.agent import emitter

    monkeypatch.setattr(emitter, "DRAIN_SECONDS", 0.2)
    store, agent = _agent(tmp_path, answer("Still answered."))

    async def stuck(event):
        await asyncio.Event().wait()

    result = asyncio.run(asyncio.wait_for(agent.run_turn("web:s", "go", stuck), 5))
    assert result.text == "Still answered."
    assert store.sessions.load("web:s").messages[-1].content == "Still answered."
