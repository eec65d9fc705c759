"""The Go cron store (``WORKSPACE/cron/jobs.json``) as picoora jobs (``picoora.scheduler.jobs``).

Go's kinds map one to one: ``at`` (atMs) to a local ISO time, ``every`` (everyMs) to seconds, ``cron`` to
the same five fields. ``deliver: true`` sent the message as it was: a picoora reminder. A job that ran a
shell command (``payload.command``) has no equivalent and is listed. Each Go job id is remembered in the
ledger, so a second run adds nothing twice.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from picoora.migrate.records import Ledger, digest
from picoora.migrate.report import Section
from picoora.migrate.source import read_json
from picoora.store.base import StoreError
from picoora.store.protocol import Store

if TYPE_CHECKING:
    from picoora.scheduler.jobs import JobBook


def migrate_cron(workspace: Path, store: Store | None, ledger: Ledger, default_zone: str, section: Section,
                 dry_run: bool = False) -> None:
    path = workspace / "cron" / "jobs.json"
    if not path.is_file():
        return
    data, problem = read_json(path)
    jobs = data.get("jobs") if isinstance(data, dict) else None
    if problem or not isinstance(jobs, list):
        section.skipped("cron/jobs.json", problem or 'no "jobs" list')
        return
    from picoora.scheduler.jobs import JobBook

    book = JobBook(store, default_zone) if store is not None else None
    for raw in jobs:
        job = raw if isinstance(raw, dict) else {}
        name = f"{job.get('name') or '?'} ({job.get('id') or 'no id'})"
        converted = _convert(job)
        if isinstance(converted, str):
            section.skipped(name, converted)
            continue
        kind, spec, text, action, zone = converted
        marker = path.parent / f"job-{job.get('id') or digest(repr(job))[:16]}"  # a ledger key per Go job
        if ledger.done(marker, "added"):
            section.unchanged(name, "already migrated")
            continue
        if book is None or dry_run:
            section.would(name, f"{kind} {spec}, {action}")
            continue
        channel, chat = _target(job, book)
        try:
            added = book.add(kind, spec, text, channel, chat, action=action, timezone_name=zone)
            if job.get("enabled") is False:
                book.set_enabled(added.id, False)
        except (ValueError, StoreError) as err:  # JobError is a ValueError; so is a value too long to store
            section.skipped(name, str(err))
            continue
        ledger.record(marker, "added")
        section.done(name, f"now {added.id}: {kind} {spec}, {action}, to {channel}:{chat}"
                           + ("" if added.enabled and job.get("enabled") is not False else ", disabled"))


def _convert(job: dict[str, Any]) -> tuple[str, str, str, str, str] | str:
    """(kind, spec, text, action, time zone), or why the job cannot come over."""
    schedule, payload = _part(job, "schedule"), _part(job, "payload")
    if payload.get("command"):
        return ("it ran a shell command; picoora's jobs are agent turns or reminders: add one that asks the "
                "agent, e.g. picoora cron add every 1h \"Run df -h and tell me if a disk is nearly full\"")
    text = str(payload.get("message") or "").strip()
    if not text:
        return "it has no message"
    action = "reminder" if payload.get("deliver") else "agent"
    zone = str(schedule.get("tz") or "")
    kind = schedule.get("kind")
    if kind == "every" and isinstance(schedule.get("everyMs"), (int, float)):
        return "every", f"{int(schedule['everyMs']) // 1000}s", text, action, zone
    if kind == "cron" and isinstance(schedule.get("expr"), str):
        return "cron", schedule["expr"], text, action, zone
    if kind == "at" and isinstance(schedule.get("atMs"), (int, float)):
        moment = datetime.fromtimestamp(schedule["atMs"] / 1000, timezone.utc)
        if moment <= datetime.now(timezone.utc):
            return f"a one-time job that was due at {moment.astimezone():%Y-%m-%d %H:%M}, already past"
        return "at", moment.astimezone().isoformat(timespec="seconds"), text, action, zone
    return f"an unknown schedule ({kind!r})"


def _target(job: dict[str, Any], book: JobBook) -> tuple[str, str]:
    """Go's payload.channel/to when picoora has that channel, else picoora's default (the chat used last)."""
    from picoora.scheduler.jobs import target_channels

    payload = _part(job, "payload")
    channel, chat = str(payload.get("channel") or ""), str(payload.get("to") or "")
    if channel in target_channels() and chat:
        return channel, chat
    return book.target(None, None)


def _part(job: dict[str, Any], name: str) -> dict[str, Any]:
    value = job.get(name)
    return value if isinstance(value, dict) else {}
