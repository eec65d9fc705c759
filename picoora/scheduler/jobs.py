"""Job records and the book that keeps them in the store.

A job's definition (what, when, where to deliver) and its run record (last run, outcome, next run) are
two state keys: ``cron.job.<id>`` is written only by whoever edits the job (the ``cron`` tool, ``picoora
cron``), ``cron.run.<id>`` only by the scheduler. A CLI edit and a run recorded at the same moment
therefore never overwrite each other: no lost updates, whichever process does what. Removing a job
deletes both keys; an empty value reads as gone, since stores written by versions that could not delete a key
record a removal that way.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timedelta, timezone, tzinfo
from typing import Any, Literal

from picoora.owner_chat import TERMINAL, default_target
from picoora.store.protocol import Store

Kind = Literal["at", "every", "cron"]
Action = Literal["agent", "reminder"]
KINDS: tuple[str, ...] = ("at", "every", "cron")
ACTIONS: tuple[str, ...] = ("agent", "reminder")
JOB_PREFIX, RUN_PREFIX = "cron.job.", "cron.run."
MIN_INTERVAL_SECONDS = 60  # an agent turn every few seconds is a runaway loop, not a schedule
MAX_TEXT_CHARS = 2000  # a job record is a state value (4000 bytes on Oracle): room for the rest
_DURATION = re.compile(r"^\s*(\d+)\s*(s|sec|seconds?|m|min|minutes?|h|hours?|d|days?)\s*$", re.IGNORECASE)
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_IN = re.compile(r"^\s*in\s+(.+)$", re.IGNORECASE)  # "in 5 minutes", "in 2h": from now
_CLOCK = re.compile(r"^\s*([01]?\d|2[0-3]):([0-5]\d)\s*$")  # "20:03": its next occurrence
_DURATION_WORDS = re.compile(r"^\s*(\d+)\s*(hrs?|mins?|secs?)\s*$", re.IGNORECASE)  # 2 hrs, 5 mins
State = Literal["on", "off", "done"]


class JobError(ValueError):
    """A job that cannot be scheduled; the message says what to change."""


def target_channels() -> tuple[str, ...]:
    """Where a job's result can go: the terminal, the web chat and every chat channel of the config."""
    from picoora.channel_registry import Channels

    return ("cli", *Channels.model_fields)


@dataclass
class Job:
    id: str
    kind: Kind
    spec: str  # at: ISO date-time (local to ``timezone`` when naive); every: "90m", "3600s"; cron: 5 fields
    text: str  # the message to the agent, or the reminder's text
    channel: str  # where the result goes: "telegram", "cli", ...
    chat_id: str
    action: Action = "agent"
    timezone: str = ""  # IANA; empty: the configured default
    enabled: bool = True
    created_at: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Job:
        data = json.loads(text)
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})

    @property
    def session_key(self) -> str:
        return f"cron:{self.id}"


@dataclass
class RunRecord:
    last_run: str | None = None  # ISO, UTC
    last_status: str = ""  # ok | error | cut_off (the gateway stopped mid-run) | missed
    last_error: str | None = None
    runs: int = 0

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str | None) -> RunRecord:
        return cls(**json.loads(text)) if text else cls()


def parse_interval(spec: str) -> timedelta:
    match = _DURATION.match(spec)
    if not match:
        raise JobError(f"cannot read the interval {spec!r}: write it like 90s, 15m, 2h or 1d")
    seconds = int(match.group(1)) * _UNIT_SECONDS[match.group(2)[0].lower()]
    if seconds < MIN_INTERVAL_SECONDS:
        raise JobError(f"an interval of {spec!r} is too short: at least {MIN_INTERVAL_SECONDS} seconds")
    return timedelta(seconds=seconds)


def resolve_at(spec: str, now: datetime, tz: tzinfo) -> str:
    """An ``at`` job's time as the ISO time it is stored as: an ISO time as it is, ``20:03`` as its next
    occurrence in ``tz`` (today, else tomorrow), ``in 5 minutes`` / ``in 2h`` from ``now``."""
    relative = _IN.match(spec)
    if relative:
        amount = _DURATION_WORDS.sub(lambda m: m.group(1) + m.group(2)[0], relative.group(1))
        match = _DURATION.match(amount)
        if not match:
            raise JobError(f"cannot read {spec!r}: write it like 'in 5 minutes', 'in 90m' or 'in 2h'")
        delta = timedelta(seconds=int(match.group(1)) * _UNIT_SECONDS[match.group(2)[0].lower()])
        return (now + delta).astimezone(tz).isoformat(timespec="seconds")
    clock = _CLOCK.match(spec)
    if clock:
        local = now.astimezone(tz)
        moment = local.replace(hour=int(clock.group(1)), minute=int(clock.group(2)), second=0, microsecond=0)
        if moment <= local:
            moment += timedelta(days=1)  # same tzinfo: wall-clock arithmetic, 20:03 tomorrow across a DST change
        return moment.isoformat(timespec="seconds")
    _parse_time(spec, tz)  # refused here, with the formats, when it is none of them
    return spec.strip()


def zone(name: str, default: str = "") -> tzinfo:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    chosen = name or default
    if not chosen:
        return datetime.now().astimezone().tzinfo or timezone.utc
    try:
        return ZoneInfo(chosen)
    except (ZoneInfoNotFoundError, ValueError):
        raise JobError(f"unknown time zone {chosen!r}: use an IANA name such as Europe/Lisbon") from None


def trigger_for(job: Job, default_zone: str = "") -> Any:
    """The APScheduler trigger for ``job`` (imported here: only the scheduler and edits pay for it). APScheduler
    comes with the gateway's extra, since only the gateway runs jobs: without it a job cannot be checked or
    scheduled, and ``JobError`` says what to install (listing and removing jobs still work)."""
    try:
        from apscheduler.triggers.cron import CronTrigger
        from apscheduler.triggers.date import DateTrigger
        from apscheduler.triggers.interval import IntervalTrigger
    except ImportError:
        raise JobError("scheduled jobs run in the gateway, whose apscheduler is not installed: "
                       "pip install 'picoora[gateway]'") from None

    tz = zone(job.timezone, default_zone)
    if job.kind == "every":
        interval = parse_interval(job.spec)
        start = _parse_time(job.created_at, tz) + interval if job.created_at else None  # first run: one interval in
        return IntervalTrigger(seconds=int(interval.total_seconds()), start_date=start, timezone=tz)
    if job.kind == "at":
        return DateTrigger(run_date=_parse_time(job.spec, tz), timezone=tz)
    try:
        return CronTrigger.from_crontab(job.spec, timezone=tz)
    except ValueError as exc:
        raise JobError(f"cannot read the cron expression {job.spec!r} ({exc}): five fields, "
                       "minute hour day month weekday, e.g. '0 8 * * mon-fri'") from None


def _parse_time(text: str, tz: tzinfo) -> datetime:
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise JobError(f"cannot read the time {text!r}: write it like 2026-12-24T18:00, 20:03 (the next one) "
                       "or 'in 5 minutes'") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=tz)


def next_fire(job: Job, after: datetime, default_zone: str = "") -> datetime | None:
    """When ``job`` fires next, strictly after ``after`` (aware), or None when it never will."""
    moment = trigger_for(job, default_zone).get_next_fire_time(None, after + timedelta(microseconds=1))
    return moment if moment is not None and moment > after else None


def last_due(job: Job, now: datetime, lookback: timedelta, default_zone: str = "") -> datetime | None:
    """The latest time at or before ``now`` (and within ``lookback``) that ``job`` was due, or None. Every
    node computes the same one from the job's definition, so it names one run across a fleet."""
    due = next_fire(job, now - lookback, default_zone)
    if due is None or due > now:
        return None
    while (later := next_fire(job, due, default_zone)) is not None and later <= now:
        due = later
    return due


@dataclass
class JobBook:
    """Jobs in a store's state family; every call reads what is stored now (another process may edit)."""

    store: Store
    default_zone: str = ""
    _clock: Any = field(default=None, repr=False)

    def _now(self) -> datetime:
        return self._clock() if self._clock else datetime.now(timezone.utc)

    def add(self, kind: str, spec: str, text: str, channel: str, chat_id: str, *, action: str = "agent",
            timezone_name: str = "") -> Job:
        if kind not in KINDS:
            raise JobError(f"unknown kind {kind!r}: use at, every or cron")
        if action not in ACTIONS:
            raise JobError(f"unknown action {action!r}: use agent or reminder")
        if not text.strip():
            raise JobError("a job needs a message")
        if channel not in target_channels() or not chat_id:
            raise JobError(f"cannot deliver to {channel}:{chat_id}: the channel is one of "
                           f"{', '.join(target_channels())}, with a chat id (cli: default)")
        if len(text) > MAX_TEXT_CHARS:
            raise JobError(f"a job's message is at most {MAX_TEXT_CHARS} characters; keep the details in a file "
                           "or a memory and refer to it")
        if kind == "at":
            spec = resolve_at(spec, self._now(), zone(timezone_name, self.default_zone))
        job = Job(id=secrets.token_hex(4), kind=kind, spec=spec.strip(), text=text.strip(), channel=channel,  # type: ignore[arg-type]
                  chat_id=chat_id, action=action, timezone=timezone_name,  # type: ignore[arg-type]
                  created_at=self._now().isoformat())
        if next_fire(job, self._now(), self.default_zone) is None:
            raise JobError(f"{spec!r} is in the past: this job would never run")
        self.store.state.set(JOB_PREFIX + job.id, job.to_json())
        return job

    def target(self, channel: str | None, chat_id: str | None) -> tuple[str, str]:
        """Where a new job's result goes: the chat named, the terminal for ``cli`` alone, or with nothing
        named the chat the owner used last, else the terminal. ``JobError`` for half a target."""
        if not channel:
            if chat_id:
                raise JobError("a chat id needs its channel (telegram, web or cli)")
            return default_target(self.store)
        if not chat_id:
            if channel != TERMINAL[0]:
                raise JobError(f"say which chat on {channel} gets the result (its chat id)")
            return TERMINAL
        return channel, chat_id

    def get(self, job_id: str) -> Job | None:
        text = self.store.state.get(JOB_PREFIX + job_id)
        return Job.from_json(text) if text else None

    def jobs(self) -> list[Job]:
        found = []
        for key, value in self.store.state.all().items():
            if key.startswith(JOB_PREFIX) and value:
                try:
                    found.append(Job.from_json(value))
                except (ValueError, TypeError):
                    continue  # a hand-edited record; the others still run
        return sorted(found, key=lambda j: j.created_at)

    def remove(self, job_id: str) -> bool:
        if self.get(job_id) is None:
            return False
        self.store.state.delete(JOB_PREFIX + job_id)
        self.store.state.delete(RUN_PREFIX + job_id)
        return True

    def set_enabled(self, job_id: str, enabled: bool) -> Job:
        job = self.get(job_id)
        if job is None:
            raise JobError(f"no job {job_id!r}: `picoora cron list` shows them")
        job = replace(job, enabled=enabled)
        self.store.state.set(JOB_PREFIX + job_id, job.to_json())
        return job

    def state(self, job: Job, record: RunRecord) -> State:
        """"done" for an ``at`` job that fired or was missed (it never runs again), else "on" or "off"."""
        if job.kind == "at" and record.last_status:
            return "done"
        return "on" if job.enabled else "off"

    def next_run(self, job: Job, record: RunRecord) -> datetime | None:
        """When the job runs next (aware), or None: off, done, or never again."""
        if self.state(job, record) != "on":
            return None
        try:
            return next_fire(job, self._now(), self.default_zone)
        except JobError:  # a hand-edited spec: listed, never run
            return None

    def run_record(self, job_id: str) -> RunRecord:
        return RunRecord.from_json(self.store.state.get(RUN_PREFIX + job_id))

    def record_run(self, job_id: str, status: str, error: str | None = None, at: datetime | None = None) -> None:
        record = self.run_record(job_id)
        record = replace(record, last_run=(at or self._now()).isoformat(), last_status=status, last_error=error,
                         runs=record.runs + (status != "missed"))
        self.store.state.set(RUN_PREFIX + job_id, record.to_json())
