"""Scheduled jobs: triggers in time zones (across a DST change), the book in the store (edits from another
process, no lost updates), the missed-job rule with a controlled clock, real firings as turns of the turn
service, and run records that say what really happened."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from picoora.assistant import build_assistant
from picoora.config import load_config
from picoora.gateway.runtime.scheduler import SchedulerService
from picoora.scheduler.jobs import JobBook, JobError, next_fire, parse_interval
from picoora.store.aio import AsyncStore
from picoora.store.files import FileStore
from tests.cli_support import write_config
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.fakes.runtime_kit import ScriptedTurns, recording_delivery, running_runtime

LISBON = ZoneInfo("Europe/Lisbon")


def _book(tmp_path, clock=None, zone=""):
    return JobBook(FileStore(tmp_path / "ws"), default_zone=zone, _clock=clock)


def test_a_daily_cron_job_keeps_its_local_hour_across_the_dst_change(tmp_path):
    book = _book(tmp_path, zone="Europe/Lisbon")
    job = book.add("cron", "0 8 * * *", "morning briefing", "telegram", "42")
    before = next_fire(job, datetime(2026, 10, 23, 12, tzinfo=timezone.utc), "Europe/Lisbon")
    after = next_fire(job, before, "Europe/Lisbon")  # summer time ends on 25 October 2026
    assert [t.astimezone(LISBON).hour for t in (before, after)] == [8, 8]
    assert [t.astimezone(timezone.utc).hour for t in (before, after)] == [7, 8]


def test_a_job_in_its_own_time_zone_and_bad_specs_are_refused_plainly(tmp_path):
    book = _book(tmp_path)
    tokyo = book.add("cron", "30 9 * * mon-fri", "stand-up", "cli", "default", timezone_name="Asia/Tokyo")
    fire = next_fire(tokyo, datetime(2026, 12, 1, tzinfo=timezone.utc))
    assert (fire.astimezone(ZoneInfo("Asia/Tokyo")).hour, fire.astimezone(ZoneInfo("Asia/Tokyo")).minute) == (9, 30)
    assert parse_interval("90m") == timedelta(minutes=90)
    for kind, spec, problem in [("every", "5s", "too short"), ("every", "often", "cannot read the interval"),
                                ("cron", "61 * * * *", "cron expression"), ("at", "2020-01-01T00:00", "in the past"),
                                ("at", "tomorrow", "cannot read the time"), ("weekly", "x", "unknown kind")]:
        with pytest.raises(JobError, match=problem):
            book.add(kind, spec, "x", "cli", "default")
    with pytest.raises(JobError, match="unknown time zone"):
        book.add("cron", "0 8 * * *", "x", "cli", "default", timezone_name="Mars/Olympus")
    assert [j.id for j in book.jobs()] == [tokyo.id]


def test_edits_and_run_records_from_two_processes_lose_nothing(tmp_path):
    editor, scheduler = _book(tmp_path), _book(tmp_path)  # two stores on one workspace: two processes
    job = editor.add("every", "1h", "check the backups", "telegram", "42")
    scheduler.record_run(job.id, "ok")
    editor.set_enabled(job.id, False)
    scheduler.record_run(job.id, "ok")
    assert editor.get(job.id).enabled is False  # the run records did not undo the edit
    assert scheduler.run_record(job.id).runs == 2
    assert editor.remove(job.id) and editor.jobs() == [] and not editor.remove(job.id)
    assert not [key for key in editor.store.state.all() if job.id in key]  # both keys deleted, no tombstone


def test_an_old_empty_tombstone_reads_as_no_job(tmp_path):
    book = _book(tmp_path)
    book.store.state.set("cron.job.0ld1d", "")  # how a removal was kept before the store could delete
    assert book.get("0ld1d") is None and book.jobs() == [] and not book.remove("0ld1d")


def _service(book, clock, grace_minutes=90, turns=None):
    astore = AsyncStore(book.store)
    delivery, recorders = recording_delivery(astore)
    turns = turns or ScriptedTurns()
    service = SchedulerService(book, astore, submit=turns.submit, delivery=delivery,
                               missed_grace=timedelta(minutes=grace_minutes), clock=clock)
    return service, turns, recorders


def test_a_job_missed_while_down_runs_once_within_the_grace_period(tmp_path):
    start = datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc)
    now = [start]
    book = _book(tmp_path, clock=lambda: now[0])
    hourly = book.add("every", "1h", "hourly check", "telegram", "42")
    stale = book.add("every", "1d", "daily digest", "telegram", "42")
    now[0] = start + timedelta(hours=3, minutes=30)  # the gateway was down: hourly missed 3 times, daily not due
    service, turns, recorders = _service(book, lambda: now[0], grace_minutes=60)

    async def catch_up():
        ran = await service.catch_up()
        await service.wait_idle()
        return ran

    ran = asyncio.run(catch_up())
    assert ran == [hourly.id]
    assert [m.text for m in turns.submitted] == ["hourly check"]  # once, not three times
    assert turns.submitted[0].session == f"cron:{hourly.id}"
    assert recorders.texts("telegram", "42") == ["done"]
    assert book.run_record(hourly.id).last_status == "ok"
    assert book.run_record(stale.id).last_status == ""

    now[0] += timedelta(days=2)  # down again: the hourly job fell due within the last hour, so it runs once;
    assert asyncio.run(catch_up()) == [hourly.id]  # the daily one's last due time is older: missed
    assert book.run_record(hourly.id).runs == 2 and book.run_record(stale.id).last_status == "missed"


@pytest.mark.slow
def test_a_reminder_fires_for_real_reaches_its_chat_and_is_not_repeated_after_a_restart(tmp_path):
    book = _book(tmp_path)
    soon = (datetime.now(timezone.utc) + timedelta(seconds=1)).isoformat()
    job = book.add("at", soon, "take the cake out", "telegram", "42", action="reminder")

    async def run_once():
        service, _, recorders = _service(book, None)  # type: ignore[arg-type]
        service._clock = lambda: datetime.now(timezone.utc)
        await service.start()
        for _ in range(60):
            if recorders.sent:
                break
            await asyncio.sleep(0.05)
        await service.stop()
        return recorders.sent

    first = asyncio.run(run_once())
    assert [(m.chat_id, m.text) for m in first] == [("42", "⏰ take the cake out")]
    assert [e.message.content for e in book.store.transcripts.read(job.session_key)] == ["⏰ take the cake out"]
    assert asyncio.run(run_once()) == []  # restarted: a one-off job that ran stays done


def test_jobs_added_and_removed_by_another_process_while_running_are_picked_up(tmp_path):
    book, other = _book(tmp_path), _book(tmp_path)

    async def scenario():
        service, _, _ = _service(book, None)  # type: ignore[arg-type]
        service._clock = lambda: datetime.now(timezone.utc)
        service.poll_seconds = 0.05
        await service.start()
        job = other.add("cron", "0 8 * * *", "briefing", "telegram", "42")
        await asyncio.sleep(0.3)
        scheduled = service._scheduler.get_job(job.id) is not None
        other.set_enabled(job.id, False)
        await asyncio.sleep(0.3)
        after_disable = service._scheduler.get_job(job.id) is not None
        await service.stop()
        return scheduled, after_disable

    assert asyncio.run(scenario()) == (True, False)


def _agent_job(home, responder, channel="telegram", chat="42", broken=()):
    with FakeOllama(responder=responder) as fake:
        config = load_config(write_config(home, ollama_url=fake.url))
        config.providers.ollama.max_retries = 0

        async def scenario():
            async with build_assistant(config) as assistant:
                async with running_runtime(assistant) as (runtime, recorders):
                    recorders.broken.update(broken)
                    book = JobBook(assistant.store)
                    job = book.add("every", "1h", "check the backups", channel, chat)
                    service = SchedulerService(book, assistant.astore, submit=runtime.turns.submit,
                                               delivery=runtime.delivery, missed_grace=timedelta(hours=1))
                    await asyncio.wait_for(service.fire(job.id), 20)  # returns once the run is recorded
                    record = book.run_record(job.id)
                transcript = [e.message.content for e in await assistant.history(job.session_key)]
                return recorders.sent, transcript, record, assistant

        return asyncio.run(scenario())


def test_an_agent_job_runs_a_turn_in_its_session_and_answers_the_chat_that_set_it(isolated_home):
    got, transcript, record, _ = _agent_job(isolated_home, lambda body: Reply(content="Backups look fine."))
    assert [(m.channel, m.chat_id, m.text) for m in got] == [("telegram", "42", "Backups look fine.")]
    assert transcript == ["check the backups", "Backups look fine."]
    assert (record.last_status, record.last_error, record.runs) == ("ok", None, 1)


def test_a_job_against_a_model_that_is_down_is_recorded_failed_with_the_reason(isolated_home):
    got, transcript, record, _ = _agent_job(isolated_home, lambda body: Reply(status=500, error="model crashed"))
    assert record.last_status == "error" and "crashed" in record.last_error
    # The chat is told the job failed, and why; the error is not passed off as the job's answer.
    [told] = [m.text for m in got]
    assert told.startswith("⚠ The scheduled job ") and told.endswith(f"did not finish: {record.last_error}")


def test_an_answer_that_cannot_be_delivered_is_a_failed_run_and_kept_in_the_transcript(isolated_home):
    got, transcript, record, _ = _agent_job(isolated_home, lambda body: Reply(content="Backups look fine."),
                                            broken=("telegram",))
    assert got == [] and transcript[-1] == "Backups look fine."
    assert record.last_status == "error" and "not delivered" in record.last_error and "telegram" in record.last_error


def test_a_job_for_the_web_chat_or_the_terminal_is_kept_in_that_chat(isolated_home):
    from picoora import inbox

    _, _, record, assistant = _agent_job(isolated_home, lambda body: Reply(content="Backups look fine."),
                                         channel="cli", chat="default")
    assert record.last_status == "ok"
    store = FileStore(isolated_home / "workspace")
    waiting = inbox.take(store, "cli:default")
    assert [e.message.content for e in waiting] == ["Backups look fine."] and inbox.take(store, "cli:default") == []
    _, _, record, _ = _agent_job(isolated_home, lambda body: Reply(content="Web news."), channel="web", chat="abc")
    assert record.last_status == "ok"
    assert [e.message.content for e in store.transcripts.read("web:abc")] == ["Web news."]


def test_jobs_name_a_front_door_that_exists(tmp_path):
    book = _book(tmp_path)
    with pytest.raises(JobError, match="cannot deliver to fax:1"):
        book.add("every", "1h", "x", "fax", "1")
    assert book.add("every", "1h", "x", "cli", "default").channel == "cli"


def test_at_times_resolve_to_the_next_clock_time_or_from_now(tmp_path):
    from picoora.scheduler.jobs import resolve_at

    now = datetime(2026, 10, 24, 21, 0, tzinfo=timezone.utc)  # 22:00 in Lisbon, the night before summer time ends
    assert resolve_at("23:30", now, LISBON) == "2026-10-24T23:30:00+01:00"  # later today
    assert resolve_at("20:03", now, LISBON) == "2026-10-25T20:03:00+00:00"  # tomorrow, in winter time
    assert resolve_at("in 90m", now, LISBON) == "2026-10-24T23:30:00+01:00"
    assert resolve_at("in 2 hrs", now, timezone.utc) == "2026-10-24T23:00:00+00:00"
    assert resolve_at("2026-12-24T18:00", now, LISBON) == "2026-12-24T18:00"  # as given
    for spec in ("24:00", "in", "in -5m", "at noon"):
        with pytest.raises(JobError, match="cannot read"):
            resolve_at(spec, now, LISBON)


@pytest.mark.slow  # several real CLI runs
def test_a_fired_at_job_lists_as_done_with_no_next_run(isolated_home):
    import json

    from tests.cli_support import closed_port_url_config, run_cli

    closed_port_url_config(isolated_home)
    added = run_cli("cron", "add", "at", "in 1 minute", "stretch", "--reminder", "--channel", "telegram",
                    "--chat", "42", home=isolated_home)
    assert added.returncode == 0, added.stderr
    job_id = added.stdout.split()[1].rstrip(":")
    service, _, recorders = _service(JobBook(FileStore(isolated_home / "workspace")), None)
    asyncio.run(service.fire(job_id))  # what the gateway's scheduler does when it falls due
    assert [m.text for m in recorders.sent] == ["⏰ stretch"]
    [job] = json.loads(run_cli("cron", "list", "--json", home=isolated_home).stdout)
    assert (job["state"], job["next_run"], job["last_status"]) == ("done", None, "ok")
    line = run_cli("cron", "list", home=isolated_home).stdout
    assert f"{job_id}  done" in line and "no next run" in line
