"""A secret the model streams in two pieces is replaced whole (issue 36): the web chat's stream and the
OpenAI stream sent it in clear, Telegram's edits showed its first 12 characters. Every split offset."""

from __future__ import annotations

import asyncio
import base64
import json

import httpx
import openai
import pytest

from picoora.agent.events import FinalAnswer, TokenEvent, ToolCallStarted
from picoora.outward import Outward
from picoora.secrets import REDACTED, StreamScrubber
from tests.fakes.gateway_kit import TOKEN, RunningGateway, gateway_config
from tests.fakes.ollama_server import FakeOllama, Reply

SECRET = 'sk-fake"quoted/key-0123456789'  # JSON escapes the quote: its JSON form differs from it
BEFORE, AFTER = "the key is ", " and that is all."


def _split(text: str, offset: int) -> list[str]:
    return [text[:offset], text[offset:]]


@pytest.mark.parametrize("form", [SECRET, json.dumps(SECRET)[1:-1], base64.b64encode(SECRET.encode()).decode()])
def test_every_split_of_every_form_is_replaced_whole(form):
    text = BEFORE + form + AFTER
    for offset in range(len(text) + 1):
        scrubber = StreamScrubber([SECRET])
        sent = [scrubber.feed(piece) for piece in _split(text, offset)] + [scrubber.flush()]
        whole = "".join(sent)
        assert REDACTED in whole and SECRET not in whole and form not in whole, offset
        assert whole.startswith(BEFORE[:-1]) and whole.endswith(AFTER)


def test_text_that_cannot_start_a_secret_is_not_held_back():
    scrubber = StreamScrubber([SECRET])
    assert scrubber.feed("hello ") == "hello "
    assert scrubber.feed("sk-f") == ""  # may be the secret's start: held until the next piece says
    assert scrubber.feed("ine") == "sk-fine"


def test_the_outward_sink_holds_a_split_secret_and_sends_the_rest_before_the_next_event():
    for offset in range(len(SECRET) + 1):
        sent: list = []
        sink = Outward([SECRET]).sink(sent.append)
        pieces = _split(BEFORE + SECRET, offset) + [AFTER]
        events = [TokenEvent("s", text=p, seq=i + 1) for i, p in enumerate(pieces)]
        events += [ToolCallStarted("s", call_id="c", name="exec", seq=4), FinalAnswer("s", text="done", seq=5)]
        for event in events:
            asyncio.run(sink(event))
        tokens = "".join(e.text for e in sent if isinstance(e, TokenEvent))
        assert tokens == BEFORE + REDACTED + AFTER, offset
        assert isinstance(sent[-1], FinalAnswer) and isinstance(sent[-2], ToolCallStarted)
        assert [e.seq for e in sent] == list(range(1, len(sent) + 1))  # ids stay unique and in order


def test_tool_call_arguments_are_scrubbed_in_events_and_results():
    """The web chat shows a call's arguments; an OpenAI client receives its own tools' calls."""
    from picoora.agent import TurnResult
    from picoora.llm.base import Usage
    from picoora.messages import ToolCall

    outward = Outward([SECRET])
    arguments = {"q": f"find {SECRET}", "list": [SECRET], SECRET: 1}
    clean = {"q": f"find {REDACTED}", "list": [REDACTED], REDACTED: 1}
    started = outward.event(ToolCallStarted("s", call_id="c", name="lookup", arguments=arguments))
    assert started.arguments == clean and arguments["q"] == f"find {SECRET}"  # a copy: the loop's call is kept
    calls = [ToolCall("c", "lookup", arguments)]
    final = outward.event(FinalAnswer("s", text="", stop_reason="tool_calls", calls=calls))
    assert final.calls[0].arguments == clean
    result = outward.result(TurnResult(text="", stop_reason="tool_calls", iterations=1, tool_calls=0, usage=Usage(),
                                       calls=calls))
    assert result.calls[0].arguments == clean


def _respond(body: dict) -> Reply:
    """'split N': the secret in two pieces, cut N characters into the text. 'call TOOL': a call of TOOL with
    the secret in its arguments, then (after its result) a plain answer."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return Reply(content="done")
    if last["content"].startswith("call "):
        return Reply(tool_calls=[(last["content"].split()[1], {"query": f"look up {SECRET}"})])
    offset = int(body["messages"][-1]["content"].split()[1])
    text = BEFORE + SECRET + AFTER
    return Reply(content=text, pieces=_split(text, offset))


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    import os

    home = tmp_path_factory.mktemp("picoora-home")
    old = os.environ.get("PICOORA_HOME")
    os.environ["PICOORA_HOME"] = str(home)
    try:
        with FakeOllama(responder=_respond) as fake:
            config = gateway_config(home, fake.url)
            config.providers.openai.api_key = SECRET
            with RunningGateway(config) as running:
                running.home = home
                yield running
    finally:
        if old is None:
            os.environ.pop("PICOORA_HOME", None)
        else:
            os.environ["PICOORA_HOME"] = old


OFFSETS = range(len(BEFORE), len(BEFORE) + len(SECRET) + 1)


def test_the_web_chat_stream_never_carries_a_split_secret(gw):
    with httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as http:
        for offset in OFFSETS:
            with http.stream("POST", "/v1/chat", json={"session_id": f"s{offset}", "text": f"split {offset}",
                                                       "stream": True}) as response:
                body = "".join(response.iter_text())
            tokens = "".join(json.loads(line[6:])["text"] for line in body.splitlines()
                             if line.startswith("data: ") and '"type": "token"' in line)
            assert SECRET[:6] not in body and tokens == BEFORE + REDACTED + AFTER, offset


def test_the_openai_stream_never_carries_a_split_secret(gw):
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key=TOKEN, timeout=30, max_retries=0)
    for offset in OFFSETS:
        chunks = list(client.chat.completions.create(
            model="picoora", stream=True, messages=[{"role": "user", "content": f"split {offset}"}]))
        content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert content == BEFORE + REDACTED + AFTER, offset


def test_the_transcript_and_the_history_api_hold_no_secret(gw):
    """The stored transcript and the session history API returned the secret raw."""
    with httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as http:
        http.post("/v1/chat", json={"session_id": "kept", "text": f"split {len(BEFORE) + 5}"}).raise_for_status()
        history = http.get("/v1/sessions/web:kept").json()
    answers = [e["message"]["content"] for e in history["entries"] if e["message"]["role"] == "assistant"]
    assert answers == [BEFORE + REDACTED + AFTER]
    stored = [path for path in gw.home.rglob("*") if path.is_file()]
    assert any("transcripts" in path.parts for path in stored)  # the transcripts are among them
    assert not any(SECRET.encode() in path.read_bytes() for path in stored)


def _client_tool() -> dict:
    parameters = {"type": "object", "properties": {"query": {"type": "string"}}}
    return {"type": "function", "function": {"name": "lookup", "description": "Look up.", "parameters": parameters}}


@pytest.mark.parametrize("stream", [False, True])
def test_the_openai_endpoint_hands_back_tool_calls_without_the_secret(gw, stream):
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key=TOKEN, timeout=30, max_retries=0)
    request = {"model": "picoora", "messages": [{"role": "user", "content": "call lookup"}], "tools": [_client_tool()]}
    if stream:
        chunks = list(client.chat.completions.create(stream=True, **request))
        calls = [call for c in chunks if c.choices for call in c.choices[0].delta.tool_calls or []]
    else:
        calls = client.chat.completions.create(**request).choices[0].message.tool_calls or []
    assert [json.loads(call.function.arguments) for call in calls] == [{"query": f"look up {REDACTED}"}]


def test_the_responses_endpoint_hands_back_tool_calls_without_the_secret(gw):
    with httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as http:
        response = http.post("/v1/responses", json={"model": "picoora", "input": "call lookup", "tools": [
            {"type": "function", "name": "lookup", "parameters": {"type": "object"}}]})
    calls = [item for item in response.json()["output"] if item["type"] == "function_call"]
    assert [json.loads(call["arguments"]) for call in calls] == [{"query": f"look up {REDACTED}"}]


def test_the_web_chat_shows_a_tool_call_without_the_secret_and_the_tool_refuses_it(gw):
    with httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as http:
        with http.stream("POST", "/v1/chat", json={"session_id": "tool", "text": "call web_search",
                                                   "stream": True}) as response:
            body = "".join(response.iter_text())
    events = [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")]
    started = [e for e in events if e["type"] == "tool_call_started"]
    finished = [e for e in events if e["type"] == "tool_call_finished"]
    assert [e["arguments"] for e in started] == [{"query": f"look up {REDACTED}"}]
    assert not finished[0]["ok"] and "hold a secret" in finished[0]["result"]
    assert SECRET[:6] not in body
