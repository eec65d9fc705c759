"""Slack: an app on Socket Mode and the Web API (``websockets`` and httpx: no extra).

    channel.py       the channel: the socket (envelopes, acknowledgements), messages in, replies
    interactions.py  Block Kit buttons for approvals, slash commands, answers streamed by edits
    format.py        the model's Markdown as mrkdwn, and Slack's piece of a message
"""

from __future__ import annotations

from picoora.channel_registry import ChannelConfig, SlackChannelConfig
from picoora.gateway.channels.manifest import Manifest
from picoora.gateway.channels.slack.channel import PUBLIC_API, SlackChannel
from picoora.gateway.channels.web_api import TokenRefused, WebApi


async def _probe(config: ChannelConfig, api: WebApi) -> None:
    """Both tokens: the bot's (``auth.test``) and the app-level one that opens the socket."""
    app_token = getattr(config, "app_token", "")
    for method, token in (("auth.test", config.token), ("apps.connections.open", app_token)):
        body = await api.call("POST", method, token=f"Bearer {token}", attempts=1)
        if not isinstance(body, dict) or not body.get("ok"):
            raise TokenRefused(f"Slack refused {method}")


MANIFEST = Manifest(
    name="slack", settings=SlackChannelConfig, channel=SlackChannel, public_api=PUBLIC_API, probe=_probe,
    fake="tests/fakes/slack_server.py",
    tests=("tests/test_channel_slack.py", "tests/test_channel_buttons.py", "tests/test_gateway_channels.py",
           "tests/test_channel_media.py"),
)
