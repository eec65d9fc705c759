"""What the front doors do beside turns, through the library's front door: memory, pairing and jobs, the
same rules the HTTP API, ``picoora pair`` and ``picoora cron`` apply."""

from __future__ import annotations

import asyncio

import pytest

from picoora.assistant import build_assistant
from picoora.config import load_config
from picoora.people import Pairing, Sender
from picoora.scheduler.jobs import JobError, remember_chat
from tests.cli_support import closed_port_url_config


def _run(home, scenario):
    config = load_config(closed_port_url_config(home))  # none of this reaches a model

    async def main():
        async with build_assistant(config) as assistant:
            return await scenario(assistant)

    return asyncio.run(main())


def test_memory_operations_round_trip_and_looking_does_not_touch(isolated_home):
    async def scenario(assistant):
        added = await assistant.remember("Ines prefers the window seat", 0.8, "preference")
        found = await assistant.recall("window seat")
        listed = await assistant.memories()
        gone = await assistant.forget(added.memory.id)
        return added, found, listed, gone, await assistant.memories(), await assistant.forget("nope")

    added, found, listed, gone, after, missing = _run(isolated_home, scenario)
    assert added.created and [m.memory.id for m in found.matches] == [added.memory.id]
    assert listed[0].access_count == 0  # recall through the front door looks without touching
    assert gone and after == [] and missing is False


def test_pairing_through_the_assistant(isolated_home):
    async def scenario(assistant):
        first, _ = Pairing(assistant.store).request(Sender("telegram", "8", "sam"))
        second, _ = Pairing(assistant.store).request(Sender("telegram", "9"))
        waiting = {r.code for r in await assistant.pairing_requests()}
        person = await assistant.approve_pairing(first.code.lower(), "sam")
        refused = await assistant.refuse_pairing(second.code)
        with pytest.raises(KeyError, match="no pairing code"):
            await assistant.approve_pairing(second.code)
        spent = assistant.store.state.get("pair.code." + first.code)
        return waiting, {first.code, second.code}, person, refused, await assistant.pairing_requests(), spent

    waiting, codes, person, refused, after, spent = _run(isolated_home, scenario)
    assert waiting == codes and person.name == "sam" and refused.sender_id == "9"
    assert after == [] and spent is None  # a spent code is deleted, not left behind


def test_jobs_through_the_assistant_go_to_the_chat_used_last_else_the_terminal(isolated_home):
    async def scenario(assistant):
        terminal = await assistant.add_job("every", "1d", "digest")
        remember_chat(assistant.store, "telegram", "42")
        telegram = await assistant.add_job("cron", "0 8 * * *", "briefing", timezone_name="Europe/Lisbon")
        web = await assistant.add_job("every", "2h", "news", "web", "s1", reminder=True)
        with pytest.raises(JobError, match="chat id needs its channel"):
            await assistant.add_job("every", "1d", "x", None, "42")
        disabled = await assistant.set_job_enabled(web.id, False)
        listed = [(job.id, run.last_status) for job, run in await assistant.jobs()]
        removed = await assistant.remove_job(terminal.id)
        state_keys = [k for k in assistant.store.state.all() if terminal.id in k]
        return terminal, telegram, web, disabled, listed, removed, state_keys, await assistant.remove_job(terminal.id)

    terminal, telegram, web, disabled, listed, removed, state_keys, again = _run(isolated_home, scenario)
    assert (terminal.channel, terminal.chat_id) == ("cli", "default")
    assert (telegram.channel, telegram.chat_id, telegram.timezone) == ("telegram", "42", "Europe/Lisbon")
    assert (web.channel, web.chat_id, web.action) == ("web", "s1", "reminder") and disabled.enabled is False
    assert listed == [(terminal.id, ""), (telegram.id, ""), (web.id, "")]
    assert removed and state_keys == [] and again is False  # removed means deleted
