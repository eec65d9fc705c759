"""Slack's buttons, slash commands and message edits, for ``SlackChannel``.

- Answers stream into one message by ``chat.update`` (``runtime.streaming``), at most every 1.2 s:
  ``chat.update`` is a Tier 3 method (about 50 a minute); a 429's ``Retry-After`` is waited out by
  ``web_api.WebApi``. Previews go through ``to_mrkdwn`` as the final text does, so half an answer cannot
  ping ``<!channel>`` either.
- An approval question is a Block Kit message: the question, then an actions block with one button per
  choice (``action_id``: ``links.approval_button``). A click arrives over Socket Mode as an ``interactive``
  envelope (``block_actions``), acknowledged like every envelope. The owner's click decides, and the
  question is then replaced by its outcome without buttons (``chat.update``); anyone else's click changes
  nothing and they alone are told why (``chat.postEphemeral``).
- Slash commands arrive as ``slash_commands`` envelopes once the app's manifest declares them (``/new``,
  ``/model``, ``/stop``, ``/whoami``, ``/help``); each goes in as the typed text would, in the chat it was
  run in (a direct message with the app, or a channel the bot is in: that is where the reply is posted).
  ``deploy/slack/app-manifest.yaml`` declares them, with the scopes, events and interactivity used here.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from picoora.gateway.channels.base import AsksApprovals, EditsMessages
from picoora.gateway.channels.links import COMMANDS, approval_button, pressed_approval
from picoora.gateway.channels.slack.format import SLACK_PIECE, to_mrkdwn
from picoora.gateway.channels.split import split_message
from picoora.identities import Sender

log = logging.getLogger(__name__)

SECTION_LIMIT = 3000  # characters of a section block's text
STYLES = {"once": "primary", "deny": "danger"}
_SLACK_ID = re.compile(r"^[A-Z0-9]{2,30}$")
_TS = re.compile(r"^\d{1,12}\.\d{1,9}$")


def slack_target(chat_id: str) -> tuple[str, str]:
    """(channel, thread ts or "") of a chat id; a ValueError for anything that is not one."""
    channel, _, thread = chat_id.partition(":")
    if not _SLACK_ID.match(channel) or (thread and not _TS.match(thread)):
        raise ValueError(f"not a Slack chat id: {chat_id[:40]!r}")
    return channel, thread


class SlackInteractions(EditsMessages, AsksApprovals):
    _web: Callable[..., Awaitable[dict[str, Any]]]
    _username: Callable[[str], Awaitable[str]]
    edit_interval = 1.2  # chat.update: about 50 a minute

    async def post(self, chat_id: str, text: str, **extra: Any) -> str:
        """Post ``text`` (Markdown, turned into mrkdwn) to the chat; the message's ts."""
        channel, thread = slack_target(chat_id)
        message: dict[str, Any] = {"channel": channel, "text": to_mrkdwn(text), "mrkdwn": True,
                                   "unfurl_links": False, **extra}
        if thread:
            message["thread_ts"] = thread
        return str((await self._web("chat.postMessage", json=message)).get("ts") or "")

    async def _update(self, chat_id: str, ts: str, text: str, **extra: Any) -> None:
        channel, _ = slack_target(chat_id)
        if not _TS.match(ts):
            raise ValueError(f"not a Slack message ts: {ts[:40]!r}")
        await self._web("chat.update", json={"channel": channel, "ts": ts, "text": to_mrkdwn(text), **extra})

    # -- edits --------------------------------------------------------------------------------

    def split(self, text: str) -> list[str]:
        return split_message(text, SLACK_PIECE)

    async def start_message(self, chat_id: str, text: str) -> str:
        self._stop_typing(chat_id)
        return await self.post(chat_id, text)

    async def edit_message(self, chat_id: str, message_id: str, text: str, *, final: bool) -> None:
        await self._update(chat_id, message_id, text)

    # -- approvals ----------------------------------------------------------------------------

    async def ask_approval(self, chat_id: str, request_id: str, question: str, choices: dict[str, str]) -> str:
        buttons = [{"type": "button", "text": {"type": "plain_text", "text": label},
                    "action_id": approval_button(request_id, key), "value": key,
                    **({"style": STYLES[key]} if key in STYLES else {})} for key, label in choices.items()]
        return await self.post(chat_id, question, blocks=[_section(question),
                                                          {"type": "actions", "elements": buttons}])

    async def settle_approval(self, chat_id: str, message_id: str, text: str) -> None:
        await self._update(chat_id, message_id, text, blocks=[_section(text)])  # no actions block: no buttons

    async def on_interactive(self, payload: dict[str, Any]) -> None:
        """A button press (``block_actions``); other interactions are not used."""
        user, channel = payload.get("user") or {}, str((payload.get("channel") or {}).get("id") or "")
        home = str((payload.get("team") or {}).get("id") or "")
        team = str(user.get("team_id") or home or "-")
        if payload.get("type") != "block_actions" or not user.get("id") or not _SLACK_ID.match(channel):
            return
        for action in payload.get("actions") or []:
            data = str(action.get("action_id") or "")
            if pressed_approval(data) is None or self.links.answer_approval is None:  # not a question of ours
                continue
            # A handle is unique only in its own workspace (as for messages): no username for a guest org's.
            username = await self._username(str(user["id"])) if team == home else ""
            decided, answer = await self.approval_pressed(Sender("slack", f"{team}:{user['id']}", username), data)
            if not decided:  # refused: only the presser hears why
                thread = str((payload.get("message") or {}).get("thread_ts") or "")
                await self._web("chat.postEphemeral", json={"channel": channel, "user": user["id"], "text": answer,
                                                            **({"thread_ts": thread} if _TS.match(thread) else {})})

    # -- slash commands -----------------------------------------------------------------------

    async def on_slash_command(self, payload: dict[str, Any]) -> None:
        """``/new`` and the others, as if typed in the chat they were run in. Raises ``ShuttingDown``."""
        name, channel = str(payload.get("command") or "").lstrip("/"), str(payload.get("channel_id") or "")
        user, team = str(payload.get("user_id") or ""), str(payload.get("team_id") or "-")
        if name not in COMMANDS or not _SLACK_ID.match(channel) or not _SLACK_ID.match(user):
            log.warning("slack: skipped a slash command picoora does not have (the app's manifest declares it?)")
            return
        username = await self._username(user)
        text = f"/{name} {payload.get('text') or ''}".strip()
        await self.receive(Sender("slack", f"{team}:{user}", username), channel, text,
                           private=channel.startswith("D"), username=username)


def _section(text: str) -> dict[str, Any]:
    """The question as plain text: the call's arguments are shown as they are, and nothing in them can ping."""
    return {"type": "section", "text": {"type": "plain_text", "text": text[:SECTION_LIMIT], "emoji": False}}
