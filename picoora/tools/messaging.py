"""Tools that reach beyond the current reply: ``message`` (say something to a chat now), ``spawn`` (a task
that runs its own turn in the background and reports back) and ``subagent`` (the same, waited for).

They act through the turn's ``Messenger`` (``ToolContext.messenger``): the gateway's delivers to its front
doors and runs tasks as turns of its turn service; the terminal's prints. Without one (a bare library Agent)
the tools are not offered. A background task runs in a session of its own (``<session>:task-<id>``) and cannot start
further tasks, so a model cannot fork itself without end.
"""

from __future__ import annotations

import abc
from typing import Protocol

from pydantic import BaseModel, Field

from picoora.tools.base import Tool, ToolContext, ToolResult

TASK_MARK = ":task-"


class TaskRefused(Exception):
    """The messenger cannot start a task now (the gateway is shutting down); the message says so."""


class Messenger(Protocol):
    async def send(self, channel: str, chat_id: str, text: str, *, origin_session: str) -> bool: ...
    def spawn(self, task: str, origin_session: str) -> str: ...  # starts it; returns the task id
    async def run_subagent(self, task: str, origin_session: str) -> str: ...  # its answer


def chat_of(session_key: str) -> tuple[str, str]:
    """(channel, chat id) of a session key; a background task's session belongs to the chat that started it."""
    channel, _, chat_id = session_key.partition(":")
    return channel, chat_id.split(TASK_MARK)[0]


class MessageArgs(BaseModel):
    text: str = Field(min_length=1)
    channel: str = ""
    chat_id: str = ""


class SendMessage(Tool):
    name = "message"
    description = "Send a message to a chat now (this chat unless channel and chat_id are given)."
    Args = MessageArgs

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        assert isinstance(args, MessageArgs)
        if ctx.messenger is None:
            return ToolResult.error("messages cannot be sent from here")
        channel, chat_id = chat_of(ctx.session_key)
        target = (args.channel or channel, args.chat_id or chat_id)
        if not await ctx.messenger.send(*target, args.text, origin_session=ctx.session_key):
            return ToolResult.error(f"no {target[0]} channel is running, so the message was not sent")
        return ToolResult(f"Sent to {target[0]}:{target[1]}.")


class TaskArgs(BaseModel):
    task: str = Field(min_length=1, description="what to do, self-contained")


class _TaskTool(Tool):
    Args = TaskArgs

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        assert isinstance(args, TaskArgs)
        if ctx.messenger is None:
            return ToolResult.error("background tasks cannot run from here")
        if TASK_MARK in ctx.session_key:
            return ToolResult.error("a background task cannot start another one; do the work here")
        try:
            return await self.start(ctx.messenger, args.task, ctx.session_key)
        except TaskRefused as exc:
            return ToolResult.error(str(exc))

    @abc.abstractmethod
    async def start(self, messenger: Messenger, task: str, origin_session: str) -> ToolResult:
        """Hand ``task`` to ``messenger`` (checked: there is one, and this is not a task already)."""


class Spawn(_TaskTool):
    name = "spawn"
    description = "Start a background task (its own agent turn); its result is sent to this chat when done."

    async def start(self, messenger: Messenger, task: str, origin_session: str) -> ToolResult:
        task_id = messenger.spawn(task, origin_session)
        return ToolResult(f"Started background task {task_id}; its result will be sent here when it is done.")


class Subagent(_TaskTool):
    name = "subagent"
    description = "Run a task as a separate agent turn and wait for its answer."

    async def start(self, messenger: Messenger, task: str, origin_session: str) -> ToolResult:
        return ToolResult(await messenger.run_subagent(task, origin_session))


MESSAGING_TOOLS = (SendMessage, Spawn, Subagent)
