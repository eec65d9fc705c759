"""Approvals by buttons, answers streamed by edits and slash commands on Discord and Slack, through the
gateway's runtime with the fake model and each platform's fake (socket + HTTP API) over real sockets: the
owner's click decides (approve once, deny), a silence is a denial, a stranger's click changes nothing, a
long answer grows in one message within the platform's edit rate and ends complete and split, a 429 on an
edit is waited out, and a slash command is answered where it was run."""

from __future__ import annotations

import asyncio

import pytest
import yaml

from picoora.channel_registry import ChannelConfig, SlackChannelConfig
from picoora.config import Config, save_config
from picoora.gateway.channels.discord.channel import DiscordChannel
from picoora.gateway.channels.links import COMMANDS
from picoora.gateway.channels.slack.channel import SlackChannel
from picoora.gateway.channels.slack.format import SLACK_PIECE
from tests.cli_support import REPO
from tests.fakes.channel_kit import ChannelHarness, run_runtime, until, wait_for
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.fakes.slack_server import TEAM, FakeSlack

DISCORD_TOKEN = "ODk5.fake-discord-token.value"
# Words of 48 characters: a 3,919-character answer streams in 80 pieces (two messages on either platform).
LONG = " ".join(f"{i:02d}" + "x" * 46 for i in range(80))


def respond(body: dict) -> Reply:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return Reply(content=f"tool said: {last['content']}")
    if last["content"] == "long":
        return Reply(content=LONG, piece_delay=0.02)
    name = last["content"].split()[-1]
    return Reply(tool_calls=[("write_file", {"path": f"{name}.txt", "content": "hello"})])


class DiscordChat:
    """The owner is user 42 (DM channel 742); 61 is a guest; "5550001" a server channel."""

    name, owner, stranger, dm, room = "discord", "42", "61", "742", "5550001"
    limit = 2000

    def __init__(self) -> None:
        self.fake = FakeDiscord(DISCORD_TOKEN)

    def channel_config(self) -> dict:
        return {"token": DISCORD_TOKEN, "allow_from": [self.owner, "*"], "api_base": self.fake.url}

    def say(self, user: str, text: str, chat: str) -> None:
        if chat == self.dm:
            self.fake.dm(user, text)
        else:
            self.fake.mention(user, text, channel_id=chat)

    def buttons(self, chat: str) -> list[tuple[str, str]]:
        return self.fake.buttons(chat)

    def press(self, user: str, chat: str, choice: str) -> None:
        message, custom_id = next(b for b in self.buttons(chat) if b[1].endswith(f":{choice}"))
        self.fake.click(user, message, custom_id, guild=chat != self.dm)

    def texts(self, chat: str) -> list[str]:
        return self.fake.texts(chat)

    def refusals(self) -> list[str]:
        """What only a clicker saw (ephemeral answers)."""
        return [c["data"]["content"] for c in self.fake.callbacks if c["type"] == 4]

    def edits(self) -> list[str]:
        return [e["content"] for e in self.fake.edits]

    def within_edit_limit(self) -> bool:
        return self.fake.limited == 0  # the fake answers 429 to a sixth edit within 5 s, as Discord does

    def fail_next_write(self) -> None:
        self.fake.fail_next(429, retry_after=0.3)


class SlackChat:
    """The owner is U7 (DM "DU7"); U8 is a guest; "CGENERAL" a channel (its answers in the mention's thread)."""

    name, owner, stranger, dm, room = "slack", "U7", "U8", "DU7", "CGENERAL"
    limit = SLACK_PIECE

    def __init__(self) -> None:
        self.fake = FakeSlack()
        self.thread = ""

    def channel_config(self) -> dict:
        return {"token": self.fake.bot_token, "app_token": self.fake.app_token,
                "allow_from": [f"{TEAM}:{self.owner}", "*"], "api_base": self.fake.url}

    def say(self, user: str, text: str, chat: str) -> None:
        if chat == self.dm:
            self.fake.dm(user, text)
        else:
            self.thread = self.fake.mention(user, text, channel=chat)

    def buttons(self, chat: str) -> list[tuple[str, str]]:
        return self.fake.buttons(chat)

    def press(self, user: str, chat: str, choice: str) -> None:
        ts, action = next(b for b in self.buttons(chat) if b[1].endswith(f":{choice}"))
        self.fake.press(user, ts, action)

    def texts(self, chat: str) -> list[str]:
        return [str(m.get("text")) for m in self.fake.messages.values() if m["channel"] == chat]

    def refusals(self) -> list[str]:
        return [e["text"] for e in self.fake.ephemeral]

    def edits(self) -> list[str]:
        return [u["text"] for u in self.fake.updates]

    def within_edit_limit(self) -> bool:
        """About one chat.update a second per message: previews at least 1 s apart (the final follows at once)."""
        times = [u["at"] for u in self.fake.updates[:-1]]
        return all(later - earlier >= 1.0 for earlier, later in zip(times, times[1:], strict=False))

    def fail_next_write(self) -> None:
        self.fake.fail_next(429, retry_after=1)


PLATFORMS = [DiscordChat, SlackChat]


def scenario(platform, play, *, timeout=30.0):
    """Run the runtime with ``platform`` as the only channel; ``play(chat, workspace)`` drives it."""
    chat = platform()
    with FakeOllama(responder=respond) as ollama, chat.fake:
        config = Config.model_validate({
            "providers": {"ollama": {"api_base": ollama.url, "max_retries": 0}},
            "memory": {"embedder": "none"},
            "channels": {chat.name: {"enabled": True, **chat.channel_config()}},
            "tools": {"approvals": {"timeout_seconds": timeout}},
        })
        save_config(config)
        return run_runtime(config, lambda workspace: play(chat, workspace)), chat



def answered(chat, where):
    return lambda: any(t.startswith("tool said") for t in chat.texts(where))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_owners_click_approves_and_the_question_shows_the_outcome_without_buttons(platform, isolated_home):
    async def play(chat, workspace):
        chat.say(chat.owner, "please write first", chat.dm)
        assert await until(lambda: chat.buttons(chat.dm))
        assert not (workspace / "first.txt").exists()  # nothing ran before the click
        chat.press(chat.owner, chat.dm, "once")
        assert await until(answered(chat, chat.dm))
        assert await until(lambda: any("approved once" in t or "→ Approve once" in t for t in chat.texts(chat.dm)))
        return workspace

    workspace, chat = scenario(platform, play)
    assert (workspace / "first.txt").read_text() == "hello"
    assert chat.buttons(chat.dm) == []  # the buttons are gone
    assert any("wants to run write_file" in t and '"path": "first.txt"' in t for t in chat.texts(chat.dm))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_denial_is_told_to_the_model_and_nothing_runs(platform, isolated_home):
    async def play(chat, workspace):
        chat.say(chat.owner, "please write second", chat.dm)
        assert await until(lambda: chat.buttons(chat.dm))
        chat.press(chat.owner, chat.dm, "deny")
        assert await until(answered(chat, chat.dm))
        return workspace

    workspace, chat = scenario(platform, play)
    assert not (workspace / "second.txt").exists()
    assert any("the owner denied this write_file call" in t for t in chat.texts(chat.dm))
    assert chat.buttons(chat.dm) == []


@pytest.mark.parametrize("platform", PLATFORMS)
def test_no_click_in_time_is_a_denial(platform, isolated_home):
    async def play(chat, workspace):
        chat.say(chat.owner, "please write third", chat.dm)
        assert await until(answered(chat, chat.dm))
        assert await until(lambda: not chat.buttons(chat.dm))
        return workspace

    workspace, chat = scenario(platform, play, timeout=0.5)
    assert not (workspace / "third.txt").exists()
    assert any("did not answer within 0.5 s" in t for t in chat.texts(chat.dm))
    assert any("not answered within 0.5 s" in t for t in chat.texts(chat.dm))  # the question says so


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_strangers_click_changes_nothing_and_only_they_are_told(platform, isolated_home):
    async def play(chat, workspace):
        chat.say(chat.owner, "please write fourth", chat.room)  # asked in a shared room: the guest sees it
        assert await until(lambda: chat.buttons(chat.room))
        chat.press(chat.stranger, chat.room, "once")
        assert await until(chat.refusals)
        ran_early, still_asking = (workspace / "fourth.txt").exists(), bool(chat.buttons(chat.room))
        chat.press(chat.owner, chat.room, "deny")
        assert await until(answered(chat, chat.room))
        return ran_early, still_asking, workspace

    (ran_early, still_asking, workspace), chat = scenario(platform, play)
    assert not ran_early and still_asking and not (workspace / "fourth.txt").exists()
    assert chat.refusals() == ["Only the owner can answer this."]
    assert any("the owner denied" in t for t in chat.texts(chat.room))


def streamed(chat, where):
    return lambda: " ".join(chat.texts(where)) == LONG


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_long_answer_streams_by_edits_within_the_rate_and_ends_complete_and_split(platform, isolated_home):
    async def play(chat, workspace):
        chat.say(chat.owner, "long", chat.dm)
        assert await until(streamed(chat, chat.dm))

    _, chat = scenario(platform, play)
    first, second = chat.texts(chat.dm)  # the streamed message, then the rest of the answer
    assert len(first) <= chat.limit and len(second) <= chat.limit
    edits = chat.edits()
    assert len(edits) >= 2 and edits[0].endswith(" …") and edits[-1] == first
    assert chat.within_edit_limit()


@pytest.mark.slow  # ~2 s each: a stream long enough to be edited
@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_429_on_an_edit_is_waited_out_and_the_answer_still_arrives_whole(platform, isolated_home):
    async def play(chat, workspace):
        chat.say(chat.owner, "long", chat.dm)
        assert await until(lambda: chat.texts(chat.dm))  # the stream's message is posted: the next write is an edit
        chat.fail_next_write()
        assert await until(streamed(chat, chat.dm))

    _, chat = scenario(platform, play)
    assert not chat.fake.failures and chat.edits()[-1] == chat.texts(chat.dm)[0]


def test_discord_registers_the_slash_commands_and_answers_one_in_its_thinking_message(isolated_home):
    async def play(chat, workspace):
        assert await until(lambda: chat.fake.commands)
        chat.fake.slash(chat.owner, "whoami")
        chat.fake.slash(chat.stranger, "model", "llama3.2")  # a guest may not switch the model
        assert await until(lambda: len(chat.fake.webhooks) >= 2)

    _, chat = scenario(DiscordChat, play)
    fake = chat.fake
    assert [c["name"] for c in fake.commands] == list(COMMANDS)
    assert [o["name"] for o in next(c for c in fake.commands if c["name"] == "model")["options"]] == ["name"]
    assert [c["type"] for c in fake.callbacks] == [5, 5]  # "thinking" at once, within Discord's 3 s
    owner, guest = sorted(fake.webhooks, key=lambda h: h["path"])
    assert owner["content"].startswith("You are the owner (discord:42)") and guest["content"] == (
        "Only the owner can switch the model.")
    assert all(h["method"] == "PATCH" and h["path"].endswith("/messages/@original") for h in (owner, guest))
    assert fake.sent == []  # nothing went to the channel itself


def test_slack_takes_a_slash_command_from_socket_mode_and_answers_in_that_chat(isolated_home):
    async def play(chat, workspace):
        envelope = chat.fake.slash(chat.owner, "/whoami")
        unknown = chat.fake.slash(chat.owner, "/frobnicate")
        assert await until(lambda: chat.texts(chat.dm) and unknown in chat.fake.acks)
        return envelope

    envelope, chat = scenario(SlackChat, play)
    assert envelope in chat.fake.acks
    [reply] = chat.texts(chat.dm)
    assert reply.startswith(f"You are the owner (slack:{TEAM}:U7)")


def test_a_guests_risky_call_is_asked_in_the_owners_last_private_chat(isolated_home):
    async def play(chat, workspace):
        chat.say(chat.owner, "/help", chat.dm)  # the owner's private chat, remembered
        assert await until(lambda: chat.texts(chat.dm))
        chat.say(chat.stranger, "please write fifth", chat.room)
        assert await until(lambda: chat.buttons(chat.dm))
        question = next(t for t in chat.texts(chat.dm) if "wants to run" in t)
        chat.press(chat.owner, chat.dm, "deny")
        assert await until(answered(chat, chat.room))
        return question

    question, chat = scenario(DiscordChat, play)
    assert question.startswith("guest-discord-61 wants to run write_file") and chat.buttons(chat.room) == []
    assert any("the owner denied" in t for t in chat.texts(chat.room))


def test_forged_or_broken_interactions_change_nothing_and_the_socket_goes_on(tmp_path):
    def script():
        fake.dm("42", "hi")
        wait_for(lambda: fake.texts("742"))
        fake.click("61", "1", "ap:no-such-request:once")  # a button the bot never made, on its message
        fake.push({"op": 0, "t": "INTERACTION_CREATE", "s": 99, "d": {  # a token that would leave the path
            "id": "5", "type": 2, "token": "../../channels/742/messages", "channel_id": "742",
            "user": {"id": "42"}, "data": {"name": "new"}}})
        fake.dm("42", "still there?")

    with FakeDiscord(DISCORD_TOKEN) as fake:
        config = ChannelConfig(enabled=True, token=DISCORD_TOKEN, allow_from=["42"], api_base=fake.url)
        h = ChannelHarness(tmp_path, DiscordChannel, config)
        asyncio.run(h.run(lambda: len(fake.texts("742")) == 2, seconds=5, meanwhile=script))
    assert fake.texts("742") == ["echo: hi", "echo: still there?"]
    assert [(c["type"], c["data"]["content"]) for c in fake.callbacks] == [(4, "This button does nothing any more.")]
    assert fake.messages["1"]["content"] == "echo: hi" and fake.edits == [] and fake.webhooks == []


def test_a_slack_press_on_a_message_that_is_not_a_question_is_acknowledged_and_ignored(tmp_path):
    def script():
        fake.dm("U7", "hi")
        wait_for(lambda: fake.texts("DU7"))
        pressed.append(fake.press("U8", next(iter(fake.messages)), "ap:no-such-request:once"))
        fake.dm("U7", "still there?")

    pressed: list[str] = []
    with FakeSlack() as fake:
        config = SlackChannelConfig(enabled=True, token=fake.bot_token, app_token=fake.app_token,
                                    allow_from=[f"{TEAM}:U7"], api_base=fake.url)
        h = ChannelHarness(tmp_path, SlackChannel, config)
        asyncio.run(h.run(lambda: len(fake.texts("DU7")) == 2 and set(pressed) <= set(fake.acks), seconds=5,
                          meanwhile=script))
    assert fake.texts("DU7") == ["echo: hi", "echo: still there?"]
    assert pressed[0] in fake.acks and fake.updates == [] and fake.ephemeral == []


def test_each_discord_command_gets_its_own_answer_and_a_stranger_a_pairing_code_then_a_no(tmp_path):
    def script():
        fake.slash("42", "help")
        fake.slash("42", "model", "llama3.2")
        fake.slash("5", "whoami")
        wait_for(lambda: len(fake.webhooks) == 3)
        fake.slash("5", "whoami")  # again, before the owner let them in: no second code

    with FakeDiscord(DISCORD_TOKEN) as fake:
        config = ChannelConfig(enabled=True, token=DISCORD_TOKEN, allow_from=["42"], api_base=fake.url)
        h = ChannelHarness(tmp_path, DiscordChannel, config)
        asyncio.run(h.run(lambda: len(fake.webhooks) == 4, seconds=5, meanwhile=script))
    by_token = {h["path"].split("/")[3]: h["content"] for h in fake.webhooks}
    assert [by_token[f"itoken-{n}.x_y"] for n in (1001, 1002)] == ["echo: /help", "echo: /model llama3.2"]
    assert "pair approve" in by_token["itoken-1003.x_y"]
    assert by_token["itoken-1004.x_y"].startswith("I don't know you yet")
    assert [m.text for m in h.admitted] == ["/help", "/model llama3.2"] and fake.sent == []


def test_the_slack_app_manifest_declares_every_command_and_what_the_channel_uses():
    manifest = yaml.safe_load((REPO / "deploy" / "slack" / "app-manifest.yaml").read_text())
    assert [c["command"] for c in manifest["features"]["slash_commands"]] == [f"/{name}" for name in COMMANDS]
    scopes = set(manifest["oauth_config"]["scopes"]["bot"])
    assert {"app_mentions:read", "chat:write", "commands", "im:history"} <= scopes
    settings = manifest["settings"]
    assert settings["socket_mode_enabled"] and settings["interactivity"]["is_enabled"]  # buttons need it
    assert set(settings["event_subscriptions"]["bot_events"]) == {"app_mention", "message.im"}


def test_a_slack_strangers_command_gets_a_pairing_code_and_a_hostile_one_nothing(tmp_path):
    def script():
        envelopes.append(fake.slash("U9", "/whoami", channel="C../../chat.delete"))  # not a channel id
        envelopes.append(fake.slash("U9", "/new"))

    envelopes: list[str] = []
    with FakeSlack() as fake:
        config = SlackChannelConfig(enabled=True, token=fake.bot_token, app_token=fake.app_token,
                                    allow_from=[f"{TEAM}:U7"], api_base=fake.url)
        h = ChannelHarness(tmp_path, SlackChannel, config)
        asyncio.run(h.run(lambda: fake.texts("DU9") and set(envelopes) <= set(fake.acks), seconds=5,
                          meanwhile=script))
    [reply] = fake.texts("DU9")
    assert "pair approve" in reply and h.admitted == [] and len(fake.posted) == 1
    assert set(envelopes) <= set(fake.acks)
