"""A fake Slack on 127.0.0.1: the Web API methods and the Socket Mode websocket the Slack channel uses.

Web API (``POST /<method>``, ``Authorization: Bearer <token>``; errors as Slack gives them, ``ok: false``
with HTTP 200): ``auth.test`` and ``users.info`` and ``chat.postMessage`` want the bot token,
``apps.connections.open`` the app token and answers with the socket's address. ``fail_next(429,
retry_after=2)`` or ``fail_next(500)`` scripts failures of the next ``chat.postMessage`` or ``chat.update``
calls; ``chat.update`` edits a posted message (recorded in ``updates``; ``messages`` holds each message as it
stands now) and ``chat.postEphemeral`` is recorded in ``ephemeral``.

Socket Mode: ``hello`` on connect; the test sends events with ``dm``, ``mention`` and ``channel_message``;
envelopes not acknowledged are offered again on the next connection (as Slack retries them);
``redeliver`` repeats an event, ``drop`` breaks the socket without a close frame, ``refresh`` sends
Slack's ``disconnect`` message; ``press`` clicks a message's button (an ``interactive`` envelope) and
``slash`` runs a slash command (a ``slash_commands`` envelope).
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from typing import Any

from tests.fakes._http import Exchange
from tests.fakes.socket_server import SocketPlatformFake

TEAM, BOT_USER = "T0TEAM", "UBOTPICO"


class FakeSlack(SocketPlatformFake):
    def __init__(self, bot_token: str = "xoxb-fake-bot-token-1234", app_token: str = "xapp-1-fake-app-token-5678",
                 port: int = 0):
        super().__init__(port=port)
        self.bot_token, self.app_token = bot_token, app_token
        self.usernames: dict[str, str] = {}
        self.posted: list[dict[str, Any]] = []
        self.acks: list[str] = []
        self.failures: deque[tuple[int, int | None]] = deque()
        self.disconnect_at_once = False  # set: every connection gets "disconnect" before any hello
        self._pending: dict[str, dict[str, Any]] = {}  # envelope id -> envelope, until acknowledged
        self._sent: dict[str, dict[str, Any]] = {}  # message ts -> its envelope
        self._lock = threading.Lock()
        self._next = 0
        self.messages: dict[str, dict[str, Any]] = {}  # ts -> the message as it stands
        self.updates: list[dict[str, Any]] = []
        self.ephemeral: list[dict[str, Any]] = []
        self.files: dict[str, bytes] = {}  # what /files-pri/<id> serves
        self.downloads: list[str] = []

    # -- what the test does ---------------------------------------------------------------------

    def dm(self, user: str, text: str, thread_ts: str = "", user_team: str = TEAM,
           files: list[dict[str, Any]] | None = None) -> str:
        """A direct message; ``files``: shared files as {name, mimetype, data[, url]}, served (to the bot
        token only) by the fake's /files-pri/ unless ``url`` points elsewhere."""
        event: dict[str, Any] = {"type": "message", "channel": f"D{user}", "channel_type": "im", "user": user,
                                 "text": text, "user_team": user_team}
        if files:
            event["subtype"] = "file_share"
            event["files"] = []
            for file in files:
                key = f"F{len(self.files)}-{file['name']}"
                self.files[key] = file["data"]
                event["files"].append({"id": key, "name": file["name"], "mimetype": file["mimetype"],
                                       "size": len(file["data"]),
                                       "url_private_download": file.get("url") or f"{self.url}/files-pri/{key}"})
        return self._event(event, thread_ts)

    def mention(self, user: str, text: str, channel: str = "CGENERAL", thread_ts: str = "") -> str:
        return self._event({"type": "app_mention", "channel": channel, "user": user,
                            "text": f"<@{BOT_USER}> {text}"}, thread_ts)

    def channel_message(self, user: str, text: str, channel: str = "CGENERAL") -> str:
        return self._event({"type": "message", "channel": channel, "channel_type": "channel", "user": user,
                            "text": text}, "")

    def press(self, user: str, ts: str, action_id: str, user_team: str = TEAM) -> str:
        """``user`` clicks the button ``action_id`` of message ``ts``; the envelope's id."""
        message = self.messages[ts]
        return self._envelope("interactive", {
            "type": "block_actions", "user": {"id": user, "username": f"u{user}", "team_id": user_team},
            "team": {"id": TEAM}, "channel": {"id": message["channel"]},
            "container": {"type": "message", "message_ts": ts, "channel_id": message["channel"]},
            "message": {"ts": ts, "text": message.get("text"), **({"thread_ts": message["thread_ts"]}
                                                                 if message.get("thread_ts") else {})},
            "actions": [{"type": "button", "action_id": action_id, "block_id": "b1", "value": "x"}]})

    def slash(self, user: str, command: str, text: str = "", channel: str = "") -> str:
        """``user`` runs ``command text`` (in their DM with the app unless ``channel``); the envelope's id."""
        return self._envelope("slash_commands", {
            "command": command, "text": text, "user_id": user, "user_name": f"u{user}", "team_id": TEAM,
            "channel_id": channel or f"D{user}", "response_url": "https://hooks.slack.invalid/x"})

    def buttons(self, channel: str) -> list[tuple[str, str]]:
        """(message ts, action id) of every button still on a message in ``channel``."""
        return [(ts, element["action_id"]) for ts, m in self.messages.items() if m["channel"] == channel
                for block in m.get("blocks") or [] if block.get("type") == "actions"
                for element in block["elements"]]

    def refresh(self) -> None:
        """Slack's own "reconnect, please" (connections are refreshed every few hours)."""
        self.push({"type": "disconnect", "reason": "refresh_requested"})

    def fail_next(self, status: int, retry_after: int | None = None) -> None:
        self.failures.append((status, retry_after))

    def texts(self, channel: str, thread_ts: str = "") -> list[str]:
        """The messages of ``channel`` (in thread ``thread_ts``) as they read now (after any edits), oldest first."""
        return [m["text"] for m in self.messages.values()
                if m["channel"] == channel and m.get("thread_ts", "") == thread_ts]

    # -- Socket Mode ----------------------------------------------------------------------------

    def _event(self, event: dict[str, Any], thread_ts: str) -> str:
        with self._lock:
            self._next += 1
            ts = f"1700000{self._next:03d}.000100"
        event = {**event, "ts": ts, "team": TEAM, **({"thread_ts": thread_ts} if thread_ts else {})}
        envelope = {"envelope_id": f"env-{self._next}", "type": "events_api", "accepts_response_payload": False,
                    "payload": {"team_id": TEAM, "event_id": f"Ev{self._next}", "event": event}}
        self._pending[envelope["envelope_id"]] = envelope
        self._sent[ts] = envelope
        self.push(envelope)
        return ts

    def _envelope(self, kind: str, payload: dict[str, Any]) -> str:
        with self._lock:
            self._next += 1
            envelope = {"envelope_id": f"env-{self._next}", "type": kind, "accepts_response_payload": True,
                        "payload": payload}
        self._pending[envelope["envelope_id"]] = envelope
        self.push(envelope)
        return str(envelope["envelope_id"])

    def redeliver(self, ts: str) -> str:
        """Send the event of message ``ts`` again in a new envelope, as Slack does when it doubts an ack."""
        envelope = {**self._sent[ts], "envelope_id": f"env-again-{ts}", "retry_attempt": 1}
        self.push(envelope)
        return str(envelope["envelope_id"])

    async def on_connect(self, ws: Any) -> None:
        if self.disconnect_at_once:
            await ws.send(json.dumps({"type": "disconnect", "reason": "refresh_requested"}))
            return
        self.current = ws
        await ws.send(json.dumps({"type": "hello", "num_connections": 1}))
        for envelope in list(self._pending.values()):  # Slack retries what was never acknowledged
            await ws.send(json.dumps(envelope))
        async for raw in ws:
            envelope_id = json.loads(raw).get("envelope_id")
            self.acks.append(envelope_id)
            self._pending.pop(envelope_id, None)

    # -- Web API --------------------------------------------------------------------------------

    def route(self, exchange: Exchange) -> None:
        if exchange.path.startswith("/files-pri/"):
            self._file(exchange)
            return
        method = exchange.path.rsplit("/", 1)[-1]
        wanted = self.app_token if method == "apps.connections.open" else self.bot_token
        if exchange.headers.get("authorization") != f"Bearer {wanted}":
            exchange.send_json(200, {"ok": False, "error": "invalid_auth"})
            return
        if method == "auth.test":
            exchange.send_json(200, {"ok": True, "team_id": TEAM, "user_id": BOT_USER, "bot_id": "BPICO"})
        elif method == "apps.connections.open":
            exchange.send_json(200, {"ok": True, "url": f"{self.sockets.url}/link/?ticket=fake"})
        elif method == "users.info":
            user = str(exchange.body.get("user") or "")
            if user in self.usernames:
                exchange.send_json(200, {"ok": True, "user": {"id": user, "name": self.usernames[user]}})
            else:
                exchange.send_json(200, {"ok": False, "error": "user_not_found"})
        elif method in ("chat.postMessage", "chat.update"):
            self._post(exchange, method)
        elif method == "chat.postEphemeral":
            self.ephemeral.append(dict(exchange.body))
            exchange.send_json(200, {"ok": True, "message_ts": "1900000.000001"})
        else:
            exchange.send_json(200, {"ok": False, "error": "unknown_method"})

    def _file(self, exchange: Exchange) -> None:
        self.downloads.append(exchange.path)
        data = self.files.get(exchange.path.rsplit("/", 1)[-1])
        if exchange.headers.get("authorization") != f"Bearer {self.bot_token}" or data is None:
            exchange.send_bytes(200, b"<html>sign in</html>", "text/html")  # Slack's answer: its login page
            return
        exchange.send_bytes(200, data)

    def _post(self, exchange: Exchange, method: str) -> None:
        if self.failures:
            status, retry_after = self.failures.popleft()
            headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
            exchange.send_json(status, {"ok": False, "error": "ratelimited" if status == 429 else "fatal_error"},
                               headers=headers)
            return
        body = dict(exchange.body)
        if len(str(body.get("text") or "")) > 40_000:
            exchange.send_json(200, {"ok": False, "error": "msg_too_long"})
            return
        if method == "chat.update":
            ts = str(body.get("ts") or "")
            if self.messages.get(ts, {}).get("channel") != body.get("channel"):
                exchange.send_json(200, {"ok": False, "error": "message_not_found"})
                return
            self.updates.append({**body, "at": time.monotonic()})
            self.messages[ts] = {**self.messages[ts], **body}
            exchange.send_json(200, {"ok": True, "channel": body.get("channel"), "ts": ts})
            return
        self.posted.append(body)
        ts = f"1800000.{len(self.posted):06d}"
        self.messages[ts] = body
        exchange.send_json(200, {"ok": True, "channel": body.get("channel"), "ts": ts})
