"""The heartbeat: every ``heartbeat.interval`` minutes the assistant reads ``HEARTBEAT.md`` and acts on it.

- Nothing actionable (a missing or empty file, only headings, HTML comments or empty list items): no model
  call at all, so an idle heartbeat costs zero tokens.
- Otherwise one turn in a session of its own, cleared before each beat, so beats never pile up context or
  see the owner's conversations (the session's transcript keeps every beat).
- A reply that is just ``HEARTBEAT_OK`` means "nothing to do" and is dropped; anything else goes to the
  owner's last active channel (``last_channel``), through the bus. The Go version never delivered it.
- Each beat is logged, and its outcome kept in state (``heartbeat.last``) for ``status`` and the gateway.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from picoora.bus import LAST_CHANNEL, MessageBus, OutboundMessage

if TYPE_CHECKING:
    from picoora.assistant import Assistant

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
    outcome: str  # skipped | ok (nothing to do) | delivered | undelivered | error
    detail: str = ""


class HeartbeatService:
    def __init__(self, assistant: Assistant, bus: MessageBus, *, interval_minutes: int, workspace: Path,
                 clock: Callable[[], datetime] | None = None):
        self.assistant = assistant
        self.bus = bus
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
        await self.assistant.new_session(SESSION)  # no history: every beat starts from nothing
        result = await self.assistant.ask(prompt, session_key=SESSION)
        reply = result.text.strip()
        if result.stop_reason != "answer":
            return await self._log(Beat(now.isoformat(), "error", reply[:200]))
        if reply.strip("*`. \n") == OK_TOKEN:
            return await self._log(Beat(now.isoformat(), "ok"))
        target = await self.assistant.astore.get_state(LAST_CHANNEL) or ""
        channel, _, chat_id = target.partition(":")
        delivered = bool(chat_id) and await self.bus.publish_outbound(
            OutboundMessage(channel, chat_id, reply, metadata={"heartbeat": True, "turn_id": result.turn_id}))
        outcome = "delivered" if delivered else "undelivered"
        return await self._log(Beat(now.isoformat(), outcome, target or "no chat has talked to the assistant yet"))

    def _read(self) -> str:
        try:
            return self.path.read_text(encoding="utf-8", errors="replace")
        except (FileNotFoundError, IsADirectoryError):
            return ""

    async def _log(self, beat: Beat) -> Beat:
        log.info("heartbeat %s: %s %s", beat.at, beat.outcome, beat.detail)
        await self.assistant.astore.set_state(LAST_BEAT, json.dumps(asdict(beat)))
        return beat
