"""The ``cron`` tool: the model sets up, lists and changes scheduled jobs for the person it talks to.

Jobs go into the store (``picoora.scheduler.jobs.JobBook``); the gateway's scheduler runs them and
delivers the result to the owner's last private chat (a request from a private chat: that one; from the
web chat: that web chat), else the terminal; never to a group chat (``picoora cron add --chat`` can name one).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from picoora.tools.base import Tool, ToolContext, ToolResult
from picoora.tools.messaging import chat_of

if TYPE_CHECKING:  # the scheduler's module loads when the tool runs, not with every registry
    from picoora.scheduler.jobs import Job, JobBook


class CronArgs(BaseModel):
    action: Literal["add", "list", "remove", "enable", "disable"]
    kind: Literal["at", "every", "cron"] = "at"
    when: str = Field("", description="time (ISO, 20:03, in 5m), interval (2h) or cron expression")
    message: str = Field("", description="what to do or say then")
    reminder: bool = Field(False, description="send message as is, no agent run")
    job_id: str = ""


def _line(job: Job) -> str:
    state = "on" if job.enabled else "off"
    what = "reminder" if job.action == "reminder" else "task"
    zone = f" {job.timezone}" if job.timezone else ""
    return f"- {job.id} [{state}] {job.kind} {job.spec}{zone} → {job.channel}:{job.chat_id} ({what}): {job.text}"


class Cron(Tool):
    name = "cron"
    description = "Schedule, list, remove, enable or disable jobs: reminders or tasks run later or repeatedly."
    Args = CronArgs

    def __init__(self, default_zone: str = ""):
        self.default_zone = default_zone

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        assert isinstance(args, CronArgs)
        from picoora.scheduler.jobs import JobBook, JobError

        book = JobBook(ctx.store, default_zone=self.default_zone)
        try:
            return await asyncio.to_thread(self._act, book, args, ctx)
        except JobError as exc:
            return ToolResult.error(str(exc))

    def _act(self, book: JobBook, args: CronArgs, ctx: ToolContext) -> ToolResult:
        if args.action == "list":
            jobs = book.jobs()
            return ToolResult("\n".join(_line(j) for j in jobs) if jobs else "No scheduled jobs.")
        if args.action == "add":
            if not (args.when and args.message):
                return ToolResult.error("add needs when and message")
            channel, chat_id = self._target(ctx)
            job = book.add(args.kind, args.when, args.message, channel, chat_id,
                           action="reminder" if args.reminder else "agent")
            return ToolResult(f"Scheduled:\n{_line(job)}")
        if not args.job_id:
            return ToolResult.error(f"{args.action} needs job_id (list shows the ids)")
        if args.action == "remove":
            if not book.remove(args.job_id):
                return ToolResult.error(f"no job {args.job_id} (list shows the ids)")
            return ToolResult(f"Removed job {args.job_id}.")
        job = book.set_enabled(args.job_id, args.action == "enable")
        return ToolResult(f"{'Enabled' if job.enabled else 'Disabled'}:\n{_line(job)}")

    @staticmethod
    def _target(ctx: ToolContext) -> tuple[str, str]:
        """The owner's last private chat (for a turn from a private chat: that chat, remembered before the
        turn ran), or the web chat this turn came from, else the terminal. Never a group chat the turn came
        from: a job's answer may hold anything the owner told the assistant."""
        from picoora.owner_chat import default_target

        channel, chat_id = chat_of(ctx.session_key)
        if channel == "web" and chat_id:  # the owner's own web chat
            return channel, chat_id
        return default_target(ctx.store)
