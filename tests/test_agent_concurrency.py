"""One Agent, many sessions at once, one turn at a time per session; cancellation leaves the store valid."""

import asyncio

import pytest

from picoora.agent.record import CANCELLED_MARK
from picoora.agent.repair import repair_history
from picoora.tools.base import ToolResult
from tests.fakes.agent_kit import Collector, FunctionRegistry, file_store, make_agent
from tests.fakes.scripted_llm import ScriptedLLM, answer, calls


def test_turns_of_different_sessions_overlap(tmp_path):
    async def scenario():
        arrived = {"a": asyncio.Event(), "b": asyncio.Event()}

        async def respond(messages):
            me = messages[-1].content
            other = "b" if me == "a" else "a"
            arrived[me].set()
            await arrived[other].wait()  # only returns if the other session's turn is running too
            return answer(f"answer {me}")

        agent = make_agent(file_store(tmp_path), ScriptedLLM(respond=respond), tmp_path, turn_timeout_seconds=5)
        return await asyncio.gather(agent.run_turn("web:a", "a"), agent.run_turn("web:b", "b"))

    first, second = asyncio.run(scenario())
    assert (first.text, first.stop_reason) == ("answer a", "answer")
    assert (second.text, second.stop_reason) == ("answer b", "answer")


def test_turns_of_one_session_run_in_order(tmp_path):
    async def scenario():
        active, peak = [0], [0]

        async def respond(messages):
            active[0] += 1
            peak[0] = max(peak[0], active[0])
            await asyncio.sleep(0.01)
            active[0] -= 1
            return answer(f"re: {messages[-1].content}")

        store, llm = file_store(tmp_path), ScriptedLLM(respond=respond)
        agent = make_agent(store, llm, tmp_path)
        await asyncio.gather(*(agent.run_turn("cli:one", f"msg {i}") for i in range(3)))
        return store, llm, peak[0]

    store, llm, peak = asyncio.run(scenario())
    assert peak == 1
    contents = [m.content for m in store.sessions.load("cli:one").messages]
    assert contents == ["msg 0", "re: msg 0", "msg 1", "re: msg 1", "msg 2", "re: msg 2"]
    assert [m.content for m in llm.requests[2].messages[1:]] == contents[:5]  # each turn sees the ones before
    assert [e.message.content for e in store.transcripts.read("cli:one")] == contents


def cancel_during_tools(tmp_path, tool_calls):
    """Run a turn whose ``block`` tool never returns, cancel it once the tools started, return the store."""

    async def scenario():
        started, never = asyncio.Event(), asyncio.Event()

        async def block(args, ctx):
            """Never returns."""
            started.set()
            await never.wait()
            return ToolResult("unreachable")

        def quick(args, ctx):
            """Returns at once."""
            return ToolResult("quick result")

        store, events = file_store(tmp_path), Collector()
        llm = ScriptedLLM(calls(*tool_calls), answer("after the cancel"))
        agent = make_agent(store, llm, tmp_path, FunctionRegistry(block=block, quick=quick))
        task = asyncio.create_task(agent.run_turn("cli:c", "do things", on_event=events))
        await started.wait()
        await asyncio.sleep(0)  # let the quick tool finish
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # The session lock was released: the next turn runs, on a well-formed history.
        after = await agent.run_turn("cli:c", "still there?")
        return store, llm, events, after

    return asyncio.run(scenario())


def test_cancel_while_a_tool_runs_keeps_only_complete_pairs(tmp_path):
    store, llm, events, after = cancel_during_tools(tmp_path, [("block", {})])
    assert after.text == "after the cancel"
    session = store.sessions.load("cli:c").messages
    # The unanswered call was not stored; the cancelled turn is kept, marked, and closed by the marker.
    assert [(m.role, m.content, m.cancelled) for m in session][:2] == [("user", "do things", True),
                                                                      ("assistant", CANCELLED_MARK, True)]
    assert (session[2].content, session[2].cancelled) == ("still there?", False)
    sent = llm.requests[-1].messages
    assert [m.content for m in sent[1:]] == ["still there?"]  # the cancelled turn was not sent again
    assert repair_history(sent) == sent
    assert [e.message.role for e in store.transcripts.read("cli:c")][:2] == ["user", "assistant"]
    assert "final_answer" not in events.types()


def test_cancel_keeps_a_result_that_already_came_back(tmp_path):
    store, llm, events, after = cancel_during_tools(tmp_path, [("quick", {}), ("block", {})])
    session = store.sessions.load("cli:c").messages
    assert [m.role for m in session[:4]] == ["user", "assistant", "tool", "assistant"]
    assert [c.name for c in session[1].tool_calls] == ["quick"]
    assert session[2].content == "quick result" and session[3].content == CANCELLED_MARK
    assert all(m.cancelled for m in session[:4]) and not session[4].cancelled
    assert repair_history(session) == session
    assert "quick result" not in [m.content for m in llm.requests[-1].messages]  # the cancelled turn stays out
    transcript = [e.message for e in store.transcripts.read("cli:c")]
    assert [m.role for m in transcript[:4]] == ["user", "assistant", "tool", "assistant"]
    assert [c.name for c in transcript[1].tool_calls] == ["quick", "block"]  # the transcript logs what happened
    assert (transcript[3].content, transcript[3].cancelled) == (CANCELLED_MARK, True)


def test_cancel_while_the_model_streams(tmp_path):
    async def scenario():
        streaming, never = asyncio.Event(), asyncio.Event()

        async def respond(messages):
            streaming.set()
            await never.wait()

        store = file_store(tmp_path)
        agent = make_agent(store, ScriptedLLM(respond=respond), tmp_path)
        task = asyncio.create_task(agent.run_turn("cli:s", "long question"))
        await streaming.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return store

    store = asyncio.run(scenario())
    assert [(m.role, m.content, m.cancelled) for m in store.sessions.load("cli:s").messages] == [
        ("user", "long question", True), ("assistant", CANCELLED_MARK, True)]
    assert [e.message.content for e in store.transcripts.read("cli:s")] == ["long question", CANCELLED_MARK]
