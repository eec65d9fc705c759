"""Chat commands and answers streamed by edits, through the gateway's runtime with the fake Bot API and the
fake model: ``/new``, ``/model``, ``/help``, ``/whoami`` and ``/stop`` never reach the model, and a long
answer grows in one Telegram message, edited within the platform's rate, ending as the whole answer."""

from __future__ import annotations

import asyncio

import pytest

from picoora.assistant import build_assistant
from picoora.config import Config, save_config
from picoora.gateway.channels.links import COMMANDS
from picoora.gateway.runtime.commands import help_text, parse_command
from picoora.gateway.runtime.services import NOTHING_TO_STOP, STOPPED_REPLY, GatewayRuntime
from picoora.gateway.runtime.streaming import EditedReply
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.fakes.telegram_server import FakeTelegram

TOKEN = "654321:another-FAKE-token-xyz"
LONG = ("Here is a fairly long answer that arrives word by word, so the chat shows it growing in one message "
        "instead of a long wait and then all of it at once.")

LEAK_HEAD = "Here is what you asked for, the key: "
LEAK = f"{LEAK_HEAD}{TOKEN} ok"  # split 12 characters into the token: what round three saw in an edit


def respond(body: dict) -> Reply:
    last = body["messages"][-1]["content"]
    if last == "slow":
        return Reply(content="a slow answer that takes its time", piece_delay=1.0)
    if last == "long":
        return Reply(content=LONG, piece_delay=0.15)
    if last == "leak":  # the bot token in two pieces, an edit's time apart
        cut = len(LEAK_HEAD) + 12
        return Reply(content=LEAK, pieces=[LEAK[:cut], LEAK[cut:]], piece_delay=2.0)
    return Reply(content=f"model: {last}")


def run_chat(home, steps, *, allow_from=("7", "*"), models=("qwen3:latest",), until=None, before=None):
    """Start the runtime, play ``steps`` ((user id, text) or a pause in seconds), wait for ``until``;
    ``before(assistant)`` is awaited first."""
    with FakeOllama(responder=respond, models=models) as ollama, FakeTelegram(TOKEN) as telegram:
        config = Config.model_validate({
            "providers": {"ollama": {"api_base": ollama.url, "max_retries": 0}},
            "memory": {"embedder": "none"},
            "channels": {"telegram": {"enabled": True, "token": TOKEN, "allow_from": list(allow_from),
                                      "api_base": telegram.url}},
        })
        save_config(config)

        async def scenario():
            async with build_assistant(config) as assistant:
                if before is not None:
                    await before(assistant)
                runtime = GatewayRuntime(assistant)
                await runtime.start()
                for step in steps:
                    if isinstance(step, (int, float)):
                        await asyncio.sleep(step)
                    else:
                        telegram.push(*step)
                for _ in range(300):
                    if until(telegram):
                        break
                    await asyncio.sleep(0.05)
                await runtime.stop_intake()
                await runtime.turns.drain(5)
                await runtime.close()
                return assistant

        assistant = asyncio.run(scenario())
        return telegram, ollama, assistant


def said(telegram, chat: int, count: int):
    return lambda t: len(t.texts(chat)) >= count


def test_commands_are_parsed_only_when_they_are_commands():
    assert parse_command("/new") == ("new", "")
    assert parse_command("/model@pico_bot  llama3.2 ") == ("model", "llama3.2")
    assert parse_command("/MODEL x") == ("model", "x")
    assert parse_command("/usr is full") is None and parse_command("new") is None
    assert parse_command("/path/to/file") is None


def test_the_go_chat_commands_are_aliases():
    assert parse_command("/show model") == parse_command("/list models") == ("model", "")
    assert parse_command("/switch model to llama3.2") == ("model", "llama3.2")
    assert parse_command("/show channel") == ("whoami", "")
    for other in ("/show", "/list channels", "/switch channel to slack", "/switch model llama3.2"):
        assert parse_command(other) == ("help", ""), other
    assert "/switch model to NAME" in help_text()


def test_switch_model_to_switches_this_chat(isolated_home):
    telegram, ollama, _ = run_chat(isolated_home, [(7, "/switch model to llama3.2"), (7, "which?")],
                                   models=("qwen3:latest", "llama3.2:latest"), until=said(None, 7, 2))
    assert telegram.texts(7)[0] == "This chat now answers with ollama/llama3.2."
    assert ollama.requests[-1]["model"] == "llama3.2"


def test_new_starts_afresh_and_no_command_reaches_the_model(isolated_home):
    telegram, ollama, assistant = run_chat(isolated_home, [(7, "hello"), 1.0, (7, "/new"), (7, "/help"),
                                                           (7, "after")], until=said(None, 7, 4))
    texts = telegram.texts(7)
    assert texts[0] == "model: hello" and texts[1].startswith("Started a new conversation")
    assert "/whoami" in texts[2] and texts[3] == "model: after"
    last_request = [m["content"] for m in ollama.requests[-1]["messages"][1:]]
    assert last_request == ["after"]  # the session started afresh: "hello" is gone
    assert not any("/new" in str(r) or "/help" in str(r) for r in ollama.requests)


def test_each_message_is_read_for_a_command_once_as_it_comes_in(isolated_home, monkeypatch):
    from picoora.gateway.runtime import services

    read: list[str] = []

    def reading(text: str) -> tuple[str, str] | None:
        read.append(text)
        return parse_command(text)

    monkeypatch.setattr(services, "parse_command", reading)
    telegram, _, _ = run_chat(isolated_home, [(7, "/help"), (7, "hello")], until=said(None, 7, 2))
    assert "/whoami" in telegram.texts(7)[0] and telegram.texts(7)[1] == "model: hello"
    assert read == ["/help", "hello"]


def test_the_commands_are_registered_with_telegram(isolated_home):
    telegram, _, _ = run_chat(isolated_home, [(7, "hi")], until=said(None, 7, 1))
    assert [c["command"] for c in telegram.commands] == list(COMMANDS)


def test_model_shows_and_the_owner_switches_but_a_guest_cannot(isolated_home):
    telegram, ollama, _ = run_chat(
        isolated_home, [(7, "/model"), (7, "/model llama3.2"), (7, "which?"), (8, "/model llama3.2")],
        models=("qwen3:latest", "llama3.2:latest"), until=lambda t: len(t.texts(7)) >= 3 and t.texts(8))
    shown, switched, answered = telegram.texts(7)
    assert "ollama/qwen3:latest" in shown and switched == "This chat now answers with ollama/llama3.2."
    assert ollama.requests[-1]["model"] == "llama3.2" and answered == "model: which?"
    assert telegram.texts(8) == ["Only the owner can switch the model."]


def test_a_model_that_is_not_there_is_refused_by_model(isolated_home):
    telegram, _, _ = run_chat(isolated_home, [(7, "/model nope")], until=said(None, 7, 1))
    assert telegram.texts(7)[0].startswith("I kept the model as it was") and "ollama pull nope" in telegram.texts(7)[0]


def test_whoami_tells_the_owner_from_a_guest(isolated_home):
    telegram, _, _ = run_chat(isolated_home, [(7, "/whoami"), (8, "/whoami")],
                              until=lambda t: t.texts(7) and t.texts(8))
    assert telegram.texts(7)[0].startswith("You are the owner (telegram:7)")
    guest = telegram.texts(8)[0]
    assert guest.startswith("You are a guest (telegram:8") and "exec" not in guest


def test_whoami_offers_search_docs_once_there_is_a_document_even_before_any_turn(isolated_home):
    async def add_manual(assistant):
        await assistant.add_document_upload("boiler.md", b"# Boiler\nError E42 means the pressure is low.")

    telegram, _, _ = run_chat(isolated_home, [(7, "/whoami")], until=lambda t: t.texts(7), before=add_manual)
    assert "search_docs" in telegram.texts(7)[0]


def test_stop_cancels_the_running_answer_and_says_so(isolated_home):
    telegram, ollama, assistant = run_chat(isolated_home, [(7, "slow"), 1.5, (7, "/stop"), 0.5, (7, "/stop")],
                                           until=said(None, 7, 2))
    assert STOPPED_REPLY in telegram.texts(7) and NOTHING_TO_STOP in telegram.texts(7)
    assert not any("a slow answer that takes its time" == t for t in telegram.texts(7))


def test_a_long_answer_streams_into_one_message_by_edits(isolated_home):
    telegram, _, _ = run_chat(isolated_home, [(7, "long")],
                              until=lambda t: t.texts(7) and t.texts(7)[-1] == LONG)
    assert telegram.texts(7) == [LONG]  # one message, holding the whole answer
    assert 2 <= len(telegram.edits) <= 6  # about 3 s of streaming: edits at most once a second, then the final
    assert telegram.edits[-1]["text"] == LONG and telegram.edits[0]["text"].endswith(" …")


def test_a_secret_split_across_streamed_pieces_never_shows_in_an_edit(isolated_home):
    telegram, _, _ = run_chat(isolated_home, [(7, "leak")],
                              until=lambda t: t.edits and t.edits[-1]["text"].endswith(" ok"))
    shown = telegram.texts(7) + [edit["text"] for edit in telegram.edits]
    assert telegram.texts(7)[0].startswith(LEAK_HEAD.strip()) and telegram.edits[-1]["text"].startswith(LEAK_HEAD)
    assert not any(TOKEN[:12] in text for text in shown)


class RecordingChannel:
    name = "fake"

    def __init__(self):
        self.posted, self.edited, self.delivered = [], [], []

    def split(self, text):
        return [text[i:i + 50] for i in range(0, len(text), 50)] or [""]

    async def start_message(self, chat_id, text):
        self.posted.append(text)
        return "1"

    async def edit_message(self, chat_id, message_id, text, *, final):
        self.edited.append((text, final))

    async def deliver(self, chat_id, text):
        self.delivered.append(text)


def test_edits_are_throttled_and_the_final_answer_is_split(monkeypatch):
    from picoora.agent.events import TokenEvent, ToolCallStarted

    now = [0.0]
    channel = RecordingChannel()
    stream = EditedReply(channel, "c", interval=1.0, clock=lambda: now[0])

    async def play():
        for i in range(40):  # 40 tokens in 2 s: at most 2 previews after the post
            now[0] = i * 0.05
            await stream(TokenEvent("s", f"word{i} "))
            if i == 20:
                await stream(ToolCallStarted("s", "c1", "read_file", {}))
        return await stream.finish("A" * 120)

    assert asyncio.run(play()) is True
    assert len(channel.posted) == 1 and channel.posted[0].endswith(" …")
    previews = [text for text, final in channel.edited if not final]
    assert len(previews) <= 2 and all(len(p) <= 52 for p in previews)
    assert channel.edited[-1] == ("A" * 50, True) and channel.delivered == ["A" * 50, "A" * 20]


def test_a_stream_that_never_posted_leaves_delivery_to_the_caller():
    stream = EditedReply(RecordingChannel(), "c")
    assert asyncio.run(stream.finish("short")) is False


@pytest.mark.parametrize("text", ["/stop", "/new", "/whoami"])
def test_commands_from_strangers_get_only_a_pairing_code(isolated_home, text):
    telegram, ollama, _ = run_chat(isolated_home, [(9, text)], allow_from=("7",), until=said(None, 9, 1))
    assert "pair approve" in telegram.texts(9)[0] and not ollama.requests
