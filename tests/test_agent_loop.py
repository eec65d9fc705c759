"""The agent loop: answers, tools, every stop condition, events, streaming, persistence, repair."""

import asyncio
import itertools

from picoora.agent.record import FAILED_MARK
from picoora.agent.repair import INTERRUPTED, repair_history
from picoora.llm.base import RAW_ARGUMENTS_KEY, ProviderUnavailableError
from picoora.messages import Message, ToolCall
from picoora.tools.base import ToolResult
from tests.fakes.agent_kit import Collector, FunctionRegistry, file_store, make_agent
from tests.fakes.recording_store import RecordingStore
from tests.fakes.scripted_llm import ScriptedLLM, Sleep, answer, calls

KEY = "cli:test"


def echo(args, ctx):
    """Echo the arguments back."""
    return ToolResult(f"echo {args}")


def run(agent, text, sink=None, key=KEY):
    return asyncio.run(agent.run_turn(key, text, on_event=sink))


def roles(messages):
    return [m.role for m in messages]


def session_of(store, key=KEY):
    return store.sessions.load(key).messages


def transcript_of(store, key=KEY):
    return [e.message for e in store.transcripts.read(key)]


def assert_well_formed(messages):
    assert repair_history(messages) == messages


def test_plain_answer_is_returned_persisted_and_announced(tmp_path):
    store, llm, events = file_store(tmp_path), ScriptedLLM(answer("Hello there!")), Collector()
    result = run(make_agent(store, llm, tmp_path), "hi", events)
    assert (result.text, result.stop_reason, result.iterations, result.tool_calls) == ("Hello there!", "answer", 1, 0)
    assert roles(llm.requests[0].messages) == ["system", "user"]
    assert llm.requests[0].messages[-1].content == "hi"
    assert [(m.role, m.content) for m in session_of(store)] == [("user", "hi"), ("assistant", "Hello there!")]
    assert transcript_of(store) == session_of(store)
    assert events.events[-1].type == "final_answer" and events.events[-1].text == "Hello there!"
    assert "".join(e.text for e in events.of("token")) == "Hello there!"


def test_tool_round_then_answer_with_events_in_order(tmp_path):
    store = file_store(tmp_path)
    llm = ScriptedLLM(calls(("echo", {"x": 1}), content="Let me check."), answer("It said x=1."))
    tools = FunctionRegistry(echo=echo)
    events = Collector()
    result = run(make_agent(store, llm, tmp_path, tools), "echo please", events.async_sink)

    assert (result.stop_reason, result.iterations, result.tool_calls) == ("answer", 2, 1)
    assert tools.executed == [("echo", {"x": 1})]
    # The second request carries the call and its result, in that order.
    assert roles(llm.requests[1].messages) == ["system", "user", "assistant", "tool"]
    assert llm.requests[1].messages[-1].content == "echo {'x': 1}"
    assert llm.requests[0].tools == tools.schemas()

    kinds = events.types()
    first_tool = kinds.index("tool_call_started")
    assert kinds[0] == "turn_started"
    assert set(kinds[1:first_tool]) == {"token"}  # "Let me check." streamed before the call
    assert kinds[first_tool:first_tool + 2] == ["tool_call_started", "tool_call_finished"]
    assert set(kinds[first_tool + 2:-1]) == {"token"} and kinds[-1] == "final_answer"
    started, finished = events.of("tool_call_started")[0], events.of("tool_call_finished")[0]
    assert (started.name, started.arguments, finished.ok) == ("echo", {"x": 1}, True)
    assert finished.call_id == started.call_id

    assert roles(session_of(store)) == ["user", "assistant", "tool", "assistant"]
    assert transcript_of(store) == session_of(store)


def test_tool_error_is_reported_as_not_ok_and_the_model_sees_it(tmp_path):
    def broken(args, ctx):
        """Always fails."""
        return ToolResult.error("disk on fire")

    llm = ScriptedLLM(calls(("broken", {})), answer("Sorry, that failed."))
    events = Collector()
    run(make_agent(file_store(tmp_path), llm, tmp_path, FunctionRegistry(broken=broken)), "go", events)
    assert events.of("tool_call_finished")[0].ok is False
    assert llm.requests[1].messages[-1].content == "Error: disk on fire"


def test_streaming_splits_tokens_and_reasoning(tmp_path):
    llm = ScriptedLLM(answer("The answer is 42.", reasoning="Think: six times seven."), chunk_size=2)
    events = Collector()
    run(make_agent(file_store(tmp_path), llm, tmp_path), "question", events)
    assert len(events.of("token")) > 1
    assert "".join(e.text for e in events.of("token")) == "The answer is 42."
    assert "".join(e.text for e in events.of("reasoning")) == "Think: six times seven."
    kinds = events.types()
    assert kinds.index("reasoning") < kinds.index("token")


def test_no_sink_means_no_streaming_callback(tmp_path):
    seen = []

    def spy(messages):
        return answer("fine")

    class NoStreamLLM(ScriptedLLM):
        async def chat(self, messages, tools=None, *, on_delta=None, **options):
            seen.append(on_delta)
            return await super().chat(messages, tools, on_delta=on_delta, **options)

    result = run(make_agent(file_store(tmp_path), NoStreamLLM(respond=spy), tmp_path), "hi")
    assert result.text == "fine" and seen == [None]


def test_max_tool_iterations_stops_with_well_formed_history(tmp_path):
    counter = itertools.count()
    llm = ScriptedLLM(respond=lambda messages: calls(("echo", {"n": next(counter)})))
    store, tools = file_store(tmp_path), FunctionRegistry(echo=echo)
    result = run(make_agent(store, llm, tmp_path, tools, max_tool_iterations=2), "loop forever")
    assert result.stop_reason == "max_iterations"
    assert "max_tool_iterations" in result.text
    assert (result.iterations, result.tool_calls, len(tools.executed)) == (3, 2, 2)
    saved = session_of(store)
    assert_well_formed(saved)
    assert saved[-2].role == "tool" and saved[-2].content.startswith("Not run")
    assert saved[-1] == Message(role="assistant", content=result.text)


def test_third_identical_call_stops_the_turn(tmp_path):
    llm = ScriptedLLM(respond=lambda messages: calls(("echo", {"same": True})))
    store, tools, events = file_store(tmp_path), FunctionRegistry(echo=echo), Collector()
    result = run(make_agent(store, llm, tmp_path, tools), "repeat", events)
    assert result.stop_reason == "repeated_tool_call"
    assert "`echo`" in result.text and "third time" in result.text
    assert len(tools.executed) == 2  # the third request was not run
    assert events.events[-1].stop_reason == "repeated_tool_call"
    assert_well_formed(session_of(store))


def test_different_arguments_are_not_repeats(tmp_path):
    llm = ScriptedLLM(calls(("echo", {"a": 1})), calls(("echo", {"a": 2})), calls(("echo", {"a": 1})), answer("done"))
    result = run(make_agent(file_store(tmp_path), llm, tmp_path, FunctionRegistry(echo=echo)), "go")
    assert (result.stop_reason, result.tool_calls) == ("answer", 3)


def test_time_limit_during_a_slow_tool(tmp_path):
    async def slow(args, ctx):
        """Takes forever."""
        await asyncio.sleep(60)
        return ToolResult("never")

    store = file_store(tmp_path)
    llm = ScriptedLLM(calls(("slow", {}), ("echo", {"fast": 1})))
    agent = make_agent(store, llm, tmp_path, FunctionRegistry(slow=slow, echo=echo), turn_timeout_seconds=0.2)
    result = run(agent, "do it")
    assert result.stop_reason == "time_limit"
    assert "time limit" in result.text
    saved = session_of(store)
    assert_well_formed(saved)
    results = {m.name: m.content for m in saved if m.role == "tool"}
    assert results["echo"] == "echo {'fast': 1}"  # the call that returned keeps its result
    assert results["slow"].startswith("Interrupted")
    assert transcript_of(store) == saved


def test_time_limit_during_a_slow_model(tmp_path):
    store = file_store(tmp_path)
    llm = ScriptedLLM(Sleep(60, answer("too late")))
    result = run(make_agent(store, llm, tmp_path, turn_timeout_seconds=0.1), "hello?")
    assert result.stop_reason == "time_limit"
    assert roles(session_of(store)) == ["user", "assistant"]


def test_unreachable_provider_ends_the_turn_plainly(tmp_path):
    message = "Ollama is not running at http://localhost:11434: start it with `ollama serve`"
    store, events = file_store(tmp_path), Collector()
    result = run(make_agent(store, ScriptedLLM(ProviderUnavailableError(message)), tmp_path), "hi", events)
    assert (result.text, result.stop_reason) == (message, "error")
    assert events.types() == ["turn_started", "error", "final_answer"]
    assert events.events[1].message == message and events.events[2].stop_reason == "error"
    # Kept, marked as not answered: the user was told, and the next turn does not send it again (below).
    assert [(m.role, m.content, m.cancelled) for m in session_of(store)] == [("user", "hi", True),
                                                                            ("assistant", FAILED_MARK, True)]
    assert [(m.role, m.content) for m in transcript_of(store)] == [("user", "hi"), ("assistant", FAILED_MARK)]


def test_a_failed_turn_is_not_sent_again_with_the_next_one(tmp_path):
    store = file_store(tmp_path)
    llm = ScriptedLLM(ProviderUnavailableError("Ollama is not running"), answer("pong"))
    agent = make_agent(store, llm, tmp_path)
    assert run(agent, "hello").stop_reason == "error"
    assert run(agent, "hi").text == "pong"
    assert [m.content for m in llm.requests[1].messages if m.role == "user"] == ["hi"]
    answered = [(m.role, m.content) for m in session_of(store) if not m.cancelled]
    assert answered == [("user", "hi"), ("assistant", "pong")]


def test_error_after_a_tool_round_keeps_the_complete_pair(tmp_path):
    store = file_store(tmp_path)
    llm = ScriptedLLM(calls(("echo", {"k": 1})), ProviderUnavailableError("gone"))
    result = run(make_agent(store, llm, tmp_path, FunctionRegistry(echo=echo)), "go")
    assert result.stop_reason == "error" and result.tool_calls == 1
    assert roles(session_of(store)) == ["user", "assistant", "tool", "assistant"]
    assert all(m.cancelled for m in session_of(store)) and session_of(store)[-1].content == FAILED_MARK
    assert_well_formed(session_of(store))


def test_store_failure_is_reported_not_raised(tmp_path):
    store = RecordingStore(file_store(tmp_path), fail={"sessions.append"})
    result = run(make_agent(store, ScriptedLLM(answer("ok")), tmp_path), "hi")
    assert result.stop_reason == "error"
    assert "sessions.append failed" in result.text
    assert [m.content for m in transcript_of(store)] == ["hi", "ok"]  # the transcript still has the answer


def test_unexpected_exception_propagates_after_saving(tmp_path):
    store = file_store(tmp_path)
    llm = ScriptedLLM(calls(("echo", {})), RuntimeError("provider bug"))
    try:
        run(make_agent(store, llm, tmp_path, FunctionRegistry(echo=echo)), "go")
    except RuntimeError as exc:
        assert str(exc) == "provider bug"
    else:
        raise AssertionError("the bug was swallowed")
    assert roles(session_of(store)) == ["user", "assistant", "tool", "assistant"]
    assert all(m.cancelled for m in session_of(store)) and session_of(store)[-1].content == FAILED_MARK


def test_persistence_order_user_first_final_before_event(tmp_path):
    store = RecordingStore(file_store(tmp_path))
    order = []
    llm = ScriptedLLM(answer("done"))

    def sink(event):
        if event.type == "final_answer":
            order.append(("event", [m.content for m in store.sessions.load(KEY).messages]))

    run(make_agent(store, llm, tmp_path), "hello", sink)
    assert store.methods()[0] == "transcripts.append"
    assert store.calls.index(("transcripts.append", KEY)) < store.methods().index("sessions.load")
    assert order == [("event", ["hello", "done"])]


def test_model_cannot_use_tools_notice_is_shown_once_per_session(tmp_path):
    notice = "qwen-mini cannot call tools; answering without them."
    llm = ScriptedLLM(respond=lambda messages: answer("plain", notice=notice))
    agent = make_agent(file_store(tmp_path), llm, tmp_path)
    first, other = Collector(), Collector()
    run(agent, "one", first)
    run(agent, "two", first)
    run(agent, "three", other, key="cli:other")  # another person's session is told too
    assert [e.text for e in first.of("notice")] == [notice]
    assert [e.text for e in other.of("notice")] == [notice]


def test_empty_answer_from_a_thinking_model_is_explained(tmp_path):
    llm = ScriptedLLM(answer("", reasoning="hmm " * 50))
    result = run(make_agent(file_store(tmp_path), llm, tmp_path), "hi")
    assert result.stop_reason == "answer" and "max_tokens" in result.text


def test_concurrent_calls_in_one_answer_run_together_and_keep_call_order(tmp_path):
    async def scenario():
        released = asyncio.Event()

        async def waiter(args, ctx):
            """Waits for the other tool."""
            await released.wait()
            return ToolResult("waited")

        def releaser(args, ctx):
            """Releases the waiter."""
            released.set()
            return ToolResult("released")

        llm = ScriptedLLM(calls(("waiter", {}), ("releaser", {})), answer("both done"))
        tools = FunctionRegistry(waiter=waiter, releaser=releaser)
        agent = make_agent(file_store(tmp_path), llm, tmp_path, tools, turn_timeout_seconds=5)
        return await agent.run_turn(KEY, "go"), llm

    result, llm = asyncio.run(scenario())
    assert result.stop_reason == "answer"  # run one after the other, the waiter would have hit the time limit
    assert [m.content for m in llm.requests[1].messages if m.role == "tool"] == ["waited", "released"]


def test_tools_get_the_turns_context(tmp_path):
    seen = []

    def inspect_ctx(args, ctx):
        """Reports its context."""
        seen.append(ctx)
        return ToolResult("seen")

    llm = ScriptedLLM(calls(("inspect_ctx", {})), answer("ok"))
    store = file_store(tmp_path)
    agent = make_agent(store, llm, tmp_path, FunctionRegistry(inspect_ctx=inspect_ctx), secrets=("fake-secret-12345",),
                       tool_settings={"exec": {"timeout_seconds": 5}}, restrict_to_workspace=False)
    run(agent, "who am I")
    ctx = seen[0]
    assert (ctx.session_key, ctx.workspace, ctx.store) == (KEY, tmp_path, store)
    assert ctx.secrets == ["fake-secret-12345"]  # the registry scrubs them from every result
    assert ctx.restrict_to_workspace is False and ctx.settings.tools.exec.timeout_seconds == 5


def test_malformed_arguments_are_answered_with_an_error_not_run(tmp_path):
    llm = ScriptedLLM(calls(("echo", {RAW_ARGUMENTS_KEY: '{"x": 1,,'})), answer("retrying differently"))
    tools, events = FunctionRegistry(echo=echo), Collector()
    result = run(make_agent(file_store(tmp_path), llm, tmp_path, tools), "go", events)
    assert tools.executed == [] and result.tool_calls == 0
    sent = llm.requests[1].messages[-1]
    assert sent.role == "tool" and "not valid JSON" in sent.content and '{"x": 1,,' in sent.content
    assert events.of("tool_call_finished")[0].ok is False


def test_session_with_a_dangling_call_from_an_old_crash(tmp_path):
    store = file_store(tmp_path)
    crashed = Message(role="assistant", tool_calls=[ToolCall("old_1", "echo", {"x": 0})])
    stray = Message(role="tool", content="stray", tool_call_id="nobody")
    store.sessions.append(KEY, [stray, Message(role="user", content="before the crash"), crashed])
    llm = ScriptedLLM(answer("recovered"))
    result = run(make_agent(store, llm, tmp_path), "hello again")
    assert result.text == "recovered"
    request = llm.requests[0].messages
    assert_well_formed(request)
    assert roles(request) == ["system", "user", "assistant", "tool", "user"]
    assert request[3].tool_call_id == "old_1" and request[3].content == INTERRUPTED
    # The new turn is stored well-formed after the old messages; the synthetic result is not stored.
    assert [m.content for m in session_of(store)[-2:]] == ["hello again", "recovered"]
    assert all(m.content != INTERRUPTED for m in session_of(store))


def test_a_failing_event_sink_loses_nothing_and_stores_the_turn_once(tmp_path):
    def sink(event):
        if event.type == "final_answer":
            raise ConnectionResetError("the web client went away")

    store = file_store(tmp_path)
    result = run(make_agent(store, ScriptedLLM(answer("Hello")), tmp_path), "hi", sink)
    assert (result.text, result.stop_reason) == ("Hello", "answer")
    assert [m.content for m in session_of(store)] == ["hi", "Hello"]


def test_reasoning_stays_in_the_transcript_only(tmp_path):
    store = file_store(tmp_path)
    run(make_agent(store, ScriptedLLM(answer("42", reasoning="six times seven")), tmp_path), "q")
    assert transcript_of(store)[-1].reasoning == "six times seven"
    assert session_of(store)[-1].reasoning is None and session_of(store)[-1].content == "42"
