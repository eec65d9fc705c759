"""A turn on a conversation the client keeps (the OpenAI endpoint's): the client's history is what the model
sees, the transcript records the turn, and the session's stored history is neither read nor written."""

from __future__ import annotations

import asyncio

from picoora.agent.conversation import ClientConversation
from picoora.llm.base import DEFAULT_OPTIONS, CallOptions, ContextOverflowError, ProviderUnavailableError
from picoora.messages import Message
from tests.fakes.agent_kit import FunctionRegistry, file_store, make_agent
from tests.fakes.scripted_llm import ScriptedLLM, answer, calls

KEY = "openai:c1"
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}


def conversation(*messages: Message, system: str = "", tools=None, options=DEFAULT_OPTIONS) -> ClientConversation:
    last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
    query = [m.content for m in messages if m.role == "user"][-1]
    return ClientConversation(system=system, history=list(messages[:last + 1]), new=list(messages[last + 1:]),
                              query=query, tools=tools, options=options)


def ask(agent, conv: ClientConversation):
    return asyncio.run(agent.run_turn(KEY, conv.query, conversation=conv))


def test_the_clients_history_is_sent_and_only_the_new_messages_are_recorded(tmp_path):
    store = file_store(tmp_path)
    store.sessions.append(KEY, [Message("user", "server-side secret"), Message("assistant", "kept")])
    llm = ScriptedLLM(answer("fine"))
    conv = conversation(Message("user", "one"), Message("assistant", "two"), Message("user", "three"),
                        system="You are a pirate.")
    result = ask(make_agent(store, llm, tmp_path), conv)
    assert result.stop_reason == "answer" and result.usage.prompt_tokens > 0 and result.usage.completion_tokens > 0
    sent = llm.requests[0].messages
    assert sent[0].content.startswith("You are a pirate.")
    assert [(m.role, m.content) for m in sent[1:]] == [("user", "one"), ("assistant", "two"), ("user", "three")]
    assert "server-side secret" not in str(sent)
    assert [e.message.content for e in store.transcripts.read(KEY)] == ["three", "fine"]
    assert [m.content for m in store.sessions.load(KEY).messages] == ["server-side secret", "kept"]  # untouched


def test_client_tools_end_the_turn_with_the_calls_and_picooras_tools_are_not_offered(tmp_path):
    ran = []
    tools = FunctionRegistry(get_weather=lambda **kw: ran.append(kw) or "local result")
    llm = ScriptedLLM(calls(("get_weather", {"city": "Oslo"})))
    result = ask(make_agent(file_store(tmp_path), llm, tmp_path, tools),
                 conversation(Message("user", "weather?"), tools=[WEATHER]))
    assert result.stop_reason == "tool_calls" and [c.arguments for c in result.calls] == [{"city": "Oslo"}]
    assert ran == [] and llm.requests[0].tools == [WEATHER] and len(llm.requests) == 1


def test_options_reach_the_model_and_tool_choice_none_offers_nothing(tmp_path):
    llm = ScriptedLLM(answer("{}"))
    options = CallOptions(temperature=0.2, json_object=True, tool_choice="none")
    ask(make_agent(file_store(tmp_path), llm, tmp_path, FunctionRegistry(echo=lambda **kw: "x")),
        conversation(Message("user", "json please"), options=options))
    assert llm.requests[0].options == options and llm.requests[0].tools is None


def test_an_option_the_provider_cannot_honour_is_refused_before_anything_is_recorded(tmp_path):
    class NoJson(ScriptedLLM):
        @staticmethod
        def unsupported(options):
            return ("response_format", "no JSON mode") if options.json_object else None

    store, llm = file_store(tmp_path), NoJson()
    result = ask(make_agent(store, llm, tmp_path), conversation(Message("user", "hi"),
                                                                 options=CallOptions(json_object=True)))
    assert (result.stop_reason, result.param) == ("refused", "response_format")
    assert llm.requests == [] and store.transcripts.read(KEY) == []


def test_a_failed_turn_leaves_nothing_a_later_request_sees(tmp_path):
    store = file_store(tmp_path)
    llm = ScriptedLLM(ProviderUnavailableError("down"), answer("back"))
    agent = make_agent(store, llm, tmp_path)
    assert ask(agent, conversation(Message("user", "first try"))).stop_reason == "error"
    ask(agent, conversation(Message("user", "a new chat")))
    assert "first try" not in str(llm.requests[-1].messages)


def test_an_overflow_says_to_send_less_instead_of_compacting(tmp_path):
    llm = ScriptedLLM(ContextOverflowError("too long", status=400))
    result = ask(make_agent(file_store(tmp_path), llm, tmp_path), conversation(Message("user", "hi")))
    assert result.stop_reason == "error" and "send fewer or shorter messages" in result.text
    assert len(llm.requests) == 1  # no summary was asked for
