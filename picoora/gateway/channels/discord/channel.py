"""Discord, through its gateway websocket (no public URL needed) and its REST API, on ``websockets`` + httpx.

- The bot identifies with the GUILD_MESSAGES, DIRECT_MESSAGES and MESSAGE_CONTENT intents; it answers
  direct messages, and in a server's channels only messages that mention it (the mention is taken out).
- The sender is ``discord:<user id>`` (and ``discord:@<username>``), admitted as on every channel.
- Replies are split at Discord's 2,000 characters, sent with no mentions allowed (an answer cannot ping
  ``@everyone``), and Discord renders the model's Markdown itself.
- A dropped socket is resumed (same session, missed events replayed by Discord) or, when Discord says
  the session is gone, identified anew; heartbeats Discord does not acknowledge count as a dropped socket.
- REST rate limits (429 ``retry_after``) are honoured by ``web_api.WebApi``.
- Buttons for approvals, slash commands and answers streamed by edits: ``interactions``.
- ``channels.discord.api_base`` replaces the REST root (the tests run against a fake); the websocket's
  address comes from ``GET /gateway/bot``, which also checks the token.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import re
from typing import Any

from picoora.channel_registry import ChannelConfig
from picoora.gateway.channels.attachments import file_roots, from_discord
from picoora.gateway.channels.base import CONNECTED, ChannelLinks
from picoora.gateway.channels.discord.interactions import DISCORD_LIMIT, DiscordInteractions, snowflake
from picoora.gateway.channels.links import ShuttingDown
from picoora.gateway.channels.socket_channel import SocketChannel
from picoora.gateway.channels.split import split_message
from picoora.gateway.channels.web_api import ApiError, TokenRefused
from picoora.identities import Sender

log = logging.getLogger(__name__)

PUBLIC_API = "https://discord.com/api/v10"
CDN = ("https://cdn.discordapp.com", "https://media.discordapp.net")  # where attachments are fetched from
INTENTS = (1 << 9) | (1 << 12) | (1 << 15)  # GUILD_MESSAGES, DIRECT_MESSAGES, MESSAGE_CONTENT
MAX_FRAME_BYTES = 8 * 1024 * 1024  # a READY of a bot in many servers is large; anything bigger is hostile
HELLO_SECONDS = 30.0
# Close codes after which the same token can never work: wait long between tries, and say why.
FATAL_CLOSES = {
    4004: "Discord refused the bot token",
    4010: "Discord refused the shard", 4011: "the bot is in too many servers for one shard",
    4012: "Discord refused the gateway version", 4013: "Discord refused the intents",
    4014: "the MESSAGE CONTENT intent is not enabled: turn it on in the Developer Portal (Bot > Privileged "
          "Gateway Intents)",
}
FRESH_SESSION_CLOSES = {4007, 4009}  # invalid sequence, session timed out: identify anew


class _Reconnect(Exception):
    """The socket must be opened again (resuming when ``resume``)."""

    def __init__(self, why: str, resume: bool = True):
        super().__init__(why)
        self.resume = resume


class DiscordChannel(SocketChannel, DiscordInteractions):
    name = "discord"

    def __init__(self, config: ChannelConfig, links: ChannelLinks, **kwargs: Any):
        if not config.token:
            raise ValueError("channels.discord.token is empty: set it (or PICO_CHANNELS_DISCORD_TOKEN)")
        super().__init__(config, links, tokens=[config.token], api_root=PUBLIC_API,
                         user_agent="DiscordBot (https://github.com/picoora/picoora, 0.1)", **kwargs)
        self._auth = f"Bot {config.token}"
        self._file_roots = file_roots(CDN, config.api_base)
        self._bot_id = ""
        self._session_id = ""  # set: the next connection resumes this session
        self._resume_url = ""
        self._seq: int | None = None
        self._acked = True
        self._live = False  # this connection's session started (READY or RESUMED)
        self.init_interactions()

    # -- receiving --------------------------------------------------------------------------------

    async def connect_once(self) -> None:
        try:
            await self._session()
        except _Reconnect as why:
            log.info("discord: reconnecting (%s)", why)
            if not why.resume:
                self._session_id, self._seq = "", None
            if not self._live:  # closed before the session started: back off, never reconnect in a tight loop
                raise ConnectionError(f"Discord closed the socket before the session started ({why})") from None

    async def _session(self) -> None:
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed

        resume, self._live = bool(self._session_id), False
        url = self._resume_url if resume and self._resume_url else await self._gateway_url()
        async with connect(f"{url.rstrip('/')}/?v=10&encoding=json", max_size=MAX_FRAME_BYTES,
                           open_timeout=10) as ws:
            hello = json.loads(await asyncio.wait_for(ws.recv(), HELLO_SECONDS))
            interval = max(float(hello["d"]["heartbeat_interval"]) / 1000, 0.1)  # never a busy loop
            if resume:
                await ws.send(json.dumps({"op": 6, "d": {"token": self.config.token,
                                                         "session_id": self._session_id, "seq": self._seq}}))
            else:
                await ws.send(json.dumps({"op": 2, "d": {
                    "token": self.config.token, "intents": INTENTS,
                    "properties": {"os": "linux", "browser": "picoora", "device": "picoora"}}}))
            beating = asyncio.get_running_loop().create_task(self._heartbeat(ws, interval))
            try:
                async for raw in ws:
                    payload = self.decode(raw)
                    if payload is not None:
                        await self._on_payload(ws, payload)
            except ConnectionClosed:
                pass
            finally:
                beating.cancel()
            self._after_close(ws.close_code)

    async def _gateway_url(self) -> str:
        body = await self.api.call("GET", "gateway/bot", token=self._auth)
        if not isinstance(body, dict) or not isinstance(body.get("url"), str):
            raise ApiError("Discord's /gateway/bot gave no websocket address")
        return str(body["url"])

    def _after_close(self, code: int | None) -> None:
        if code in FATAL_CLOSES:
            raise TokenRefused(f"{FATAL_CLOSES[code]} (close code {code})")
        raise _Reconnect(f"socket closed ({code})", resume=code not in FRESH_SESSION_CLOSES)

    async def _heartbeat(self, ws: Any, interval: float) -> None:
        await asyncio.sleep(interval * random.random())  # Discord asks for a jittered first beat
        while True:
            if not self._acked:  # a zombie connection: close it, and run() resumes on a new one
                await ws.close(4000, "no heartbeat ack")
                return
            self._acked = False
            await ws.send(json.dumps({"op": 1, "d": self._seq}))
            await asyncio.sleep(interval)

    async def _on_payload(self, ws: Any, payload: dict[str, Any]) -> None:
        op = payload.get("op")
        if payload.get("s") is not None:
            self._seq = payload["s"]
        if op == 0:
            await self._on_dispatch(str(payload.get("t")), payload.get("d") or {})
        elif op == 1:  # Discord asks for a beat now
            await ws.send(json.dumps({"op": 1, "d": self._seq}))
        elif op == 11:
            self._acked = True
        elif op == 7:
            raise _Reconnect("Discord asked to reconnect")
        elif op == 9:  # invalid session: resumable only when d is true
            await asyncio.sleep(1 + random.random())
            raise _Reconnect("Discord invalidated the session", resume=bool(payload.get("d")))

    async def _on_dispatch(self, event: str, data: dict[str, Any]) -> None:
        if event == "READY":
            self._session_id = str(data.get("session_id") or "")
            self._resume_url = str(data.get("resume_gateway_url") or "")
            self._bot_id = str((data.get("user") or {}).get("id") or "")
            self._acked = self._live = True
            self.report(CONNECTED)
            self.on_ready(data)
        elif event == "RESUMED":
            self._acked = self._live = True
            self.report(CONNECTED)
        elif event in ("MESSAGE_CREATE", "INTERACTION_CREATE"):
            try:
                await (self._on_message if event == "MESSAGE_CREATE" else self.on_interaction)(data)
            except ShuttingDown:
                log.info("discord: a message arrived while the gateway stops; it is not answered")
            except Exception:  # one bad message must not drop the socket
                log.exception("discord: could not handle a message")

    async def _on_message(self, data: dict[str, Any]) -> None:
        author = data.get("author") or {}
        text = str(data.get("content") or "")
        if author.get("bot") or data.get("webhook_id") or not author.get("id") or str(author["id"]) == self._bot_id:
            return  # bots, this one, and webhooks (anyone with a channel's webhook URL could post as "someone")
        if data.get("guild_id"):  # a server's channel: only what is addressed to the bot
            if not any(str(m.get("id")) == self._bot_id for m in data.get("mentions") or []):
                return
            text = re.sub(rf"<@!?{re.escape(self._bot_id)}>", "", text).strip()
        attachments = from_discord(data, self._file_roots)
        if not text.strip() and not attachments:
            return
        username = str(author.get("username") or "")
        await self.receive(Sender("discord", str(author["id"]), username), str(data["channel_id"]), text,
                           private=not data.get("guild_id"), attachments=attachments,
                           message_id=str(data.get("id") or ""), username=username)

    # -- sending ----------------------------------------------------------------------------------

    async def show_typing(self, chat_id: str) -> None:
        await self.api.call("POST", f"channels/{snowflake(chat_id)}/typing", token=self._auth, attempts=1)

    async def deliver(self, chat_id: str, text: str) -> None:
        pieces = split_message(text or "(no answer)", DISCORD_LIMIT)
        if await self.answer_thinking(chat_id, pieces):  # the reply to a slash command
            return
        for piece in pieces:
            await self.post(chat_id, {"content": piece})

    async def close(self) -> None:
        await self.close_interactions()
        await super().close()

