"""Telegram: a bot on the Bot API by long polling, with python-telegram-bot (the ``telegram`` extra).

    channel.py  the channel: updates in, replies, edits, approval buttons, attachments
    format.py   its length limit and the model's Markdown as Telegram's HTML
"""

from __future__ import annotations

from picoora.channel_registry import ChannelConfig
from picoora.gateway.channels.manifest import Manifest
from picoora.gateway.channels.telegram.channel import PUBLIC_API, TelegramChannel
from picoora.gateway.channels.web_api import WebApi


async def _probe(config: ChannelConfig, api: WebApi) -> None:
    await api.call("GET", f"bot{config.token}/getMe", token="", attempts=1)


MANIFEST = Manifest(
    name="telegram", settings=ChannelConfig, channel=TelegramChannel, public_api=PUBLIC_API, probe=_probe,
    extra="telegram", fake="tests/fakes/telegram_server.py",
    tests=("tests/test_channel_telegram.py", "tests/test_chat_commands.py", "tests/test_channel_media.py"),
)
