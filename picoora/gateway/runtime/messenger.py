"""The gateway's ``Messenger`` behind the messaging tools (``picoora.tools.messaging``).

- ``message`` goes out through outbound delivery to any front door; what it told the asking chat during
  a turn is remembered, so the chat's reply is not sent a second time with the same words;
- ``spawn`` submits a background turn to the turn service (session ``<session>:task-<id>``) whose result
  is delivered to the chat that asked, or with ``wait`` submits one and waits for its answer; both are
  drained at shutdown like every other turn, and refused once the gateway stops taking turns.
"""

from __future__ import annotations

import asyncio
import secrets
from typing import TYPE_CHECKING

from picoora.gateway.channels.links import Inbound, ShuttingDown
from picoora.gateway.runtime.envelopes import OnOutcome, TurnOutcome
from picoora.gateway.runtime.turns import outcome_of
from picoora.tools.messaging import TASK_MARK, TaskRefused, chat_of

if TYPE_CHECKING:
    from picoora.gateway.runtime.delivery import Delivery
    from picoora.gateway.runtime.turns import Submit


class GatewayMessenger:
    def __init__(self, submit: Submit, delivery: Delivery):
        self.submit = submit
        self.delivery = delivery
        self._said: dict[str, list[str]] = {}  # session -> what ``message`` told its own chat this turn

    async def send(self, channel: str, chat_id: str, text: str, *, origin_session: str) -> bool:
        receipt = await self.delivery.deliver(channel, chat_id, text)
        if receipt.delivered and (channel, chat_id) == chat_of(origin_session):
            self._said.setdefault(origin_session, []).append(" ".join(text.split()))
        return receipt.delivered

    def already_said(self, session_key: str, text: str) -> bool:
        """Whether ``text`` (the turn's final reply) was already sent to the chat by ``message``; forgets the
        turn's messages either way."""
        return " ".join(text.split()) in self._said.pop(session_key, [])

    def _task(self, task: str, origin_session: str, task_id: str,
              then: OnOutcome | None = None) -> asyncio.Task[TurnOutcome]:
        try:
            return self.submit(Inbound("task", task_id, task, sender_id="task",
                                       session_key=f"{origin_session}{TASK_MARK}{task_id}"), then=then)
        except ShuttingDown:
            raise TaskRefused("the gateway is shutting down: no new background task can start") from None

    def spawn(self, task: str, origin_session: str) -> str:
        task_id = secrets.token_hex(3)

        async def report(inbound: Inbound, outcome: TurnOutcome) -> None:
            await self.delivery.deliver(*chat_of(origin_session), f"Background task {task_id} {_ended(outcome)}")

        self._task(task, origin_session, task_id, report)
        return task_id

    async def run_subagent(self, task: str, origin_session: str) -> str:
        outcome = await outcome_of(self._task(task, origin_session, secrets.token_hex(3)))
        return outcome.text if outcome.ok else f"The task stopped without an answer: {outcome.error}"

    async def wait_idle(self) -> None:
        """Nothing to wait for here: the turn service drains background turns with every other turn."""


def _ended(outcome: TurnOutcome) -> str:
    if outcome.ok:
        return f"finished:\n{outcome.text}"
    if outcome.status == "cut_off":
        return "was cut off: the gateway stopped before it finished."
    return f"stopped without an answer: {outcome.error}"
