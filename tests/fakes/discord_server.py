"""A fake Discord on 127.0.0.1: the REST API and the gateway websocket, as the Discord channel uses them.

REST: ``GET /gateway/bot`` (checks ``Authorization: Bot <token>``, gives the socket's address), ``GET
/users/@me``,
``POST /channels/{id}/messages`` (recorded; more than 2,000 characters is a 400, as on Discord) and
``POST /channels/{id}/typing`` (recorded); ``fail_next(429, retry_after=1.5)`` or ``fail_next(500)``
scripts failures of the next message sends; ``spent_budget_seconds`` makes every send answer with
Discord's "budget spent" headers (``X-RateLimit-Remaining: 0``). ``PATCH /channels/{id}/messages/{id}``
edits a sent message (recorded in ``edits``; the same failures and limit apply), ``PUT
/applications/{id}/commands`` registers slash commands, ``POST /interactions/{id}/{token}/callback`` and
``/webhooks/{app}/{token}...`` answer interactions (recorded in ``callbacks`` and ``webhooks``).

Gateway: HELLO, then IDENTIFY (a wrong token closes with 4004, missing MESSAGE_CONTENT with 4014) gets
READY; RESUME with a known session replays the events the client missed, then RESUMED; heartbeats are
acknowledged (unless ``ack_heartbeats`` is off). The test sends messages with ``dm``, ``mention`` and
``guild_message``, clicks a message's button with ``click`` and runs a slash command with ``slash``
(both INTERACTION_CREATE, with a token the fake knows), and breaks the socket with ``drop`` (no close
frame, as a network failure).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from typing import Any

from tests.fakes._http import Exchange
from tests.fakes.socket_server import SocketPlatformFake

BOT_ID = "900000000000000001"
APP_ID = "900000000000000002"
MESSAGE_CONTENT = 1 << 15
COMMAND, COMPONENT = 2, 3  # interaction types
EDITS_PER_WINDOW, EDIT_WINDOW_SECONDS = 5, 5.0  # Discord's edits per channel


class FakeDiscord(SocketPlatformFake):
    def __init__(self, token: str = "ODk5.fake-discord-token.value", port: int = 0, heartbeat_ms: int = 200):
        super().__init__(port=port)
        self.token = token
        self.heartbeat_ms = heartbeat_ms
        self.sent: list[dict[str, Any]] = []
        self.typing: list[str] = []
        self.failures: deque[tuple[int, float | None]] = deque()
        self.close_after_hello: int | None = None  # set: every connection is closed with this code after HELLO
        self.spent_budget_seconds = 0.0  # set: every message send says the route's budget is spent for that long
        self.identifies: list[dict[str, Any]] = []
        self.resumes: list[dict[str, Any]] = []
        self.heartbeats = 0
        self.ack_heartbeats = True
        self._events: list[dict[str, Any]] = []  # every dispatch, for replay on RESUME
        self._session = "fake-session-1"
        self._lock = threading.Lock()
        self._next_id = 1000
        self.messages: dict[str, dict[str, Any]] = {}  # message id -> its current state
        self.edits: list[dict[str, Any]] = []
        self.limited = 0  # edits refused with 429 for going over EDITS_PER_WINDOW
        self._edit_times: dict[str, deque[float]] = {}
        self.commands: list[dict[str, Any]] = []
        self.callbacks: list[dict[str, Any]] = []  # {"interaction": id, **the callback's body}
        self.webhooks: list[dict[str, Any]] = []  # {"method", "path", **body}
        self._tokens: dict[str, str] = {}  # interaction token -> the message its click was on ("" for a command)
        self.files: dict[str, bytes] = {}  # what /attachments/<name> serves
        self.downloads: list[str] = []

    # -- what the test does ---------------------------------------------------------------------

    def dm(self, user_id: str, text: str, username: str = "", files: list[dict[str, Any]] | None = None) -> None:
        """A direct message; ``files``: its attachments as {filename, content_type, data[, url]} (served by the
        fake's /attachments/ unless ``url`` points elsewhere)."""
        attachments = []
        for number, file in enumerate(files or []):
            name = f"{len(self.files)}-{file['filename']}"
            self.files[name] = file["data"]
            attachments.append({"id": str(number), "filename": file["filename"], "size": len(file["data"]),
                                "content_type": file["content_type"],
                                "url": file.get("url") or f"{self.url}/attachments/{name}"})
        self._message(user_id, text, username, channel_id=f"7{user_id}", guild=False, mentions=[],
                      attachments=attachments)

    def mention(self, user_id: str, text: str, channel_id: str = "5550001", username: str = "",
                webhook: bool = False) -> None:
        self._message(user_id, f"<@{BOT_ID}> {text}", username, channel_id=channel_id, guild=True,
                      mentions=[{"id": BOT_ID, "username": "pico"}], webhook=webhook)

    def guild_message(self, user_id: str, text: str, channel_id: str = "5550001") -> None:
        self._message(user_id, text, "", channel_id=channel_id, guild=True, mentions=[])

    def forget_sessions(self) -> None:
        """Discord no longer knows the session (it timed out): a RESUME gets INVALID_SESSION."""
        self._session = f"fake-session-{len(self.identifies) + 1}"

    def click(self, user_id: str, message_id: str, custom_id: str, guild: bool = False) -> str:
        """``user_id`` clicks a button of message ``message_id``; the interaction's id."""
        message = self.messages[message_id]
        return self._interaction(user_id, COMPONENT, {"custom_id": custom_id, "component_type": 2},
                                 message["channel_id"], guild, message={"id": message_id, **message})

    def slash(self, user_id: str, name: str, value: str | None = None, channel_id: str = "",
              guild: bool = False) -> str:
        """``user_id`` runs ``/name [value]`` (in their DM channel unless ``channel_id``); the interaction's id."""
        options = [{"type": 3, "name": "name", "value": value}] if value is not None else []
        return self._interaction(user_id, COMMAND, {"name": name, "type": 1, "options": options},
                                 channel_id or f"7{user_id}", guild)

    def buttons(self, channel_id: str) -> list[tuple[str, str]]:
        """(message id, custom id) of every button still on a message in ``channel_id``."""
        return [(mid, button["custom_id"]) for mid, m in self.messages.items() if m["channel_id"] == channel_id
                for row in m.get("components") or [] for button in row["components"]]

    def fail_next(self, status: int, retry_after: float | None = None) -> None:
        self.failures.append((status, retry_after))

    def texts(self, channel_id: str) -> list[str]:
        """The messages of ``channel_id`` as they read now (after any edits), oldest first."""
        return [m["content"] for m in self.messages.values() if m["channel_id"] == channel_id]

    # -- the gateway ----------------------------------------------------------------------------

    def _interaction(self, user_id: str, kind: int, data: dict[str, Any], channel_id: str, guild: bool,
                     **extra: Any) -> str:
        with self._lock:
            self._next_id += 1
            interaction, token = str(self._next_id), f"itoken-{self._next_id}.x_y"
        self._tokens[token] = str((extra.get("message") or {}).get("id") or "")
        user = {"id": user_id, "username": f"user{user_id}"}
        payload: dict[str, Any] = {"id": interaction, "application_id": APP_ID, "type": kind, "token": token,
                                   "data": data, "channel_id": channel_id, "version": 1, **extra}
        if guild:
            payload.update(guild_id="4440001", member={"user": user, "roles": []})
        else:
            payload["user"] = user
        self.sockets.run(self._dispatch("INTERACTION_CREATE", payload))
        return interaction

    def _message(self, user_id: str, text: str, username: str, *, channel_id: str, guild: bool,
                 mentions: list[dict[str, Any]], webhook: bool = False,
                 attachments: list[dict[str, Any]] | None = None) -> None:
        with self._lock:
            self._next_id += 1
            data: dict[str, Any] = {"id": str(self._next_id), "channel_id": channel_id, "content": text,
                                    "author": {"id": user_id, "username": username or f"user{user_id}"},
                                    "mentions": mentions, "attachments": attachments or []}
            if guild:
                data["guild_id"] = "4440001"
            if webhook:  # a webhook's post carries any name and id its poster chose
                data["webhook_id"] = user_id
        self.sockets.run(self._dispatch("MESSAGE_CREATE", data))

    async def _dispatch(self, event: str, data: dict[str, Any]) -> None:
        payload = {"op": 0, "t": event, "s": len(self._events) + 1, "d": data}
        self._events.append(payload)
        if self.current is not None:
            await self.current.send(json.dumps(payload))

    async def on_connect(self, ws: Any) -> None:
        await ws.send(json.dumps({"op": 10, "d": {"heartbeat_interval": self.heartbeat_ms}}))
        if self.close_after_hello is not None:
            await ws.close(self.close_after_hello, "go away")
            return
        async for raw in ws:
            await self._on_frame(ws, json.loads(raw))

    async def _on_frame(self, ws: Any, frame: dict[str, Any]) -> None:
        op, data = frame.get("op"), frame.get("d")
        if op == 1:
            self.heartbeats += 1
            if self.ack_heartbeats:
                await ws.send(json.dumps({"op": 11}))
        elif op == 2:
            self.identifies.append(data)
            if data.get("token") != self.token:
                await ws.close(4004, "Authentication failed.")
            elif not data.get("intents", 0) & MESSAGE_CONTENT:
                await ws.close(4014, "Disallowed intent(s).")
            else:
                self.current = ws
                self._events.append({})  # READY takes a sequence number too
                await ws.send(json.dumps({"op": 0, "t": "READY", "s": len(self._events), "d": {
                    "session_id": self._session, "resume_gateway_url": self.sockets.url,
                    "user": {"id": BOT_ID, "username": "pico", "bot": True},
                    "application": {"id": APP_ID, "flags": 0}}}))
        elif op == 6:
            self.resumes.append(data)
            if data.get("session_id") != self._session or data.get("token") != self.token:
                await ws.send(json.dumps({"op": 9, "d": False}))
                return
            self.current = ws
            for payload in self._events:
                if payload and payload["s"] > (data.get("seq") or 0):
                    await ws.send(json.dumps(payload))
            await ws.send(json.dumps({"op": 0, "t": "RESUMED", "s": None, "d": {}}))

    # -- REST -----------------------------------------------------------------------------------

    def route(self, exchange: Exchange) -> None:
        if exchange.path.startswith("/attachments/"):  # the CDN: no token needed, as on Discord's
            self.downloads.append(exchange.path)
            data = self.files.get(exchange.path.split("/", 2)[2])
            if data is None:
                exchange.send_json(404, {"message": "404: Not Found", "code": 0})
            else:
                exchange.send_bytes(200, data)
            return
        interaction = re.fullmatch(r".*/interactions/(\d+)/([^/]+)/callback", exchange.path)
        hook = re.fullmatch(rf".*/webhooks/{APP_ID}/([^/]+)(/messages/@original)?", exchange.path)
        if interaction is not None or hook is not None:  # the interaction's token is the key, not the bot's
            self._answer_interaction(exchange, interaction, hook)
            return
        if exchange.headers.get("authorization") != f"Bot {self.token}":
            exchange.send_json(401, {"message": "401: Unauthorized", "code": 0})
            return
        if exchange.path.endswith("/gateway/bot"):
            exchange.send_json(200, {"url": self.sockets.url, "shards": 1})
            return
        if exchange.path.endswith("/users/@me"):
            exchange.send_json(200, {"id": BOT_ID, "username": "pico", "bot": True})
            return
        if exchange.path.endswith(f"/applications/{APP_ID}/commands") and exchange.method == "PUT":
            self.commands = list(exchange.body)
            exchange.send_json(200, self.commands)
            return
        match = re.fullmatch(r".*/channels/(\d+)/(messages|typing)(?:/(\d+))?", exchange.path)
        if match is None or exchange.method not in ("POST", "PATCH") or (exchange.method == "PATCH") != bool(
                match.group(3)):
            exchange.send_json(404, {"message": "404: Not Found", "code": 0})
            return
        channel_id, what, message_id = match.groups()
        if what == "typing":
            self.typing.append(channel_id)
            exchange.send_json(200, {})
            return
        if message_id is not None and self.messages.get(message_id, {}).get("channel_id") != channel_id:
            exchange.send_json(404, {"message": "Unknown Message", "code": 10008})
            return
        if self.failures:
            status, retry_after = self.failures.popleft()
            if status == 429:
                exchange.send_json(429, {"message": "You are being rate limited.", "retry_after": retry_after,
                                         "global": False}, headers={"Retry-After": str(int(retry_after or 1))})
            else:
                exchange.send_json(status, {"message": f"fake error {status}", "code": 0})
            return
        if message_id is not None and self._over_edit_rate(exchange, channel_id):
            return
        content = str(exchange.body.get("content") or "")
        if len(content) > 2000:
            exchange.send_json(400, {"message": "Invalid Form Body", "code": 50035})
            return
        budget = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset-After": str(self.spent_budget_seconds)} \
            if self.spent_budget_seconds else {}
        if message_id is not None:
            self.edits.append({"channel_id": channel_id, "message_id": message_id, **exchange.body})
            self.messages[message_id].update(exchange.body)
        else:
            self.sent.append({"channel_id": channel_id, **exchange.body})
            message_id = str(len(self.sent))
            self.messages[message_id] = {"channel_id": channel_id, **exchange.body}
        exchange.send_json(200, {"id": message_id, "channel_id": channel_id,
                                 "content": self.messages[message_id].get("content", "")}, headers=budget)

    def _over_edit_rate(self, exchange: Exchange, channel_id: str) -> bool:
        """More than Discord's edits in a channel within its window: a 429, as Discord answers."""
        now, times = time.monotonic(), self._edit_times.setdefault(channel_id, deque())
        while times and now - times[0] >= EDIT_WINDOW_SECONDS:
            times.popleft()
        if len(times) >= EDITS_PER_WINDOW:
            self.limited += 1
            exchange.send_json(429, {"message": "You are being rate limited.", "global": False,
                                     "retry_after": round(EDIT_WINDOW_SECONDS - (now - times[0]), 3)})
            return True
        times.append(now)
        return False

    def _answer_interaction(self, exchange: Exchange, interaction: Any, hook: Any) -> None:
        token = (interaction or hook).group(2 if interaction else 1)
        if token not in self._tokens:
            exchange.send_json(401, {"message": "Invalid Webhook Token", "code": 50027})
        elif interaction is not None:
            self.callbacks.append({"interaction": interaction.group(1), **exchange.body})
            if exchange.body.get("type") == 7:  # "update message": the clicked message changes
                self.messages[self._tokens[token]].update(exchange.body.get("data") or {})
            exchange.send_no_content()
        else:
            self.webhooks.append({"method": exchange.method, "path": exchange.path, **exchange.body})
            exchange.send_json(200, {"id": "0", "content": exchange.body.get("content", "")})
