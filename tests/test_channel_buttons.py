"""Approvals by buttons, answers streamed by edits and slash commands on Discord and Slack, through the
gateway's runtime with the fake model and each platform's fake (socket + HTTP API) over real sockets: the
owner's click decides (approve once, deny), a silence is a denial, a stranger's click changes nothing, a
long answer grows in one message within the platform's edit rate and ends complete and split, a 429 on an
edit is waited out, and a slash command is answered where it was run."""

from __future__ import annotations

import asyncio

import pytest

from picoora.assistant import build_assistant
from picoora.config import Config, save_config
from picoora.gateway.runtime.services import GatewayRuntime
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.fakes.slack_server import TEAM, FakeSlack

DISCORD_TOKEN = "ODk5.fake-discord-token.value"
# Words of 49 characters: a 2,500-character answer streams in 50 pieces.
LONG = " ".join(f"{i:02d}" + "x" * 46 for i in range(50))


def respond(body: dict) -> Reply:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return Reply(content=f"tool said: {last['content']}")
    if last["content"] == "long":
        return Reply(content=LONG, piece_delay=0.05)
    name = last["content"].split()[-1]
    return Reply(tool_calls=[("write_file", {"path": f"{name}.txt", "content": "hello"})])


class DiscordChat:
    """The owner is user 42 (DM channel 742); 61 is a guest; "5550001" a server channel."""

    name, owner, stranger, dm, room = "discord", "42", "61", "742", "5550001"

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
        """Every message of ``chat`` as it stands now."""
        return [str(m.get("content")) for m in self.fake.messages.values() if m["channel_id"] == chat]

    def refusals(self) -> list[str]:
        """What only a clicker saw (ephemeral answers)."""
        return [c["data"]["content"] for c in self.fake.callbacks if c["type"] == 4]


class SlackChat:
    """The owner is U7 (DM "DU7"); U8 is a guest; "CGENERAL" a channel (its answers in the mention's thread)."""

    name, owner, stranger, dm, room = "slack", "U7", "U8", "DU7", "CGENERAL"

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

        async def run():
            async with build_assistant(config) as assistant:
                runtime = GatewayRuntime(assistant)
                await runtime.start()
                try:
                    return await play(chat, assistant.workspace)
                finally:
                    await runtime.stop_intake()
                    await runtime.turns.drain(5)
                    await runtime.close()

        return asyncio.run(run()), chat


async def until(check, seconds=15.0):
    for _ in range(int(seconds / 0.05)):
        if check():
            return True
        await asyncio.sleep(0.05)
    return False


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
