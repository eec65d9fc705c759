"""The terminal's ``Messenger`` behind the messaging tools (``picoora agent``).

A message to this chat is printed (no other chat is reachable from a terminal); a spawned task runs as a
turn of its own (``<session>:task-<id>``) and prints its result when done, and the assistant's close waits
for it, so a one-shot run does not exit before its background task reports.
"""

from __future__ import annotations

import asyncio
import secrets
from typing import IO, TYPE_CHECKING

from picoora.tools.messaging import TASK_MARK, chat_of

if TYPE_CHECKING:
    from picoora.assistant import Assistant


class TerminalMessenger:
    def __init__(self, assistant: Assistant, out: IO[str]):
        self.assistant = assistant
        self.out = out
        self._running: set[asyncio.Task[None]] = set()

    async def send(self, channel: str, chat_id: str, text: str, *, origin_session: str) -> bool:
        if (channel, chat_id) != chat_of(origin_session):
            return False
        self._print(text)
        return True

    def spawn(self, task: str, origin_session: str) -> str:
        task_id = secrets.token_hex(3)
        job = asyncio.get_running_loop().create_task(self._background(task, origin_session, task_id))
        self._running.add(job)
        job.add_done_callback(self._running.discard)
        return task_id

    async def _background(self, task: str, origin_session: str, task_id: str) -> None:
        text = await self._answer(task, origin_session, task_id)
        self._print(f"\nBackground task {task_id} finished:\n{text}")

    async def run_subagent(self, task: str, origin_session: str) -> str:
        return await self._answer(task, origin_session, secrets.token_hex(3))

    async def _answer(self, task: str, origin_session: str, task_id: str) -> str:
        result = await self.assistant.ask(task, session_key=f"{origin_session}{TASK_MARK}{task_id}")
        return result.text if result.stop_reason == "answer" else f"The task stopped without an answer: {result.text}"

    def _print(self, text: str) -> None:
        self.out.write(text.rstrip() + "\n")
        self.out.flush()

    async def wait_idle(self) -> None:
        while self._running:
            await asyncio.gather(*list(self._running), return_exceptions=True)
