"""Discord and Slack inside the real gateway runtime, with a model behind them: a message becomes a turn in
the sender's own assistant (two guests and the owner never share a transcript), every channel's state is
in the start-up lines, and ``picoora status`` says the same of the tokens."""

from __future__ import annotations

import asyncio
import json

from picoora.assistant import build_assistant
from picoora.config import Config, save_config
from picoora.gateway.runtime.services import GatewayRuntime
from picoora.identities import Person
from tests.cli_support import run_cli, write_config
from tests.fakes._http import closed_port_url
from tests.fakes.channel_kit import wait_for
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.fakes.slack_server import FakeSlack

DISCORD = "ODk5.fake-discord-token.value"
BOT, APP = "xoxb-fake-bot-token-1234", "xapp-1-fake-app-token-5678"


def channels(discord_url: str, slack_url: str, app_token: str = APP) -> dict:
    return {"discord": {"enabled": True, "token": DISCORD, "allow_from": ["*"], "api_base": discord_url},
            "slack": {"enabled": True, "token": BOT, "app_token": app_token, "allow_from": ["*"],
                      "api_base": slack_url}}


def test_two_discord_guests_each_talk_to_their_own_assistant_and_the_start_up_lines_say_what_works(isolated_home):
    answers = iter(["Noted, 4711.", "I know no code of yours."])
    with FakeOllama(responder=lambda body: Reply(content=next(answers))) as ollama, \
            FakeDiscord(DISCORD) as discord, FakeSlack(BOT, APP) as slack:
        config = Config.model_validate({
            "providers": {"ollama": {"api_base": ollama.url, "max_retries": 0}},
            "memory": {"embedder": "none"},
            "channels": channels(discord.url, slack.url, app_token="xapp-1-revoked-0000"),
        })
        save_config(config)

        async def scenario():
            async with build_assistant(config) as assistant:
                runtime = GatewayRuntime(assistant)
                await runtime.start()

                def script():
                    discord.dm("61", "my code is 4711")
                    wait_for(lambda: discord.texts("761"))
                    discord.dm("62", "what is my code?")
                    wait_for(lambda: discord.texts("762"))

                await asyncio.to_thread(script)
                await runtime.stop_intake()
                await runtime.turns.drain(5)
                histories = {}
                for name, session in (("guest-discord-61", "discord:761"), ("guest-discord-62", "discord:762")):
                    async with runtime.people.lease(Person(name)) as theirs:
                        histories[name] = [e.message.content for e in await theirs.history(session)]
                owner_sees = [await assistant.history(s) for s in ("discord:761", "discord:762")]
                await runtime.close()
                return runtime.channel_lines, histories, owner_sees

        lines, histories, owner_sees = asyncio.run(scenario())
    assert lines == ["telegram off", "discord connected", "slack refused token"]
    assert discord.texts("761") == ["Noted, 4711."] and discord.texts("762") == ["I know no code of yours."]
    assert histories["guest-discord-61"] == ["my code is 4711", "Noted, 4711."]
    assert histories["guest-discord-62"] == ["what is my code?", "I know no code of yours."]
    assert owner_sees == [[], []]  # neither guest's words are in the owner's transcripts


def test_a_slack_thread_reaches_the_model_and_its_answer_lands_in_the_thread(isolated_home):
    with FakeOllama(responder=lambda body: Reply(content="**Yes**, in the thread.")) as ollama, \
            FakeDiscord(DISCORD) as discord, FakeSlack(BOT, APP) as slack:
        config = Config.model_validate({
            "providers": {"ollama": {"api_base": ollama.url, "max_retries": 0}},
            "memory": {"embedder": "none"},
            "channels": channels(discord.url, slack.url),
        })

        async def scenario():
            async with build_assistant(config) as assistant:
                runtime = GatewayRuntime(assistant)
                await runtime.start()
                thread = await asyncio.to_thread(slack.mention, "U1", "can you answer here?")
                await asyncio.to_thread(wait_for, lambda: slack.texts("CGENERAL", thread))
                await runtime.stop_intake()
                await runtime.turns.drain(5)
                await runtime.close()
                return runtime.channel_lines, thread

        lines, thread = asyncio.run(scenario())
    assert lines == ["telegram off", "discord connected", "slack connected"]
    assert slack.texts("CGENERAL", thread) == ["*Yes*, in the thread."]


def test_status_lists_every_channel_with_what_its_platform_said_of_the_token(isolated_home):
    with FakeOllama(models=("qwen3:latest",)) as ollama, FakeDiscord(DISCORD) as discord, \
            FakeSlack(BOT, APP) as slack:
        path = write_config(isolated_home, ollama_url=ollama.url)
        (isolated_home / "workspace").mkdir()
        data = json.loads(path.read_text())
        data["channels"] = channels(discord.url, slack.url)
        path.write_text(json.dumps(data))
        healthy = run_cli("status", home=isolated_home)
        data["channels"]["slack"]["app_token"] = "xapp-1-revoked-0000"
        data["channels"]["discord"]["api_base"] = closed_port_url()
        path.write_text(json.dumps(data))
        broken = run_cli("status", home=isolated_home)
    assert healthy.returncode == 0, healthy.stdout
    assert "Channels:" in healthy.stdout and "telegram off, discord connected, slack connected" in healthy.stdout
    assert broken.returncode == 1
    assert "discord ✗ unreachable, slack ✗ refused token" in broken.stdout
    assert "revoked" not in broken.stdout + broken.stderr and DISCORD not in broken.stdout + broken.stderr


def test_the_start_up_lines_carry_every_channel_and_its_state():
    from picoora.gateway.server import banner
    from picoora.gateway.state import Gateway

    state = Gateway(config=Config(), token="t0ken-for-the-banner")
    state.channel_lines = ["telegram connected", "discord refused token", "slack off"]
    lines = banner(state, 18790, show_token=False)
    assert "  channels:  telegram connected, discord refused token, slack off" in lines
