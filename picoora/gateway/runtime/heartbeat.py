"""The heartbeat: every ``heartbeat.interval`` minutes the assistant reads ``HEARTBEAT.md`` and acts on it.

- Nothing actionable (a missing or empty file, only headings, HTML comments or empty list items): no model
  call at all, so an idle heartbeat costs zero tokens.
- Otherwise one turn in a session of its own, cleared before each beat, so beats never pile up context or
  see the owner's conversations (the session's transcript keeps every beat).
- A reply that is just ``HEARTBEAT_OK`` means "nothing to do" and is dropped; anything else goes to the
  owner's last active chat, else the terminal (``owner_chat.default_target``). The Go version never delivered it.
- A beat is a turn of the turn service, so it keeps its session's order and is drained at shutdown; its
  record is written inside that turn (``cut_off`` when the gateway stopped it).
- Each beat is logged, and its outcome kept in state (``heartbeat.last``) for ``status`` and the gateway.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from picoora.gateway.channels.links import Inbound, ShuttingDown
from picoora.gateway.runtime.delivery import Delivery
from picoora.gateway.runtime.envelopes import TurnOutcome
from picoora.owner_chat import default_target

if TYPE_CHECKING:
    from picoora.gateway.runtime.turns import Submit
    from picoora.store.aio import AsyncStore

log = logging.getLogger(__name__)

HEARTBEAT_FILE = "HEARTBEAT.md"
OK_TOKEN = "HEARTBEAT_OK"
LAST_BEAT = "heartbeat.last"
SESSION = "heartbeat:main"  # its transcript keeps every beat; its history is cleared before each one
PROMPT = """# Heartbeat check

Current time: {now}

This is a scheduled heartbeat check, not a message from the user. Review the tasks below and do what
needs doing with your tools. If nothing needs attention, reply with exactly: HEARTBEAT_OK

{tasks}"""

_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_EMPTY_LINE = re.compile(r"^\s*(#.*|[-*+]\s*(\[[ xX]?\])?\s*|>\s*)?$")
_TASKS_HEADING = re.compile(r"^#{1,6}\s*tasks\s*$", re.IGNORECASE | re.MULTILINE)


def tasks_of(text: str) -> str:
    """The part that holds tasks: what follows a "Tasks" heading when there is one (the template explains
    itself above it), else the whole file; comments removed."""
    text = _COMMENT.sub("", text)
    heading = _TASKS_HEADING.search(text)
    return text[heading.end():] if heading else text


def actionable(text: str) -> bool:
    """Whether ``text`` holds anything to act on: a task line that is not a heading or an empty item."""
    return _holds_a_task(tasks_of(text))


def _holds_a_task(tasks: str) -> bool:
    return any(not _EMPTY_LINE.match(line) for line in tasks.splitlines())


@dataclass
class Beat:
    at: str
    outcome: str  # skipped | ok (nothing to do) | delivered | undelivered | error | cut_off
    detail: str = ""


class HeartbeatService:
    def __init__(self, astore: AsyncStore, *, submit: Submit, delivery: Delivery, interval_minutes: int,
                 workspace: Path, clock: Callable[[], datetime] | None = None):
        self.astore = astore  # the owner's: the beat record and where the owner spoke last
        self.submit = submit
        self.delivery = delivery
        self.interval_minutes = interval_minutes
        self.path = workspace / HEARTBEAT_FILE
        self._clock = clock or (lambda: datetime.now(timezone.utc))

    async def run(self) -> None:
        """Beat every interval until cancelled (0 minutes: never)."""
        if self.interval_minutes <= 0:
            return
        while True:
            await asyncio.sleep(self.interval_minutes * 60)
            try:
                await self.beat()
            except Exception:  # one failed beat must not end the heartbeat
                log.exception("the heartbeat failed")

    async def beat(self) -> Beat:
        now = self._clock()
        tasks = tasks_of(await asyncio.to_thread(self._read))
        if not _holds_a_task(tasks):
            return await self._log(Beat(now.isoformat(), "skipped", "nothing actionable in HEARTBEAT.md"))
        prompt = PROMPT.format(now=now.astimezone().strftime("%Y-%m-%d %H:%M %Z"), tasks=tasks.strip())
        beats: list[Beat] = []

        async def finish(inbound: Inbound, outcome: TurnOutcome) -> None:
            beats.append(await self._log(await self._outcome(now, outcome)))

        try:
            task = self.submit(Inbound("heartbeat", "main", prompt, sender_id="heartbeat", session_key=SESSION,
                                       fresh_session=True), then=finish)
        except ShuttingDown:
            return await self._log(Beat(now.isoformat(), "cut_off", "the gateway was shutting down"))
        await asyncio.wait({task})
        return beats[0] if beats else Beat(now.isoformat(), "error", "the beat ended without a record")

    async def _outcome(self, now: datetime, outcome: TurnOutcome) -> Beat:
        reply = outcome.text.strip()
        if outcome.status == "cut_off":
            return Beat(now.isoformat(), "cut_off", outcome.error)
        if not outcome.ok:
            return Beat(now.isoformat(), "error", reply[:200])
        if reply.strip("*`. \n") == OK_TOKEN:
            return Beat(now.isoformat(), "ok")
        channel, chat_id = await self.astore.run(default_target, self.astore.store)
        receipt = await self.delivery.deliver(channel, chat_id, reply)
        if receipt.delivered:
            return Beat(now.isoformat(), "delivered", receipt.where)
        return Beat(now.isoformat(), "undelivered", receipt.error)

    def _read(self) -> str:
        try:
            return self.path.read_text(encoding="utf-8", errors="replace")
        except (FileNotFoundError, IsADirectoryError):
            return ""

    async def _log(self, beat: Beat) -> Beat:
        log.info("heartbeat %s: %s %s", beat.at, beat.outcome, beat.detail)
        await self.astore.state.set(LAST_BEAT, json.dumps(asdict(beat)))
        return beat
