"""Compaction: where it cuts, what it folds, what it keeps, and that a failure loses nothing."""

import asyncio

from picoora.agent.compaction import SUMMARISER_PROMPT, compact, compaction_cut, needs_compaction
from picoora.agent.repair import repair_history
from picoora.config import AgentDefaults
from picoora.llm.base import RetryableError
from picoora.messages import Message, ToolCall
from picoora.store.aio import AsyncStore
from picoora.tools.base import ToolResult
from tests.fakes.agent_kit import Collector, FunctionRegistry, file_store, make_agent
from tests.fakes.scripted_llm import ScriptedLLM, answer, calls

KEY = "cli:long"


def turn(i, with_tool=False):
    msgs = [Message(role="user", content=f"question {i}")]
    if with_tool:
        msgs += [
            Message(role="assistant", tool_calls=[ToolCall(f"c{i}", "echo", {"i": i})]),
            Message(role="tool", content=f"result {i}", tool_call_id=f"c{i}", name="echo"),
        ]
    return msgs + [Message(role="assistant", content=f"answer {i}")]


async def turn_then_idle(agent, key, text, on_event=None):
    """One turn, then wait for the compaction it started (it runs after the answer, in the background)."""
    result = await agent.run_turn(key, text, on_event=on_event)
    await agent.wait_idle()
    return result


def is_summary_request(messages):
    return messages[0].content == SUMMARISER_PROMPT


def chatty_llm(summary_text="SUMMARY"):
    """Answers turns with 'ok'; answers summary requests with ``summary_text`` (numbered when a list)."""

    def respond(messages):
        if is_summary_request(messages):
            return answer(summary_text)
        return answer(f"ok {len(messages)}")

    return ScriptedLLM(respond=respond)


def summary_requests(llm):
    return [r for r in llm.requests if is_summary_request(r.messages)]


def test_cut_falls_on_a_user_message_and_never_splits_pairs():
    history = turn(1) + turn(2, with_tool=True) + turn(3) + turn(4, with_tool=True)
    for keep in range(2, len(history)):
        cut = compaction_cut(history, keep)
        if cut:
            assert history[cut].role == "user"
            assert repair_history(history[cut:]) == history[cut:]
            assert repair_history(history[:cut]) == history[:cut]
            assert len(history) - cut >= keep or all(m.role != "user" for m in history[1:cut])


def test_cut_keeps_at_least_the_recent_messages_when_it_can():
    history = turn(1) + turn(2) + turn(3) + turn(4, with_tool=True)  # 10 messages; the last turn has 4
    assert compaction_cut(history, 5) == 4  # back to "question 3", keeping 6
    assert compaction_cut(history, 4) == 6


def test_cut_moves_forward_past_one_long_turn_and_is_zero_when_short():
    long_turn = [Message(role="user", content="big")] + turn(0, with_tool=True)[1:3] * 5
    history = long_turn + turn(9)
    assert compaction_cut(history, 4) == len(long_turn)
    assert compaction_cut(turn(1), 8) == 0
    assert compaction_cut(turn(1, with_tool=True), 2) == 0  # no user message after the first


def test_thresholds_by_count_and_by_token_share():
    settings = AgentDefaults(summarize_message_threshold=10, context_window=1024, summarize_token_percent=50)
    assert not needs_compaction(turn(1) * 2, "", settings)
    assert needs_compaction(turn(1) * 6, "", settings)
    big = [Message(role="user", content="w" * 2100)]  # ~525 tokens > 50% of 1024
    assert needs_compaction(big, "", settings)
    assert needs_compaction([], "s" * 2100, settings)


def test_long_session_is_summarised_after_the_answer_and_the_transcript_stays_whole(tmp_path):
    store, llm, events = file_store(tmp_path), chatty_llm("They talked about questions 1 to 3."), Collector()
    agent = make_agent(store, llm, tmp_path, summarize_message_threshold=6, keep_recent_messages=2)
    for i in range(4):
        asyncio.run(turn_then_idle(agent, KEY, f"question {i}", on_event=events))
    session = store.sessions.load(KEY)
    assert session.summary == "They talked about questions 1 to 3."
    assert session.messages[0].role == "user" and len(session.messages) < 8
    assert len(store.transcripts.read(KEY)) == 8  # every original message
    assert [e.message.content for e in store.transcripts.read(KEY)][::2] == [f"question {i}" for i in range(4)]
    request = summary_requests(llm)[0]
    assert request.tools is None
    assert "user: question 0" in request.messages[1].content
    assert any("Summarised" in e.text for e in events.of("compaction"))
    compaction = events.of("compaction")[0]
    answer_of_that_turn = next(e for e in events.of("final_answer") if e.turn_id == compaction.turn_id)
    assert compaction.seq > answer_of_that_turn.seq  # the answer came first; the summary never delays it
    # The summary reaches the next turn's system prompt.
    asyncio.run(turn_then_idle(agent, KEY, "and now?"))
    assert "They talked about questions 1 to 3." in llm.requests[-1].system


def test_existing_summary_is_folded_in_not_replaced(tmp_path):
    store = file_store(tmp_path)
    for i in range(6):
        store.sessions.append(KEY, turn(i))
    store.sessions.set_summary(KEY, "Earlier: the user's cat is called Miso.")
    llm = chatty_llm("Merged summary")
    asyncio.run(compact(AsyncStore(store), llm, KEY, AgentDefaults(keep_recent_messages=2)))
    assert "Earlier: the user's cat is called Miso." in summary_requests(llm)[0].messages[1].content
    assert store.sessions.load(KEY).summary == "Merged summary"


def test_a_long_older_part_is_folded_chunk_by_chunk_carrying_the_summary(tmp_path):
    store = file_store(tmp_path)
    for i in range(12):
        long_question = Message(role="user", content=f"q{i} " + "z" * 1500)
        store.sessions.append(KEY, [long_question, Message(role="assistant", content=f"a{i}")])
    folds = iter(f"summary after fold {n}" for n in range(1, 100))
    llm = ScriptedLLM(respond=lambda messages: answer(next(folds)))
    folded = asyncio.run(compact(AsyncStore(store), llm, KEY,
                                 AgentDefaults(context_window=2048, keep_recent_messages=2)))
    requests = summary_requests(llm)
    assert folded == 22 and len(requests) > 1
    for n, request in enumerate(requests[1:], 1):
        assert f"summary after fold {n}" in request.messages[1].content  # each fold starts from the last
    assert store.sessions.load(KEY).summary == f"summary after fold {len(requests)}"
    kept = store.sessions.load(KEY).messages
    assert len(kept) == 2 and kept[0].content.startswith("q11 ") and kept[1].content == "a11"


def test_tool_pairs_survive_compaction_intact(tmp_path):
    def echo(args, ctx):
        """Echo."""
        return ToolResult("echoed")

    def respond(messages):
        if is_summary_request(messages):
            return answer("S")
        if messages[-1].role == "user":
            return calls(("echo", {"n": len(messages)}))
        return answer("done")

    store = file_store(tmp_path)
    agent = make_agent(store, ScriptedLLM(respond=respond), tmp_path, FunctionRegistry(echo=echo),
                       summarize_message_threshold=5, keep_recent_messages=3)
    for i in range(5):
        asyncio.run(turn_then_idle(agent, KEY, f"turn {i}"))
    kept = store.sessions.load(KEY).messages
    assert store.sessions.load(KEY).summary == "S"
    assert kept[0].role == "user"
    assert repair_history(kept) == kept


def test_failed_summary_keeps_the_history_and_says_so(tmp_path):
    store, events = file_store(tmp_path), Collector()

    def respond(messages):
        if is_summary_request(messages):
            raise RetryableError("summariser timed out")
        return answer("fine")

    agent = make_agent(store, ScriptedLLM(respond=respond), tmp_path, summarize_message_threshold=4,
                       keep_recent_messages=2)
    store.sessions.append(KEY, turn(1) + turn(2))
    store.sessions.set_summary(KEY, "old summary")
    result = asyncio.run(turn_then_idle(agent, KEY, "third", on_event=events))
    assert result.text == "fine"
    session = store.sessions.load(KEY)
    assert session.summary == "old summary" and len(session.messages) == 6
    assert events.events[-1].type == "compaction" and not events.events[-1].ok
    assert "summariser timed out" in events.events[-1].text and "kept as it was" in events.events[-1].text


def test_empty_summary_counts_as_a_failure(tmp_path):
    store = file_store(tmp_path)
    store.sessions.append(KEY, turn(1) + turn(2) + turn(3))
    llm = chatty_llm("   ")
    agent = make_agent(store, llm, tmp_path, summarize_message_threshold=4, keep_recent_messages=2)
    events = Collector()
    asyncio.run(turn_then_idle(agent, KEY, "more", on_event=events))
    assert "empty summary" in events.of("compaction")[0].text
    assert len(store.sessions.load(KEY).messages) == 8


def test_cancelled_turns_are_folded_away_but_never_summarised(tmp_path):
    from dataclasses import replace

    store = file_store(tmp_path)
    cancelled = [replace(m, cancelled=True) for m in [Message(role="user", content="secret plan, cancelled"),
                                                       Message(role="assistant", content="[cancelled]")]]
    store.sessions.append(KEY, cancelled + turn(1) + cancelled + turn(2))
    llm = chatty_llm("Merged summary")
    folded = asyncio.run(compact(AsyncStore(store), llm, KEY, AgentDefaults(keep_recent_messages=2)))
    assert folded == 6
    [request] = summary_requests(llm)
    assert "question 1" in request.messages[1].content and "secret plan" not in request.messages[1].content
    assert [m.content for m in store.sessions.load(KEY).messages] == ["question 2", "answer 2"]

    only_cancelled = file_store(tmp_path / "other")
    only_cancelled.sessions.append(KEY, cancelled + turn(3))
    idle = chatty_llm()
    assert asyncio.run(compact(AsyncStore(only_cancelled), idle, KEY, AgentDefaults(keep_recent_messages=2))) == 2
    assert summary_requests(idle) == []  # nothing left to summarise: no model call
    assert only_cancelled.sessions.load(KEY).summary == ""
