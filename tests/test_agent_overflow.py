"""Recovering from a context overflow: compact the stored session once, call again, or stop cleanly."""

import asyncio

from picoora.agent.compaction import SUMMARISER_PROMPT, fitting_cut
from picoora.agent.record import FAILED_MARK
from picoora.agent.repair import repair_history
from picoora.agent.tokens import estimate_messages_tokens
from picoora.agent.window import too_large
from picoora.config import AgentDefaults
from picoora.llm.base import AuthenticationError, ContextOverflowError, RetryableError
from picoora.messages import Message, ToolCall
from picoora.tools.base import ToolResult
from tests.fakes.agent_kit import Collector, FunctionRegistry, file_store, make_agent
from tests.fakes.recording_store import RecordingStore
from tests.fakes.scripted_llm import ScriptedLLM, Sleep, answer, calls

KEY = "cli:overflow"


def overflow():
    return ContextOverflowError("This model's maximum context length is 4096 tokens", status=400)


def turn(i, size=400, with_tool=False):
    msgs = [Message(role="user", content=f"question {i} " + "q" * size)]
    if with_tool:
        msgs += [
            Message(role="assistant", tool_calls=[ToolCall(f"c{i}", "echo", {"i": i})]),
            Message(role="tool", content=f"result {i} " + "r" * size, tool_call_id=f"c{i}", name="echo"),
        ]
    return msgs + [Message(role="assistant", content=f"answer {i} " + "a" * size)]


def failed(text):
    """A failed turn as the session keeps it: marked, never sent to the model again."""
    return [Message(role="user", content=text, cancelled=True),
            Message(role="assistant", content=FAILED_MARK, cancelled=True)]


def seeded_store(tmp_path, turns=6, summary="", **kwargs):
    store = file_store(tmp_path)
    for i in range(turns):
        store.sessions.append(KEY, turn(i, **kwargs))
    if summary:
        store.sessions.set_summary(KEY, summary)
    return store


def is_summary_request(request):
    return request.messages[0].content == SUMMARISER_PROMPT


def transcript_of(store):
    return [e.message for e in store.transcripts.read(KEY)]


def echo(args, ctx):
    """Echo the arguments back."""
    return ToolResult(f"echo {args}")


def test_overflow_compacts_once_and_the_retry_answers(tmp_path):
    store = seeded_store(tmp_path, summary="The user's cat is Miso.")
    old = store.sessions.load(KEY).messages
    llm = ScriptedLLM(overflow(), answer("Miso; questions 0 to 3 were asked."), answer("Here you go."))
    events = Collector()
    agent = make_agent(store, llm, tmp_path, keep_recent_messages=4)
    result = asyncio.run(agent.run_turn(KEY, "what next?", on_event=events))

    assert (result.text, result.stop_reason, result.iterations) == ("Here you go.", "answer", 2)
    first, summary_request, retry = llm.requests
    assert is_summary_request(summary_request)
    assert "The user's cat is Miso." in summary_request.messages[1].content  # the old summary is folded in
    assert "question 0" in summary_request.messages[1].content
    assert "Miso; questions 0 to 3 were asked." in retry.system
    assert estimate_messages_tokens(retry.messages) < estimate_messages_tokens(first.messages)
    assert retry.messages[1:] == old[-4:] + [Message(role="user", content="what next?")]
    assert retry.tools == first.tools

    session = store.sessions.load(KEY)
    assert session.summary == "Miso; questions 0 to 3 were asked."
    turn_messages = [Message(role="user", content="what next?"), Message(role="assistant", content="Here you go.")]
    assert session.messages == old[-4:] + turn_messages  # the turn once, after what was kept
    assert transcript_of(store) == turn_messages
    notices = [e.text for e in events.of("notice")]
    assert len(notices) == 1 and "summarised to fit the model's context window" in notices[0]
    assert events.types()[-1] == "final_answer" and not events.of("error")


def test_kept_messages_shrink_to_fit_the_window_without_splitting_pairs(tmp_path):
    # Turns with a tool round, ~640 tokens each: keep_recent_messages=8 would keep two of them, more than
    # half of a 2,048-token window, so only the last one (with its call/result pair) is kept.
    # The stored history (~3,800 tokens) is over the window by picoora's own estimate, so it is compacted
    # before anything is sent: Ollama would cut such a prompt silently instead of reporting an overflow.
    store = seeded_store(tmp_path, size=800, with_tool=True)
    old = store.sessions.load(KEY).messages
    llm = ScriptedLLM(respond=lambda m: answer("S" if m[0].content == SUMMARISER_PROMPT else "ok"))
    agent = make_agent(store, llm, tmp_path, context_window=2048, keep_recent_messages=8)
    result = asyncio.run(agent.run_turn(KEY, "go on"))

    assert result.text == "ok"
    assert is_summary_request(llm.requests[0])  # before anything else: no oversized request was sent
    assert len([r for r in llm.requests if not is_summary_request(r)]) == 1
    assert estimate_messages_tokens(old[-8:]) > 1024 >= estimate_messages_tokens(old[-4:])
    session = store.sessions.load(KEY)
    assert session.summary == "S"
    assert session.messages[:-2] == old[-4:]
    assert [m.role for m in old[-4:]] == ["user", "assistant", "tool", "assistant"]


def test_fitting_cut_lands_on_a_user_message_or_the_end():
    history = turn(1, size=40) + turn(2, size=40, with_tool=True) + turn(3, size=4000, with_tool=True)
    assert fitting_cut(history, 2, max_kept_tokens=10_000) == 6  # the usual cut, as it fits
    assert fitting_cut(history, 8, max_kept_tokens=10_000) == 2
    assert fitting_cut(history, 8, max_kept_tokens=2_000) == len(history)  # the last exchange alone is too big
    short = turn(1, size=40) + turn(2, size=40)
    assert fitting_cut(short, 8, max_kept_tokens=0) == 4
    assert fitting_cut(short, 8, max_kept_tokens=40) == 2
    for budget in range(0, 5000, 250):
        cut = fitting_cut(history, 3, budget)
        assert cut == len(history) or history[cut].role == "user"
        assert repair_history(history[cut:]) == history[cut:]


def test_a_second_overflow_ends_the_turn_with_advice(tmp_path):
    store = seeded_store(tmp_path)
    old = store.sessions.load(KEY).messages
    llm = ScriptedLLM(overflow(), answer("S"), overflow())
    events = Collector()
    result = asyncio.run(make_agent(store, llm, tmp_path, keep_recent_messages=2).run_turn(KEY, "hi", events))

    assert result.stop_reason == "error" and len(llm.requests) == 3
    assert "even after the older conversation was summarised" in result.text
    assert "/new" in result.text and "agents.defaults.context_window" in result.text
    assert events.types()[-2:] == ["error", "final_answer"] and events.of("error")[0].message == result.text
    session = store.sessions.load(KEY)
    assert session.summary == "S"  # the compaction itself stands: it lost nothing
    assert session.messages == old[-2:] + failed("hi")
    assert transcript_of(store) == [Message(role="user", content="hi"), failed("hi")[1]]


def test_a_failed_compaction_ends_the_turn_and_keeps_the_history(tmp_path):
    store = seeded_store(tmp_path, summary="old summary")
    old = store.sessions.load(KEY).messages
    llm = ScriptedLLM(overflow(), RetryableError("summariser timed out"))
    result = asyncio.run(make_agent(store, llm, tmp_path, keep_recent_messages=2).run_turn(KEY, "hi"))

    assert result.stop_reason == "error"
    assert "summariser timed out" in result.text and "kept as it was" in result.text and "/new" in result.text
    session = store.sessions.load(KEY)
    assert session.summary == "old summary"
    assert session.messages == old + failed("hi")


def test_a_store_failure_while_compacting_ends_the_turn_and_keeps_the_history(tmp_path):
    inner = seeded_store(tmp_path, summary="old summary")
    old = inner.sessions.load(KEY).messages
    store = RecordingStore(inner, fail={"sessions.compact"})
    llm = ScriptedLLM(overflow(), answer("new summary"))
    result = asyncio.run(make_agent(store, llm, tmp_path, keep_recent_messages=2).run_turn(KEY, "hi"))

    assert result.stop_reason == "error" and len(llm.requests) == 2
    assert "sessions.compact failed" in result.text and "kept as it was" in result.text
    session = inner.sessions.load(KEY)
    assert (session.summary, session.messages) == ("old summary", old + failed("hi"))


def test_a_turn_too_big_on_its_own_is_not_retried(tmp_path):
    store = file_store(tmp_path)  # no stored history to summarise
    llm = ScriptedLLM(overflow())
    result = asyncio.run(make_agent(store, llm, tmp_path).run_turn(KEY, "x" * 5000))
    assert result.stop_reason == "error" and len(llm.requests) == 1
    assert "no older conversation left to summarise" in result.text


def test_overflow_after_a_tool_round_keeps_the_pairs_in_the_retry(tmp_path):
    store = seeded_store(tmp_path)
    old = store.sessions.load(KEY).messages
    tools = FunctionRegistry(echo=echo)
    llm = ScriptedLLM(calls(("echo", {"n": 1})), overflow(), answer("S"), answer("done"))
    result = asyncio.run(make_agent(store, llm, tmp_path, tools, keep_recent_messages=2).run_turn(KEY, "use it"))

    assert (result.text, result.tool_calls) == ("done", 1)
    assert tools.executed == [("echo", {"n": 1})]  # the tool is not run again
    overflowed, retry = llm.requests[1], llm.requests[3]
    produced = transcript_of(store)
    assert [m.role for m in produced] == ["user", "assistant", "tool", "assistant"]
    assert overflowed.messages[-3:] == retry.messages[-3:] == produced[:3]
    assert retry.messages[1:] == old[-2:] + produced[:3]
    session = store.sessions.load(KEY)
    assert session.summary == "S"
    assert session.messages == old[-2:] + produced
    assert repair_history(session.messages) == session.messages


def test_other_errors_mentioning_context_are_not_treated_as_overflow(tmp_path):
    store = seeded_store(tmp_path, summary="kept")
    error = AuthenticationError("invalid token: the context length of your key's plan was exceeded", status=401)
    llm = ScriptedLLM(error)
    result = asyncio.run(make_agent(store, llm, tmp_path, keep_recent_messages=2).run_turn(KEY, "hi"))
    assert result.stop_reason == "error" and result.text == str(error)
    assert len(llm.requests) == 1
    assert store.sessions.load(KEY).summary == "kept"


def test_the_turn_time_limit_covers_the_compaction(tmp_path):
    store = seeded_store(tmp_path, summary="kept")
    old = store.sessions.load(KEY).messages
    llm = ScriptedLLM(overflow(), Sleep(60, answer("too late")))
    agent = make_agent(store, llm, tmp_path, keep_recent_messages=2, turn_timeout_seconds=0.2)
    result = asyncio.run(agent.run_turn(KEY, "hi"))
    assert result.stop_reason == "time_limit"
    session = store.sessions.load(KEY)
    assert session.summary == "kept"
    assert session.messages[: len(old)] == old and session.messages[len(old)].content == "hi"


def test_a_request_too_large_for_the_window_names_the_larger_part():
    settings, big, small = AgentDefaults(), "word " * 30_000, [Message(role="user", content="summarize")]
    instructions_too_long = too_large(big, small, settings)
    assert instructions_too_long is not None and instructions_too_long.startswith("The system prompt is too long")
    message_too_long = too_large("You are terse.", [Message(role="user", content=big)], settings)
    assert message_too_long is not None and message_too_long.startswith("Your message is too long")
    assert too_large("You are terse.", small, settings) is None
