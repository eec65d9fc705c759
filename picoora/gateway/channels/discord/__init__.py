"""Discord: a bot on Discord's gateway websocket and REST API (``websockets`` and httpx: no extra).

    channel.py       the channel: the socket (identify, resume, heartbeats), messages in, replies
    interactions.py  buttons for approvals, slash commands, answers streamed by edits
"""

from __future__ import annotations

from picoora.channel_registry import ChannelConfig
from picoora.gateway.channels.discord.channel import PUBLIC_API, DiscordChannel
from picoora.gateway.channels.manifest import Manifest
from picoora.gateway.channels.web_api import WebApi


async def _probe(config: ChannelConfig, api: WebApi) -> None:
    await api.call("GET", "users/@me", token=f"Bot {config.token}", attempts=1)


MANIFEST = Manifest(
    name="discord", settings=ChannelConfig, channel=DiscordChannel, public_api=PUBLIC_API, probe=_probe,
    fake="tests/fakes/discord_server.py",
    tests=("tests/test_channel_discord.py", "tests/test_channel_buttons.py", "tests/test_gateway_channels.py",
           "tests/test_channel_media.py"),
)
