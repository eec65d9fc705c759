"""Discord's buttons, slash commands and message edits, for ``DiscordChannel``.

- Answers stream into one message by ``PATCH /channels/{id}/messages/{id}`` (``runtime.streaming``), at
  most every 1.25 s: Discord allows five edits per five seconds in a channel, and the final edit follows
  the last preview at once, so six edits must span five seconds. A 429's
  ``retry_after`` (or a spent route budget) is waited out by ``web_api.WebApi``.
- An approval question is a message with one button per choice (``custom_id``: ``links.approval_button``).
  A click arrives as an ``INTERACTION_CREATE`` on the gateway socket and is answered with
  ``POST /interactions/{id}/{token}/callback``: the owner's click updates the message (type 7: the buttons
  go, the choice shows), anyone else's gets a reply only they see (type 4, ephemeral) and changes nothing.
- ``/new /model /stop /whoami /help`` are registered as application commands once the socket says which
  application the bot is (``PUT /applications/{id}/commands``). A command is acknowledged at once as
  "thinking" (type 5, ephemeral, as Discord wants an answer within 3 s) and goes in as the typed text
  would; the chat's next reply fills that message (``PATCH /webhooks/{app}/{token}/messages/@original``).
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

from picoora.gateway.channels.base import STREAMING_MARK, AsksApprovals, EditsMessages
from picoora.gateway.channels.links import COMMANDS, ShuttingDown, approval_button
from picoora.gateway.channels.split import split_message
from picoora.gateway.channels.web_api import WebApi
from picoora.identities import Sender

log = logging.getLogger(__name__)

DISCORD_LIMIT = 2000
EPHEMERAL = 1 << 6
COMMAND, COMPONENT = 2, 3  # interaction types
REPLY, THINKING, UPDATE = 4, 5, 7  # interaction callback types
INTERACTION_TOKEN_SECONDS = 14 * 60  # Discord honours a token for 15 minutes
STYLES = {"once": 3, "session": 1, "deny": 4}  # green, blurple, red
NO_MENTIONS: dict[str, list[str]] = {"parse": []}  # an answer never pings @everyone
_TOKEN = re.compile(r"^[A-Za-z0-9._-]{1,600}$")


class DiscordInteractions(EditsMessages, AsksApprovals):
    api: WebApi
    _auth: str
    edit_interval = 1.25  # Discord allows 5 edits per 5 s in a channel: 4 previews and the final fit in 5 s

    def init_interactions(self) -> None:
        self._app_id = ""
        self._thinking: dict[str, list[tuple[str, float]]] = {}  # chat id -> (interaction token, when), oldest first
        self._settled: set[str] = set()  # approval messages a click already updated
        self._registering: asyncio.Task[None] | None = None

    # -- slash commands -----------------------------------------------------------------------

    def on_ready(self, data: dict[str, Any]) -> None:
        """READY names the application: register the commands once (in the background: the socket goes on)."""
        app_id = str((data.get("application") or {}).get("id") or "")
        if app_id.isdigit() and app_id != self._app_id:
            self._app_id = app_id
            self._registering = asyncio.get_running_loop().create_task(self._register_commands())

    async def _register_commands(self) -> None:
        commands = [{"name": name, "description": what[:100], "type": 1,
                     **({"options": [{"type": 3, "name": "name", "description": "the model to switch to",
                                      "required": False}]} if name == "model" else {})}
                    for name, what in COMMANDS.items()]
        try:
            await self.api.call("PUT", f"applications/{self._app_id}/commands", token=self._auth, json=commands,
                                attempts=3)
        except Exception as exc:  # the commands still work when typed as a message; only the menu is missing
            log.warning("discord: could not register the slash commands: %s", self.api.clean(str(exc)))

    async def on_interaction(self, data: dict[str, Any]) -> None:
        interaction, token = str(data.get("id") or ""), str(data.get("token") or "")
        user = (data.get("member") or {}).get("user") or data.get("user") or {}
        if not interaction.isdigit() or not _TOKEN.match(token) or not str(user.get("id") or "").isdigit():
            log.warning("discord: skipped an interaction without a usable id, token or user")
            return
        sender = Sender("discord", str(user["id"]), str(user.get("username") or ""))
        if data.get("type") == COMPONENT:
            await self._clicked(interaction, token, sender, data)
        elif data.get("type") == COMMAND:
            await self._command(interaction, token, sender, data)

    async def _command(self, interaction: str, token: str, sender: Sender, data: dict[str, Any]) -> None:
        body = data.get("data") or {}
        name = str(body.get("name") or "")
        if name not in COMMANDS or not str(data.get("channel_id") or "").isdigit():
            await self._callback(interaction, token, REPLY, {"content": "Unknown command.", "flags": EPHEMERAL})
            return
        argument = " ".join(str(o.get("value") or "") for o in body.get("options") or [] if isinstance(o, dict))
        chat_id = str(data["channel_id"])
        if not await self._callback(interaction, token, THINKING, {"flags": EPHEMERAL}):
            return
        waiting = self._thinking.setdefault(chat_id, [])
        waiting.append((token, asyncio.get_running_loop().time()))
        unanswered = "I don't know you yet: ask my owner to approve your pairing code."
        try:
            admitted = await self.receive(sender, chat_id, f"/{name} {argument}".strip(),
                                          private=not data.get("guild_id"), username=sender.username)
        except ShuttingDown:
            admitted, unanswered = False, "I am restarting: try again in a minute."
        mine = next((entry for entry in waiting if entry[0] == token), None)
        if not admitted and mine is not None:  # nothing will reply to it
            waiting.remove(mine)
            await self._webhook("PATCH", token, "messages/@original", {"content": unanswered})

    async def answer_thinking(self, chat_id: str, pieces: list[str]) -> bool:
        """Put a reply into the chat's "thinking" command answer, if one is waiting; False if none is."""
        waiting = self._thinking.get(chat_id)
        if not waiting:
            return False
        token, since = waiting.pop(0)  # commands are answered in their order
        if not waiting:
            del self._thinking[chat_id]
        if asyncio.get_running_loop().time() - since > INTERACTION_TOKEN_SECONDS:
            return False
        await self._webhook("PATCH", token, "messages/@original", {"content": pieces[0]})
        for piece in pieces[1:]:
            await self._webhook("POST", token, "", {"content": piece, "flags": EPHEMERAL})
        return True

    async def _webhook(self, method: str, token: str, path: str, body: dict[str, Any]) -> None:
        await self.api.call(method, f"webhooks/{self._app_id}/{token}/{path}".rstrip("/"), token=self._auth,
                            json={**body, "allowed_mentions": NO_MENTIONS})

    # -- approvals ----------------------------------------------------------------------------

    async def ask_approval(self, chat_id: str, request_id: str, question: str, choices: dict[str, str]) -> str:
        buttons = [{"type": 2, "style": STYLES.get(key, 2), "label": label,
                    "custom_id": approval_button(request_id, key)} for key, label in choices.items()]
        sent = await self.post(chat_id, {"content": question[:DISCORD_LIMIT],
                                         "components": [{"type": 1, "components": buttons}]})
        return str(sent.get("id") or "")

    async def settle_approval(self, chat_id: str, message_id: str, text: str) -> None:
        if message_id in self._settled:  # the owner's click already put the outcome there
            self._settled.discard(message_id)
            return
        await self._edit(chat_id, message_id, {"content": text[:DISCORD_LIMIT], "components": []})

    async def _clicked(self, interaction: str, token: str, sender: Sender, data: dict[str, Any]) -> None:
        decided, answer = await self.approval_pressed(sender, str((data.get("data") or {}).get("custom_id") or ""))
        message = data.get("message") or {}
        if not decided:  # refused (a stranger, or too late): only the clicker hears why
            await self._callback(interaction, token, REPLY, {"content": answer, "flags": EPHEMERAL})
            return
        content = f"{message.get('content') or ''}\n\n→ {answer}"[:DISCORD_LIMIT]
        if await self._callback(interaction, token, UPDATE, {"content": content, "components": []}):
            self._settled.add(str(message.get("id") or ""))

    async def _callback(self, interaction: str, token: str, kind: int, data: dict[str, Any]) -> bool:
        """Answer the interaction; False (logged) when Discord did not take it."""
        try:
            await self.api.call("POST", f"interactions/{interaction}/{token}/callback", token=self._auth,
                                json={"type": kind, "data": {**data, "allowed_mentions": NO_MENTIONS}}, attempts=2)
        except Exception as exc:  # past Discord's 3 s the token is dead: the click or command simply shows failed
            log.warning("discord: could not answer an interaction: %s", self.api.clean(str(exc)))
            return False
        return True

    # -- edits --------------------------------------------------------------------------------

    def split(self, text: str) -> list[str]:
        return split_message(text, DISCORD_LIMIT - len(STREAMING_MARK))  # a preview's mark must still fit

    async def start_message(self, chat_id: str, text: str) -> str:
        self._stop_typing(chat_id)
        return str((await self.post(chat_id, {"content": text})).get("id") or "")

    async def edit_message(self, chat_id: str, message_id: str, text: str, *, final: bool) -> None:
        await self._edit(chat_id, message_id, {"content": text})

    async def _edit(self, chat_id: str, message_id: str, body: dict[str, Any]) -> None:
        await self.api.call("PATCH", f"channels/{snowflake(chat_id)}/messages/{snowflake(message_id)}",
                            token=self._auth, json={**body, "allowed_mentions": NO_MENTIONS})

    async def post(self, chat_id: str, body: dict[str, Any]) -> dict[str, Any]:
        sent = await self.api.call("POST", f"channels/{snowflake(chat_id)}/messages", token=self._auth,
                                   json={**body, "allowed_mentions": NO_MENTIONS})
        return sent if isinstance(sent, dict) else {}

    async def close_interactions(self) -> None:
        if self._registering is not None:
            self._registering.cancel()
            await asyncio.gather(self._registering, return_exceptions=True)


def snowflake(value: str) -> str:
    """A Discord id (digits only): anything else could steer the request to another endpoint."""
    if not value.isdigit() or not value.isascii():
        raise ValueError(f"not a Discord id: {value[:40]!r}")
    return value
