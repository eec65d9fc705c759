"""Stop conditions beyond the iteration cap and the wall clock, through the agent loop: A/B oscillation, no
progress (failures, results seen before), the per-turn token budget; each says why in the answer and the trace."""

import asyncio
import itertools

import pytest

from picoora.agent.repair import repair_history
from picoora.cli.trace_cmd import render
from picoora.llm.base import Usage
from picoora.tools.base import ToolResult
from tests.fakes.agent_kit import Collector, FunctionRegistry, file_store, make_agent
from tests.fakes.scripted_llm import ScriptedLLM, answer, calls

KEY = "cli:stops"


def echo(args, ctx):
    """Echo the arguments back."""
    return ToolResult(f"echo {args}")


def missing(args, ctx):
    """Always fails."""
    return ToolResult.error(f"no such page: {args.get('page')}")


def empty_search(args, ctx):
    """Finds nothing, whatever it is asked."""
    return ToolResult("no results")


def turn(store, llm, tmp_path, tools, **settings):
    events = Collector()
    result = asyncio.run(make_agent(store, llm, tmp_path, tools, **settings).run_turn(KEY, "go", on_event=events))
    saved = store.sessions.load(KEY).messages
    assert repair_history(saved) == saved  # every call has its result, also the ones not run
    return result, events, store.traces.last(KEY)


def test_two_calls_taking_turns_stop_the_turn_with_the_reason(tmp_path):
    steps = itertools.cycle([calls(("echo", {"step": "a"})), calls(("lookup", {"step": "b"}))])
    llm = ScriptedLLM(respond=lambda messages: next(steps))
    tools = FunctionRegistry(echo=echo, lookup=echo)
    result, events, trace = turn(file_store(tmp_path), llm, tmp_path, tools)
    assert result.stop_reason == "oscillation"
    assert "back and forth" in result.text and "`echo`" in result.text and "`lookup`" in result.text
    assert len(tools.executed) == 3  # A, B, A ran; the second B was not
    assert events.events[-1].stop_reason == "oscillation" and events.events[-1].text == result.text
    assert (trace.stop_reason, trace.stop_detail) == ("oscillation", result.text)
    assert f"Ended     oscillation: {result.text}" in render(trace)  # what `picoora trace` prints


def test_going_on_after_two_different_steps_is_not_oscillation(tmp_path):
    llm = ScriptedLLM(calls(("echo", {"n": 1})), calls(("echo", {"n": 2})), calls(("echo", {"n": 1})),
                      calls(("echo", {"n": 3})), answer("done"))
    result, _, _ = turn(file_store(tmp_path), llm, tmp_path, FunctionRegistry(echo=echo))
    assert (result.stop_reason, result.tool_calls) == ("answer", 4)


@pytest.mark.parametrize(("tool", "said", "ran"), [
    (missing, "last 3 rounds of tool calls all failed", 3),
    (empty_search, "failed or brought back only results I already had", 4),  # the first "no results" was news
])
def test_rounds_that_get_nowhere_stop_the_turn(tmp_path, tool, said, ran):
    pages = itertools.count()
    llm = ScriptedLLM(respond=lambda messages: calls(("look", {"page": next(pages)})))
    tools = FunctionRegistry(look=tool)
    result, _, trace = turn(file_store(tmp_path), llm, tmp_path, tools)
    assert result.stop_reason == "no_progress"
    assert said in result.text
    assert len(tools.executed) == ran
    assert trace.stop_detail == result.text


def test_a_success_between_failures_is_progress(tmp_path):
    llm = ScriptedLLM(calls(("fetch", {"page": 1})), calls(("fetch", {"page": 2})), calls(("echo", {"ok": 1})),
                      calls(("fetch", {"page": 3})), calls(("fetch", {"page": 4})), answer("found it"))
    result, _, _ = turn(file_store(tmp_path), llm, tmp_path, FunctionRegistry(fetch=missing, echo=echo))
    assert (result.stop_reason, result.text) == ("answer", "found it")


def test_the_token_budget_stops_before_the_call_that_would_pass_it(tmp_path):
    def costly(messages):
        response = calls(("echo", {"n": len(messages)}))
        response.usage = Usage(prompt_tokens=950, completion_tokens=50)
        return response

    llm = ScriptedLLM(respond=costly)
    result, events, trace = turn(file_store(tmp_path), llm, tmp_path, FunctionRegistry(echo=echo),
                                 max_turn_tokens=2_500)
    assert result.stop_reason == "token_budget"
    # 1,000 tokens a call: the third fits (2,000 used + a small request), a fourth would not.
    assert result.iterations == 3 and len(llm.requests) == 3
    assert "used 3,000 tokens" in result.text and "agents.defaults.max_turn_tokens" in result.text
    assert events.events[-1].stop_reason == "token_budget"
    assert (trace.stop_reason, trace.stop_detail) == ("token_budget", result.text)


def test_no_budget_by_default(tmp_path):
    def costly(messages):
        response = answer("fine") if len(messages) > 8 else calls(("echo", {"n": len(messages)}))
        response.usage = Usage(prompt_tokens=100_000, completion_tokens=1_000)
        return response

    result, _, trace = turn(file_store(tmp_path), ScriptedLLM(respond=costly), tmp_path, FunctionRegistry(echo=echo))
    assert (result.stop_reason, result.text, trace.stop_detail) == ("answer", "fine", None)
