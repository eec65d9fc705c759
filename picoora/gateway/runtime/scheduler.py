"""Runs the stored jobs with APScheduler (3.x, asyncio): each firing is a turn of the turn service.

- An ``agent`` job is a turn in the job's own session (``cron:<id>``, so it is in the transcript); its
  answer goes to the job's channel and chat. The run record says what really happened: ``ok`` (answered
  and delivered), ``error`` with the reason (the model failed, or the answer could not be delivered: the
  job's transcript still has it), ``cut_off`` (the gateway stopped before the turn ended).
- A ``reminder`` is delivered as it is, and recorded in the job's transcript.
- The book is re-read every few seconds, so ``picoora cron`` edits made while the gateway runs take effect
  without a restart; a job edited or removed is rescheduled or dropped.
- On start, a job whose last due time passed while nothing was running runs once, if that was within
  ``missed_grace`` (then it follows its schedule again); an older miss is recorded as ``missed``.
- Several gateways on one database all schedule every job; a run fires on the node that first claims it
  (a claim per job and due time, ``picoora/store/leases.py``), so each run fires and is recorded once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

from picoora.gateway.channels.links import Inbound, ShuttingDown
from picoora.gateway.runtime.delivery import Delivery
from picoora.gateway.runtime.envelopes import OnOutcome, TurnOutcome
from picoora.gateway.runtime.turns import Submit
from picoora.messages import Message
from picoora.scheduler.jobs import Job, JobBook, JobError, last_due, next_fire, trigger_for
from picoora.store.aio import AsyncStore
from picoora.store.leases import Leases, LocalLeases

log = logging.getLogger(__name__)

POLL_SECONDS = 5.0
CLAIM_MARGIN = timedelta(hours=1)  # a run's claim outlives the window in which any node may still fire it
REMINDER_PREFIX = "⏰ "


class SchedulerService:
    def __init__(self, book: JobBook, astore: AsyncStore, *, submit: Submit, delivery: Delivery,
                 missed_grace: timedelta, poll_seconds: float = POLL_SECONDS,
                 clock: Callable[[], datetime] | None = None, leases: Leases | None = None):
        self.book = book
        self.astore = astore
        self.submit = submit
        self.delivery = delivery
        self.missed_grace = missed_grace
        self.poll_seconds = poll_seconds
        self._clock = clock or (lambda: datetime.now(timezone.utc))
        self.leases = leases or LocalLeases()
        self._scheduler: Any = None
        self._scheduled: dict[str, Job] = {}  # job id -> the definition it was scheduled from
        self._poller: asyncio.Task[None] | None = None
        self._catching_up: set[asyncio.Task[None]] = set()
        self._caught_up = False

    async def start(self) -> None:
        from apscheduler.schedulers.asyncio import AsyncIOScheduler

        self._scheduler = AsyncIOScheduler(event_loop=asyncio.get_running_loop(), timezone=timezone.utc)
        self._scheduler.start()
        await self._refresh()
        self._poller = asyncio.get_running_loop().create_task(self._poll())

    async def stop(self) -> None:
        """No more firings; turns already submitted finish (or are cut off) in the turn service's drain."""
        if self._poller is not None:
            self._poller.cancel()
        if self._scheduler is not None:
            self._scheduler.shutdown(wait=False)

    def _firing(self, job_id: str) -> None:
        task = asyncio.get_running_loop().create_task(self.fire(job_id), name=f"job {job_id}")
        self._catching_up.add(task)
        task.add_done_callback(self._catching_up.discard)

    async def wait_idle(self) -> None:
        """Wait for the catch-up runs started at start-up (tests; the gateway's drain covers their turns)."""
        while self._catching_up:
            await asyncio.gather(*list(self._catching_up), return_exceptions=True)

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self.poll_seconds)
            await self._refresh()

    async def _refresh(self) -> None:
        """Catch up once, at the first chance (a required database may not answer at start), then follow
        the book; a store that fails is tried again at the next poll."""
        try:
            if not self._caught_up:
                await self.catch_up()
                self._caught_up = True
            await self.sync()
        except Exception:
            log.warning("could not read the scheduled jobs; trying again in %g s", self.poll_seconds, exc_info=True)

    async def _jobs(self) -> list[Job]:
        return await self.astore.run(self.book.jobs)

    async def sync(self) -> None:
        """Make the scheduler's jobs match the book's."""
        wanted = {job.id: job for job in await self._jobs() if job.enabled and await self._still_due(job)}
        for job_id in list(self._scheduled):
            if wanted.get(job_id) != self._scheduled[job_id]:
                self._unschedule(job_id)
        for job_id, job in wanted.items():
            if job_id in self._scheduled:
                continue
            try:
                trigger = trigger_for(job, self.book.default_zone)
            except JobError as exc:
                log.warning("job %s cannot be scheduled: %s", job_id, exc)
                continue
            self._scheduler.add_job(self.fire, trigger, args=[job_id], id=job_id, replace_existing=True,
                                    coalesce=True, misfire_grace_time=int(self.missed_grace.total_seconds()) or 1)
            self._scheduled[job_id] = job

    async def _still_due(self, job: Job) -> bool:
        """A one-off job that already ran (or was missed for good) is not scheduled again."""
        if job.kind != "at":
            return True
        return not (await self.astore.run(self.book.run_record, job.id)).last_status

    def _unschedule(self, job_id: str) -> None:
        self._scheduled.pop(job_id, None)
        if self._scheduler.get_job(job_id) is not None:
            self._scheduler.remove_job(job_id)

    async def catch_up(self) -> list[str]:
        """Run once each job that fell due within the grace period while nothing ran (however often it fell
        due); record older misses as ``missed``. Returns the ids of the jobs started."""
        now, ran = self._clock(), []
        for job in await self._jobs():
            if not job.enabled:
                continue
            record = await self.astore.run(self.book.run_record, job.id)
            if job.kind == "at" and record.last_status:
                continue
            since = datetime.fromisoformat(record.last_run or job.created_at)
            try:
                recent = next_fire(job, max(since, now - self.missed_grace), self.book.default_zone)
                overdue = next_fire(job, since, self.book.default_zone)
            except JobError:
                continue
            if recent is not None and recent <= now:
                self._firing(job.id)  # not awaited: the gateway's start does not wait for a turn
                ran.append(job.id)
            elif overdue is not None and overdue <= now:
                await self.astore.run(self.book.record_run, job.id, "missed", f"due at {overdue.isoformat()}", now)
        return ran

    async def fire(self, job_id: str) -> None:
        """Run one job now (what the scheduler calls at each due time); returns once its run is recorded."""
        job = await self.astore.run(self.book.get, job_id)
        if job is None or not job.enabled or not await self._claim(job):
            return
        try:
            if job.action == "reminder":
                await self._remind(job)
                return
            task = self.submit(Inbound("cron", job.id, job.text, sender_id="cron", session_key=job.session_key,
                                       metadata={"job_id": job.id}), then=self._finish(job))
        except ShuttingDown:
            await self._record(job, "cut_off", "the gateway was shutting down when the job fell due")
            return
        except Exception as exc:  # one failing job must not stop the scheduler
            log.warning("job %s failed", job_id, exc_info=True)
            await self._record(job, "error", str(exc))
            return
        await asyncio.wait({task})  # the record is written by _finish, inside the turn's task

    async def _claim(self, job: Job) -> bool:
        """Whether this node fires the job's current due run: the first node of a fleet to claim it does.
        (A run fired by hand, outside any due time, needs no claim.)"""
        if not self.leases.shared:
            return True
        lookback = self.missed_grace + timedelta(minutes=1)  # APScheduler may call a little late
        due = last_due(job, self._clock(), lookback, self.book.default_zone)
        if due is None:
            return True
        seconds = (lookback + CLAIM_MARGIN).total_seconds()
        return await self.leases.claim(f"cron:{job.id}:{due.astimezone(timezone.utc).isoformat()}", seconds)

    async def _remind(self, job: Job) -> None:
        text = REMINDER_PREFIX + job.text
        try:
            await self.astore.transcripts.append(job.session_key, [Message(role="assistant", content=text)])
            receipt = await self.delivery.deliver(job.channel, job.chat_id, text)
        except Exception as exc:
            log.warning("reminder %s failed", job.id, exc_info=True)
            await self._record(job, "error", str(exc))
            return
        await self._record(job, "ok" if receipt.delivered else "error", receipt.error or None)

    def _finish(self, job: Job) -> OnOutcome:
        async def finish(inbound: Inbound, outcome: TurnOutcome) -> None:
            if outcome.status == "cut_off":
                await self._record(job, "cut_off", outcome.error)
                return
            if not outcome.ok:  # the model failed or the turn stopped: say so where the answer would have gone
                await self.delivery.deliver(job.channel, job.chat_id,
                                            f"⚠ The scheduled job {job.id} did not finish: {outcome.error}")
                await self._record(job, "error", outcome.error)
                return
            receipt = await self.delivery.deliver(job.channel, job.chat_id, outcome.text)
            await self._record(job, "ok" if receipt.delivered else "error",
                               None if receipt.delivered else f"answered but not delivered: {receipt.error} "
                               f"(kept in the transcript of {job.session_key})")
        return finish

    async def _record(self, job: Job, status: str, error: str | None) -> None:
        # Shielded: a shutdown that cancels the job's task after its reminder or answer went out must not
        # cancel the queued write of its run, or the next start sends it again.
        await asyncio.shield(self.astore.run(self.book.record_run, job.id, status, error, self._clock()))
