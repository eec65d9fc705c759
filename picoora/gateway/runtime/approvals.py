"""The owner's yes before a risky tool call of a chat turn: buttons in the chat, a timeout that means no.

A turn that came from a chat channel listed in ``tools.approvals.channels`` gets an ``approve`` callable
(``Approvals.for_turn``), which the tool registry awaits before each call. For a tool listed in
``tools.approvals.tools`` it asks the owner (``AsksApprovals.ask_approval``: Telegram's inline keyboard,
Discord's buttons, Slack's Block Kit actions) and waits up to ``timeout_seconds``:

- **approve once**: this call runs;
- **this session**: this call and the session's later calls of the same tool run without asking;
- **deny**, or no answer in time: the call does not run, and the model is told why.

The owner is asked in the chat the turn came from when the owner sent it, else in the owner's last private
chat on a channel that can ask. Only the owner's button press counts (``Directory.person_of``: a configured
or allow-listed owner identity); a stranger's is refused. The terminal, the HTTP API, jobs and the heartbeat
are not asked. Grants live in this process only: a restart asks again.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from picoora.scheduler.jobs import last_chat

if TYPE_CHECKING:
    from picoora.agent.loop import Approve
    from picoora.config import ApprovalsConfig
    from picoora.gateway.channels.base import AsksApprovals
    from picoora.gateway.runtime.envelopes import Inbound
    from picoora.people import Person, Sender
    from picoora.store.protocol import Store

log = logging.getLogger(__name__)

CHOICES = {"once": "Approve once", "session": "This session", "deny": "Deny"}
ARGUMENTS_SHOWN = 600  # characters of the call's arguments in the question


class Approvals:
    def __init__(self, settings: ApprovalsConfig, owner_store: Store,
                 is_owner: Callable[[Sender], Awaitable[bool]]):
        self.settings = settings
        self.owner_store = owner_store
        self.is_owner = is_owner
        self.channels: dict[str, AsksApprovals] = {}  # the channels that can ask
        self._pending: dict[str, asyncio.Future[str]] = {}
        self._granted: set[tuple[str, str, str]] = set()  # (person, session, tool) approved for the session

    def for_turn(self, inbound: Inbound) -> Approve | None:
        """The ``approve`` of ``inbound``'s turn; None when its door is not asked."""
        if not inbound.from_chat or inbound.channel not in self.settings.channels or not self.settings.tools:
            return None

        async def approve(tool: str, arguments: dict[str, Any]) -> str | None:
            if tool not in self.settings.tools:
                return None
            grant = (inbound.person_name, inbound.session, tool)
            if grant in self._granted:
                return None
            choice = await self._ask(inbound, tool, arguments)
            if choice == "session":
                self._granted.add(grant)
            if choice in ("once", "session"):
                return None
            if choice == "timeout":
                return (f"Not run: the owner did not answer within {self.settings.timeout_seconds:g} s, so {tool} "
                        "was not approved. Ask them, or do without it.")
            if choice == "unreachable":
                return f"Not run: {tool} needs the owner's approval and there is no chat to ask them in."
            return f"Not run: the owner denied this {tool} call. Do not try it again in another way."

        return approve

    async def _ask(self, inbound: Inbound, tool: str, arguments: dict[str, Any]) -> str:
        where = self._owner_chat(inbound)
        if where is None:
            return "unreachable"
        channel, chat_id = where
        request_id = uuid.uuid4().hex[:12]
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        question = _question(inbound.person, tool, arguments)
        try:
            message_id = await channel.ask_approval(chat_id, request_id, question, CHOICES)
        except Exception as exc:
            self._pending.pop(request_id, None)
            log.warning("could not ask the owner to approve %s: %s", tool, exc)
            return "unreachable"
        try:
            choice = await asyncio.wait_for(future, self.settings.timeout_seconds)
        except asyncio.TimeoutError:
            choice = "timeout"
        finally:
            self._pending.pop(request_id, None)
        outcome = {"once": "approved once", "session": "approved for this session", "deny": "denied",
                   "timeout": f"not answered within {self.settings.timeout_seconds:g} s: not run"}[choice]
        try:
            await channel.settle_approval(chat_id, message_id, f"{question}\n\n→ {outcome}")
        except Exception as exc:  # the buttons stay; the decision stands
            log.warning("could not mark the approval of %s as settled: %s", tool, exc)
        return choice

    def _owner_chat(self, inbound: Inbound) -> tuple[AsksApprovals, str] | None:
        own = inbound.person is None or inbound.person.owner
        if own and inbound.channel in self.channels:
            return self.channels[inbound.channel], inbound.chat_id
        private = last_chat(self.owner_store)  # the private chat the owner spoke in last
        if private is not None and private[0] in self.channels:
            return self.channels[private[0]], private[1]
        return None

    async def answer(self, sender: Sender, request_id: str, choice: str) -> str:
        """A button press: what to tell the presser."""
        future = self._pending.get(request_id)
        if future is None or future.done():
            return "This question was already answered or has expired."
        if choice not in CHOICES:
            return "Unknown choice."
        if not await self.is_owner(sender):
            log.warning("approvals: %s:%s pressed a button but is not the owner", sender.channel, sender.sender_id)
            return "Only the owner can answer this."
        future.set_result(choice)
        return CHOICES[choice]


def _question(person: Person | None, tool: str, arguments: dict[str, Any]) -> str:
    who = "This chat" if person is None or person.owner else person.name
    shown = json.dumps(arguments, ensure_ascii=False, indent=1)
    if len(shown) > ARGUMENTS_SHOWN:
        shown = shown[:ARGUMENTS_SHOWN] + " …"
    return f"{who} wants to run {tool}:\n{shown}\nAllow it?"
