"""The two ``Messenger`` implementations behind the messaging tools (``picoora.tools.messaging``).

- ``BusMessenger`` (the gateway): ``message`` goes out through the message bus to the channel; a spawned
  task's result is delivered to the chat that asked; what ``message`` already said to the asking chat is
  remembered so the dispatcher does not send the same final reply twice.
- ``TerminalMessenger`` (``picoora agent``): a message to this chat is printed; a spawned task reports when
  it is done, and a one-shot run waits for it before exiting, so nothing is lost silently.

Background tasks run as the owner's turns in sessions of their own (``<session>:task-<id>``).
"""

from __future__ import annotations

import abc
import asyncio
import secrets
from typing import IO, TYPE_CHECKING, Awaitable, Callable

from picoora.bus import MessageBus, OutboundMessage
from picoora.tools.messaging import MESSAGING_TOOLS, TASK_MARK, chat_of

if TYPE_CHECKING:
    from picoora.assistant import Assistant


class _Tasks:
    """Background turns of one assistant, tracked so shutdown can wait for them."""

    def __init__(self, assistant: Assistant, report: Callable[[str, str, str], Awaitable[None]]):
        self.assistant = assistant
        self.report = report  # (origin session, task id, text) -> deliver it
        self.running: set[asyncio.Task[None]] = set()

    def spawn(self, task: str, origin_session: str) -> str:
        task_id = secrets.token_hex(3)
        job = asyncio.get_running_loop().create_task(self._run(task, origin_session, task_id))
        self.running.add(job)
        job.add_done_callback(self.running.discard)
        return task_id

    async def _run(self, task: str, origin_session: str, task_id: str) -> None:
        text = await self.run(task, origin_session, task_id)
        await self.report(origin_session, task_id, f"Background task {task_id} finished:\n{text}")

    async def run(self, task: str, origin_session: str, task_id: str | None = None) -> str:
        session = f"{origin_session}{TASK_MARK}{task_id or secrets.token_hex(3)}"
        result = await self.assistant.ask(task, session_key=session)
        return result.text if result.stop_reason == "answer" else f"The task stopped without an answer: {result.text}"

    async def wait_idle(self) -> None:
        while self.running:
            await asyncio.gather(*list(self.running), return_exceptions=True)


class _TaskMessenger(abc.ABC):
    """What both messengers do alike: background tasks and subagents run as ``_Tasks``; only where a finished
    task's result goes (``_report``) differs."""

    def __init__(self, assistant: Assistant):
        self._tasks = _Tasks(assistant, self._report)

    @abc.abstractmethod
    async def _report(self, origin_session: str, task_id: str, text: str) -> None:
        """Deliver a finished background task's result to the chat that started it."""

    def spawn(self, task: str, origin_session: str) -> str:
        return self._tasks.spawn(task, origin_session)

    async def run_subagent(self, task: str, origin_session: str) -> str:
        return await self._tasks.run(task, origin_session)

    async def wait_idle(self) -> None:
        await self._tasks.wait_idle()


class BusMessenger(_TaskMessenger):
    def __init__(self, assistant: Assistant, bus: MessageBus):
        super().__init__(assistant)
        self.bus = bus
        self._said: dict[str, list[str]] = {}  # session -> what ``message`` told its own chat this turn

    async def send(self, channel: str, chat_id: str, text: str, *, origin_session: str) -> bool:
        delivered = await self.bus.publish_outbound(OutboundMessage(channel, chat_id, text))
        if delivered and (channel, chat_id) == chat_of(origin_session):
            self._said.setdefault(origin_session, []).append(" ".join(text.split()))
        return delivered

    def already_said(self, session_key: str, text: str) -> bool:
        """Whether ``text`` (the turn's final reply) was already sent to the chat by ``message``; forgets the
        turn's messages either way."""
        return " ".join(text.split()) in self._said.pop(session_key, [])

    async def _report(self, origin_session: str, task_id: str, text: str) -> None:
        await self.bus.publish_outbound(OutboundMessage(*chat_of(origin_session), text, metadata={"task_id": task_id}))


class TerminalMessenger(_TaskMessenger):
    def __init__(self, assistant: Assistant, out: IO[str]):
        super().__init__(assistant)
        self.out = out

    async def send(self, channel: str, chat_id: str, text: str, *, origin_session: str) -> bool:
        if (channel, chat_id) != chat_of(origin_session):
            return False  # no other chat is reachable from a terminal
        self.out.write(text.rstrip() + "\n")
        self.out.flush()
        return True

    async def _report(self, origin_session: str, task_id: str, text: str) -> None:
        self.out.write(f"\n{text.rstrip()}\n")
        self.out.flush()


def enable_messaging(assistant: Assistant, messenger: _TaskMessenger) -> None:
    """Offer the messaging tools to the owner's turns, acting through ``messenger`` (guests never get them:
    they could write to any chat or run up the owner's model time)."""
    assistant.agent.messenger = messenger
    assistant.messenger = messenger
    for tool_class in MESSAGING_TOOLS:
        if tool_class.name not in assistant.tools.names():
            assistant.tools.register(tool_class())
