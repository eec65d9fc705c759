"""Tools that reach beyond the current reply: ``message`` (say something to a chat now) and ``spawn`` (a task
that runs its own turn, in the background and reporting back, or with ``wait`` waited for).

They act through the turn's ``Messenger`` (``ToolContext.messenger``): the gateway's delivers to its front
doors and runs tasks as turns of its turn service; the terminal's prints. Without one (a bare library Agent)
the tools are not offered. A background task runs in a session of its own (``<session>:task-<id>``) and cannot start
further tasks, so a model cannot fork itself without end.
"""

from __future__ import annotations

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
    wait: bool = Field(False, description="wait for its answer instead of having it sent here")


class Spawn(Tool):
    """One tool for both ways of running a task as a turn of its own (they were ``spawn`` and ``subagent``:
    two schemas on every prompt for one action with one switch)."""

    name = "spawn"
    description = "Run a task as its own agent turn, in the background (result sent to this chat) or waited for."
    Args = TaskArgs

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        assert isinstance(args, TaskArgs)
        if ctx.messenger is None:
            return ToolResult.error("background tasks cannot run from here")
        if TASK_MARK in ctx.session_key:
            return ToolResult.error("a background task cannot start another one; do the work here")
        try:
            if args.wait:
                return ToolResult(await ctx.messenger.run_subagent(args.task, ctx.session_key))
            task_id = ctx.messenger.spawn(args.task, ctx.session_key)
        except TaskRefused as exc:
            return ToolResult.error(str(exc))
        return ToolResult(f"Started background task {task_id}; its result will be sent here when it is done.")


MESSAGING_TOOLS = (SendMessage, Spawn)
