"""``picoora cron list|add|remove|enable|disable``: scheduled jobs, editable while the gateway runs.

The gateway's scheduler re-reads the jobs every few seconds, so a change here takes effect without a
restart, and nothing the scheduler records (last run, outcome) can undo it.
"""

from __future__ import annotations

import json
from datetime import datetime

import typer

from picoora.cli.errors import EXIT_USAGE, CLIError, load_config


def register(app: typer.Typer) -> None:
    cron = typer.Typer(name="cron", help="Scheduled jobs: reminders and tasks at a time, every interval, or by cron.",
                       no_args_is_help=True)
    for name, command in (("list", list_), ("add", add), ("remove", remove), ("enable", enable),
                          ("disable", disable)):
        cron.command(name)(command)
    app.add_typer(cron)


def list_(ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List the jobs with their schedule, target, state and last run."""
    from dataclasses import asdict

    from picoora.cli.opening import command_store
    from picoora.scheduler.jobs import JobBook

    config = load_config(ctx)
    with command_store(config) as store:
        book = JobBook(store, default_zone=config.agents.defaults.timezone)
        rows = [(job, book.run_record(job.id)) for job in book.jobs()]
        states = {job.id: book.state(job, run) for job, run in rows}
        upcoming = {job.id: book.next_run(job, run) for job, run in rows}
    if as_json:
        print(json.dumps([{**asdict(job), "state": states[job.id], "next_run": _iso(upcoming[job.id]),
                           "last_run": run.last_run, "last_status": run.last_status,
                           "last_error": run.last_error, "runs": run.runs} for job, run in rows], indent=2))
        return
    if not rows:
        print("No scheduled jobs. Add one with: picoora cron add every 1d \"Summarise my notes\"")
    for job, run in rows:
        moment = upcoming[job.id]
        parts = [f"next {moment:%Y-%m-%d %H:%M %Z}".rstrip() if moment else "no next run"]
        parts.append(f"last {run.last_status} {run.last_run[:16]}" if run.last_run else "not run yet")
        if run.last_error and run.last_status != "ok":
            parts[-1] += f": {run.last_error[:120]}"
        zone = f" ({job.timezone})" if job.timezone else ""
        print(f"{job.id}  {states[job.id]:<4}  {job.kind:<5} {job.spec}{zone}  → {job.channel}:{job.chat_id}  "
              f"[{job.action}, {', '.join(parts)}]  {job.text}")


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat(timespec="seconds") if moment else None


def add(
    ctx: typer.Context,
    kind: str | None = typer.Argument(None, help="at (once), every (interval) or cron (expression)."),
    when: str | None = typer.Argument(None, help="at: an ISO time (2026-12-24T18:00), a clock time (20:03: the next "
                                                 "one) or 'in 5 minutes'; every: an interval (90m, 2h, 1d); cron: "
                                                 "5 fields."),
    message: str | None = typer.Argument(None, help="What the agent should do then (or the reminder's text)."),
    reminder: bool = typer.Option(False, "--reminder", help="Send the message as it is, without the agent."),
    channel: str | None = typer.Option(None, "--channel", help="Where the result goes: telegram, web or cli "
                                          "(default: the chat used last, else the terminal)."),
    chat: str | None = typer.Option(None, "--chat", "--to", help="The chat id on that channel."),
    tz: str = typer.Option("", "--tz", help="IANA time zone (default: agents.defaults.timezone)."),
    go_message: str | None = typer.Option(None, "-m", "--message", help="PicoOraClaw's form: the message."),
    go_every: int | None = typer.Option(None, "-e", "--every", min=1, help="PicoOraClaw's form: every N seconds."),
    go_cron: str | None = typer.Option(None, "-c", "--cron", help="PicoOraClaw's form: a cron expression."),
    go_deliver: bool = typer.Option(False, "-d", "--deliver", help="PicoOraClaw's form of --reminder."),
    go_name: str | None = typer.Option(None, "-n", "--name", help="PicoOraClaw's form: accepted; jobs are known "
                                                                 "by id and message."),
) -> None:
    """Schedule a job: `cron add every 2h "stretch"`, or as PicoOraClaw wrote it: `cron add -n NAME -m TEXT -e 7200`."""
    from picoora.cli.opening import command_store
    from picoora.scheduler.jobs import JobBook, JobError

    if go_every is not None or go_cron is not None or go_message is not None:
        if kind is not None:
            raise CLIError("give the job either as KIND WHEN MESSAGE or with -m and -e/-c, not both", EXIT_USAGE)
        if go_message is None or (go_every is None) == (go_cron is None):
            raise CLIError("-m MESSAGE and one of -e SECONDS or -c 'EXPR' are needed", EXIT_USAGE)
        kind, when, message = ("every", f"{go_every}s", go_message) if go_every else ("cron", go_cron, go_message)
    if kind is None or when is None or message is None:
        raise CLIError("give KIND WHEN MESSAGE (`cron add every 2h \"stretch\"`)", EXIT_USAGE)
    config = load_config(ctx)
    with command_store(config) as store:
        book = JobBook(store, default_zone=config.agents.defaults.timezone)
        try:
            job = book.add(kind, when, message, *book.target(channel, chat),
                           action="reminder" if reminder or go_deliver else "agent", timezone_name=tz)
        except JobError as err:
            raise CLIError(str(err), EXIT_USAGE) from None
    print(f"Scheduled {job.id}: {job.kind} {job.spec} → {job.channel}:{job.chat_id}")


def _edit(ctx: typer.Context, job_id: str, enabled: bool | None) -> None:
    from picoora.cli.opening import command_store
    from picoora.scheduler.jobs import JobBook, JobError

    with command_store(load_config(ctx)) as store:
        book = JobBook(store)
        try:
            if enabled is None:
                if not book.remove(job_id):
                    raise JobError(f"no job {job_id!r}: `picoora cron list` shows them")
                print(f"Removed {job_id}.")
            else:
                book.set_enabled(job_id, enabled)
                print(f"{'Enabled' if enabled else 'Disabled'} {job_id}.")
        except JobError as err:
            raise CLIError(str(err)) from None


def remove(ctx: typer.Context, job_id: str = typer.Argument(...)) -> None:
    """Delete a job."""
    _edit(ctx, job_id, None)


def enable(ctx: typer.Context, job_id: str = typer.Argument(...)) -> None:
    """Turn a job back on."""
    _edit(ctx, job_id, True)


def disable(ctx: typer.Context, job_id: str = typer.Argument(...)) -> None:
    """Stop a job from running (it is kept)."""
    _edit(ctx, job_id, False)
