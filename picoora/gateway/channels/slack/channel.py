"""Slack, through Socket Mode (no public URL needed) and the Web API, on ``websockets`` + httpx.

- Two tokens: ``channels.slack.app_token`` (``xapp-``, scope ``connections:write``) opens the socket;
  ``channels.slack.token`` (``xoxb-``) reads who is who and posts the replies.
- It answers direct messages (``message.im``) and, in channels, messages that mention the bot
  (``app_mention``); a mention is answered in its thread, and each thread is a session of its own
  (the chat id is ``<channel>:<thread ts>``, so the session is ``slack:<channel>:<thread ts>``).
- The sender is ``slack:<team>:<user id>`` (and ``slack:@<username>`` when ``users:read`` is granted).
- Every envelope is acknowledged once taken; one that arrives while the gateway stops is not, so Slack
  offers it again to the next connection. Redelivered events are recognised and not answered twice.
- Replies are turned into mrkdwn (``format``) and split; Web API rate limits (429 ``Retry-After``)
  are honoured by ``web_api.WebApi``. ``channels.slack.api_base`` replaces the Web API root (tests).
- Buttons for approvals, slash commands and answers streamed by edits: ``interactions``.
"""

from __future__ import annotations

import json
import logging
import re
from collections import OrderedDict
from typing import Any

from picoora.channel_registry import SlackChannelConfig
from picoora.gateway.channels.attachments import file_roots, from_slack
from picoora.gateway.channels.base import CONNECTED, ChannelLinks
from picoora.gateway.channels.links import ShuttingDown
from picoora.gateway.channels.slack.format import SLACK_PIECE
from picoora.gateway.channels.slack.interactions import SlackInteractions, slack_target
from picoora.gateway.channels.socket_channel import SocketChannel
from picoora.gateway.channels.split import split_message
from picoora.gateway.channels.web_api import ApiError, TokenRefused
from picoora.identities import Sender

log = logging.getLogger(__name__)

PUBLIC_API = "https://slack.com/api"
FILES = ("https://files.slack.com",)  # the only host a file is fetched from (the request carries the bot token)
MAX_FRAME_BYTES = 4 * 1024 * 1024
SEEN_EVENTS = 1000  # event ids remembered, so a redelivery is not a second turn
USERNAMES = 1000  # user id -> username, cached
_TOKEN_ERRORS = {"invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired",
                 "not_allowed_token_type", "missing_scope"}


class SlackChannel(SocketChannel, SlackInteractions):
    name = "slack"

    def __init__(self, config: SlackChannelConfig, links: ChannelLinks, **kwargs: Any):
        if not config.token or not config.app_token:
            raise ValueError("channels.slack needs token (the bot's xoxb- token) and app_token (the app-level "
                             "xapp- token for Socket Mode): set both (or PICO_CHANNELS_SLACK_TOKEN and "
                             "PICO_CHANNELS_SLACK_APP_TOKEN)")
        if config.token.startswith("xapp-") or config.app_token.startswith("xoxb-"):
            raise ValueError("channels.slack: token and app_token are swapped (token is the bot's xoxb- token, "
                             "app_token the app-level xapp- one)")
        super().__init__(config, links, tokens=[config.token, config.app_token], api_root=PUBLIC_API,
                         user_agent="picoora (Slack Socket Mode)", **kwargs)
        self._app_token = config.app_token
        self._file_roots = file_roots(FILES, config.api_base)
        self._bot_user = ""
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._usernames: OrderedDict[str, str] = OrderedDict()

    async def _web(self, method: str, *, app: bool = False, **kwargs: Any) -> dict[str, Any]:
        """One Web API method; Slack's ``ok: false`` becomes an error (a token one: ``TokenRefused``)."""
        token = self._app_token if app else self.config.token
        body = await self.api.call("POST", method, token=f"Bearer {token}", **kwargs)
        if not isinstance(body, dict) or not body.get("ok"):
            error = str(body.get("error") if isinstance(body, dict) else "no answer")
            kind = TokenRefused if error in _TOKEN_ERRORS else ApiError
            raise kind(f"Slack refused {method}: {error}")
        return body

    # -- receiving --------------------------------------------------------------------------------

    async def connect_once(self) -> None:
        from websockets.asyncio.client import connect

        if not self._bot_user:
            self._bot_user = str((await self._web("auth.test")).get("user_id") or "")
        url = str((await self._web("apps.connections.open", app=True)).get("url") or "")
        greeted = False
        async with connect(url, max_size=MAX_FRAME_BYTES, open_timeout=10) as ws:
            async for raw in ws:
                envelope = self.decode(raw)
                if envelope is None:
                    continue
                kind = envelope.get("type")
                if kind == "hello":
                    greeted = True
                    self.report(CONNECTED)
                elif kind == "disconnect":
                    if greeted:
                        return  # a refresh: the next connection opens at once
                    raise ConnectionError("Slack asked to reconnect before it said hello")  # backed off
                elif envelope.get("envelope_id"):
                    if await self._take(envelope):
                        await ws.send(json.dumps({"envelope_id": envelope["envelope_id"]}))
        raise ConnectionError("Slack closed the socket")

    async def _take(self, envelope: dict[str, Any]) -> bool:
        """Handle one envelope; False when the gateway stops (not acknowledged: Slack offers it again)."""
        payload = envelope.get("payload") or {}
        if envelope.get("type") in ("interactive", "slash_commands"):
            try:
                await (self.on_interactive if envelope["type"] == "interactive" else self.on_slash_command)(payload)
            except ShuttingDown:
                return False
            except Exception:  # one bad press must not drop the socket
                log.exception("slack: could not handle an interaction")
            return True
        if envelope.get("type") != "events_api":
            return True  # acknowledged so Slack stops resending
        event_id = str(payload.get("event_id") or envelope["envelope_id"])
        if event_id in self._seen:
            return True
        try:
            await self._on_event(str(payload.get("team_id") or ""), payload.get("event") or {})
        except ShuttingDown:
            return False
        except Exception:  # one bad event must not drop the socket
            log.exception("slack: could not handle an event")
        self._seen[event_id] = None
        while len(self._seen) > SEEN_EVENTS:
            self._seen.popitem(last=False)
        return True

    async def _on_event(self, team: str, event: dict[str, Any]) -> None:
        kind, channel, user = event.get("type"), str(event.get("channel") or ""), str(event.get("user") or "")
        if event.get("bot_id") or event.get("subtype") not in (None, "file_share") or not user \
                or user == self._bot_user or not channel:
            return  # bots (this one too), edits, joins: not a person's message (a file shared is one)
        direct = channel.startswith("D") or event.get("channel_type") == "im"
        if not ((kind == "message" and direct) or (kind == "app_mention" and not direct)):
            return  # a DM mentioning the bot arrives twice: as its message, answered, and as a mention
        text = re.sub(rf"<@{re.escape(self._bot_user)}(\|[^>]*)?>", "", str(event.get("text") or "")).strip()
        attachments = from_slack(event, self._file_roots, self.config.token)
        if not text and not attachments:
            return
        thread = str(event.get("thread_ts") or ("" if direct else event.get("ts") or ""))
        chat_id = f"{channel}:{thread}" if thread else channel
        home, team = team, str(event.get("user_team") or event.get("team") or team or "-")
        # A handle is unique only in its own workspace: someone from a Slack Connect org could take "@alice".
        username = await self._username(user) if team == home else ""
        await self.receive(Sender("slack", f"{team}:{user}", username), chat_id,
                           _unescape(text), private=direct, attachments=attachments,
                           message_id=str(event.get("ts") or ""), username=username)

    async def _username(self, user: str) -> str:
        """The user's Slack handle (``users:read``); empty when Slack will not say."""
        if user not in self._usernames:
            try:
                info = await self._web("users.info", data={"user": user}, attempts=2)
                self._usernames[user] = str((info.get("user") or {}).get("name") or "")
            except Exception as exc:
                log.info("slack: no username for %s (%s); the allow-list can name the id", user, exc)
                return ""
            while len(self._usernames) > USERNAMES:
                self._usernames.popitem(last=False)
        return self._usernames[user]

    # -- sending ----------------------------------------------------------------------------------

    async def deliver(self, chat_id: str, text: str) -> None:
        slack_target(chat_id)  # refused before anything is sent
        for piece in split_message(text or "(no answer)", SLACK_PIECE):
            await self.post(chat_id, piece)


def _unescape(text: str) -> str:
    """Slack sends ``&``, ``<`` and ``>`` escaped; the model should read what the person typed."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
