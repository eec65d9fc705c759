"""Shutdown with a turn in flight from each front door (HTTP, Telegram through the fake Bot API, a scheduled
job, the heartbeat, a background task): within ``gateway.shutdown_seconds`` each finishes, its answer is
delivered and recorded; past the deadline it is cut off and recorded as such. The gateway runs for real
(uvicorn on a loopback port, the real runtime); only the model and the Bot API are fakes."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import httpx
import pytest

from picoora.config import load_config
from picoora.gateway.runtime.services import CUT_OFF_REPLY
from picoora.owner_chat import remember_chat
from picoora.scheduler.jobs import JobBook
from picoora.store.files import FileStore
from tests.cli_support import write_config
from tests.fakes.gateway_kit import TOKEN, RunningGateway
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.fakes.telegram_server import FakeTelegram

BOT = "424242:shutdown-FAKE-token"
DOORS = ("http", "telegram", "cron", "heartbeat", "task")


def _until(check, seconds=15.0):
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.02)


def _config(home, ollama_url, telegram_url, shutdown_seconds):
    write_config(home, ollama_url=ollama_url)
    config = load_config(home / "config.json")
    config.gateway.token = TOKEN
    config.gateway.shutdown_seconds = shutdown_seconds
    config.channels.telegram = config.channels.telegram.model_copy(
        update={"enabled": True, "token": BOT, "allow_from": ["7"], "api_base": telegram_url})
    config.cron.enabled = True
    config.heartbeat = config.heartbeat.model_copy(update={"enabled": True, "interval": 30})
    return config


def _start_turn(door, gw, telegram, home):
    """Put one turn from ``door`` in flight; returns what the check needs (an HTTP answer holder, a job id)."""
    runtime = gw.gateway.runtime
    if door == "http":
        answers: list[httpx.Response] = []
        threading.Thread(target=lambda: answers.append(httpx.post(
            gw.url + "/v1/chat", json={"session_id": "inflight", "text": "slow question"}, headers=gw.headers,
            timeout=30)), daemon=True).start()
        return answers
    if door == "telegram":
        telegram.push(7, "slow question")
        return None
    if door == "cron":
        job = JobBook(gw.gateway.assistant.store).add("every", "1d", "slow question", "telegram", "7")
        asyncio.run_coroutine_threadsafe(runtime.scheduler.fire(job.id), gw._loop)
        return job.id
    if door == "heartbeat":
        (home / "workspace" / "HEARTBEAT.md").write_text("- slow question\n")
        remember_chat(gw.gateway.assistant.store, "telegram", "7")  # where the owner spoke last
        asyncio.run_coroutine_threadsafe(runtime.heartbeat.beat(), gw._loop)
        return None

    async def spawn():
        return runtime.messenger.spawn("slow question", "telegram:7")
    return gw.call(spawn())


def _held_model(answer):
    """A model that answers ``answer`` once ``release`` is set: the turn stays in flight until then."""
    release = threading.Event()

    def model(body):
        release.wait(20)
        return Reply(content=answer)

    return release, model


def _stop_in_background(gw):
    stopping = threading.Thread(target=gw.stop, daemon=True)
    stopping.start()
    return stopping


@pytest.mark.parametrize("door", DOORS)
def test_a_turn_in_flight_finishes_within_the_deadline_and_is_delivered_and_recorded(isolated_home, door):
    release, model = _held_model("the slow answer")
    with FakeOllama(responder=model) as ollama, FakeTelegram(BOT) as telegram:
        config = _config(isolated_home, ollama.url, telegram.url, shutdown_seconds=20)
        with RunningGateway(config) as gw:
            handle = _start_turn(door, gw, telegram, isolated_home)
            _until(lambda: ollama.requests)  # the turn is at the model
            stopping = _stop_in_background(gw)
            time.sleep(0.5)  # the gateway is draining, the turn still running
            assert stopping.is_alive()
            release.set()
            stopping.join(30)
            assert not stopping.is_alive()
        store = FileStore(isolated_home / "workspace")
        if door == "http":
            assert handle[0].status_code == 200 and handle[0].json()["text"] == "the slow answer"
            session = "web:inflight"
        elif door == "telegram":
            assert telegram.texts(7) == ["the slow answer"]
            session = "telegram:7"
        elif door == "cron":
            assert telegram.texts(7) == ["the slow answer"]
            record = JobBook(store).run_record(handle)
            assert (record.last_status, record.last_error) == ("ok", None)
            session = f"cron:{handle}"
        elif door == "heartbeat":
            assert telegram.texts(7) == ["the slow answer"]
            assert json.loads(store.state.get("heartbeat.last"))["outcome"] == "delivered"
            session = "heartbeat:main"
        else:
            assert telegram.texts(7) == [f"Background task {handle} finished:\nthe slow answer"]
            session = f"telegram:7:task-{handle}"
        assert [e.message.content for e in store.transcripts.read(session)][-1] == "the slow answer"


@pytest.mark.parametrize("door", DOORS)
def test_a_turn_past_the_deadline_is_cut_off_and_recorded_as_cut_off(isolated_home, door):
    release, model = _held_model("too late")
    with FakeOllama(responder=model) as ollama, FakeTelegram(BOT) as telegram:
        config = _config(isolated_home, ollama.url, telegram.url, shutdown_seconds=1)
        try:
            with RunningGateway(config) as gw:
                handle = _start_turn(door, gw, telegram, isolated_home)
                _until(lambda: ollama.requests)
                started = time.monotonic()
                gw.stop()
                took = time.monotonic() - started
        finally:
            release.set()
        store = FileStore(isolated_home / "workspace")
    assert took < 10
    if door == "http":
        assert store.transcripts.read("web:inflight")[0].message.content == "slow question"
    elif door == "telegram":
        assert telegram.texts(7) == [CUT_OFF_REPLY]
        assert store.transcripts.read("telegram:7")[0].message.content == "slow question"
    elif door == "cron":
        record = JobBook(store).run_record(handle)
        assert record.last_status == "cut_off" and "shut down" in record.last_error
    elif door == "heartbeat":
        assert json.loads(store.state.get("heartbeat.last"))["outcome"] == "cut_off"
    else:
        assert telegram.texts(7) == [f"Background task {handle} was cut off: the gateway stopped before it finished."]
