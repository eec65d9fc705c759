"""Approvals through the gateway's runtime with the fake Bot API and the fake model: a risky tool call of a
Telegram turn waits for the owner's button (approve once, for the session, deny), a silence is a denial,
and only the owner's press counts."""

from __future__ import annotations

import asyncio
import threading

from picoora.config import ApprovalsConfig, Config, save_config
from picoora.gateway.channels.links import Inbound
from picoora.gateway.runtime.approvals import Approvals
from picoora.identities import Person
from picoora.store.aio import AsyncStore
from tests.fakes.channel_kit import run_runtime, until
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.fakes.telegram_server import FakeTelegram

TOKEN = "654321:another-FAKE-token-xyz"
LONG_CONTENT = {"shown": "a" * 1200 + "; touch HIDDEN-TAIL-RAN", "hidden": "a" * 1600 + "; touch HIDDEN-TAIL-RAN"}


def respond(body: dict) -> Reply:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return Reply(content=f"tool said: {last['content']}")
    name = last["content"].split()[-1]
    if name in LONG_CONTENT:  # a long call whose end does what its start does not say
        return Reply(tool_calls=[("write_file", {"path": f"{name}.txt", "content": LONG_CONTENT[name]})])
    return Reply(tool_calls=[("write_file", {"path": f"{name}.txt", "content": "hello"})])


def scenario(home, play, *, timeout=30.0, approvals=None):
    """Run the runtime; ``play(telegram, workspace)`` is a coroutine driving the chat."""
    with FakeOllama(responder=respond) as ollama, FakeTelegram(TOKEN) as telegram:
        config = Config.model_validate({
            "providers": {"ollama": {"api_base": ollama.url, "max_retries": 0}},
            "memory": {"embedder": "none"},
            "channels": {"telegram": {"enabled": True, "token": TOKEN, "allow_from": ["7", "*"],
                                      "api_base": telegram.url}},
            "tools": {"approvals": {"timeout_seconds": timeout, **(approvals or {})}},
        })
        save_config(config)
        return run_runtime(config, lambda workspace: play(telegram, workspace)), telegram



async def ask_and_press(telegram, text: str, choice: str, presser: int = 7) -> None:
    """The owner (7) asks for a write; ``presser`` presses ``choice`` on the question."""
    telegram.push(7, text)
    assert await until(lambda: telegram.buttons(7))
    telegram.press(presser, next(b for b in telegram.buttons(7) if b.endswith(f":{choice}")), chat_id=7)


def answered(telegram, chat=7, count=1):
    return lambda: len([t for t in telegram.texts(chat) if t.startswith("tool said")]) >= count


def test_the_owner_approves_once_and_the_call_runs(isolated_home):
    async def play(telegram, workspace):
        telegram.push(7, "please write first")
        assert await until(lambda: telegram.buttons(7))
        assert not (workspace / "first.txt").exists()  # nothing ran before the answer
        question = next(t for t in telegram.texts(7) if "wants to run write_file" in t)
        approve = next(b for b in telegram.buttons(7) if b.endswith(":once"))
        telegram.press(7, approve)
        assert await until(answered(telegram))
        return workspace, question

    (workspace, question), telegram = scenario(isolated_home, play)
    assert (workspace / "first.txt").read_text() == "hello"
    assert '"path": "first.txt"' in question and "Approve once" in str(telegram.sent)
    assert any("approved once" in t for t in telegram.texts(7))  # the question now says its outcome
    assert "Approve once" in telegram.toasts


def test_a_denial_is_told_to_the_model_and_nothing_runs(isolated_home):
    async def play(telegram, workspace):
        await ask_and_press(telegram, "please write second", "deny")
        assert await until(answered(telegram))
        return workspace

    workspace, telegram = scenario(isolated_home, play)
    assert not (workspace / "second.txt").exists()
    assert any("the owner denied this write_file call" in t for t in telegram.texts(7))


def test_no_answer_in_time_is_a_denial(isolated_home):
    async def play(telegram, workspace):
        telegram.push(7, "please write third")
        assert await until(answered(telegram))
        return workspace

    workspace, telegram = scenario(isolated_home, play, timeout=0.5)
    assert not (workspace / "third.txt").exists()
    assert any("did not answer within 0.5 s" in t for t in telegram.texts(7))
    assert any("not answered within 0.5 s" in t for t in telegram.texts(7))


def test_a_session_grant_covers_later_calls_of_that_tool(isolated_home):
    async def play(telegram, workspace):
        await ask_and_press(telegram, "please write one", "session")
        assert await until(answered(telegram))
        asked = len([s for s in telegram.sent if s.get("reply_markup")])
        telegram.push(7, "please write two")
        assert await until(answered(telegram, count=2))
        return workspace, asked, len([s for s in telegram.sent if s.get("reply_markup")])

    (workspace, asked, asked_after), _ = scenario(isolated_home, play)
    assert (workspace / "one.txt").exists() and (workspace / "two.txt").exists()
    assert asked == asked_after == 1  # the second call was not asked about


def test_only_the_owners_press_counts(isolated_home):
    async def play(telegram, workspace):
        await ask_and_press(telegram, "please write fourth", "once", presser=8)  # a guest, in the owner's chat
        assert await until(lambda: telegram.toasts)
        ran_early = (workspace / "fourth.txt").exists()
        telegram.press(7, next(b for b in telegram.buttons(7) if b.endswith(":once")))
        assert await until(answered(telegram))
        return ran_early

    ran_early, telegram = scenario(isolated_home, play)
    assert not ran_early and telegram.toasts[0] == "Only the owner can answer this."


def test_tools_off_the_list_and_doors_off_the_list_are_not_asked(isolated_home):
    async def play(telegram, workspace):
        telegram.push(7, "please write free")
        assert await until(answered(telegram))
        return workspace

    workspace, telegram = scenario(isolated_home, play, approvals={"tools": ["exec"]})
    assert (workspace / "free.txt").exists() and telegram.buttons(7) == []


class _SlowState:
    """A state family whose read waits (as an Oracle call may, up to its call timeout) until the event loop
    releases it: a read made on the loop itself can never be released in time."""

    def __init__(self):
        self.release = threading.Event()
        self.released_in_time: bool | None = None

    def get(self, key):
        self.released_in_time = self.release.wait(5)
        return "telegram:7"

    def set(self, key, value):
        raise AssertionError("finding the owner's chat writes nothing")

    delete = all = set


class _SlowStateStore:
    def __init__(self):
        self.state = _SlowState()


def test_finding_the_owners_chat_does_not_block_the_event_loop():
    store = _SlowStateStore()
    astore = AsyncStore(store, workers=1)

    async def is_owner(sender):
        return False

    approvals = Approvals(ApprovalsConfig(tools=["exec"]), astore, is_owner)
    guest = Inbound("telegram", "99", "run it", person=Person("guest-telegram-99", owner=False), from_chat=True)
    approve = approvals.for_turn(guest)
    assert approve is not None

    async def scenario():
        asking = asyncio.create_task(approve("exec", {"command": "ls"}))
        await asyncio.sleep(0.05)  # runs only while the read waits off the loop
        store.state.release.set()
        return await asking

    try:
        refusal = asyncio.run(scenario())
    finally:
        astore.close()
    assert store.state.released_in_time is True
    assert refusal is not None and "no chat to ask them in" in refusal  # telegram is not running here


def test_a_call_too_long_to_show_whole_is_refused_and_a_shorter_one_is_shown_to_its_end(isolated_home):
    """The question cut the call at 600 characters, so a hidden tail ran on "Approve once"."""
    async def play(telegram, workspace):
        telegram.push(7, "please write hidden")
        assert await until(answered(telegram))
        assert not telegram.buttons(7)  # nobody was asked
        await ask_and_press(telegram, "please write shown", "once")
        assert await until(answered(telegram, count=2))
        return workspace

    workspace, telegram = scenario(isolated_home, play)
    assert not (workspace / "hidden.txt").exists()
    assert any("more than the 1500 an approval question can show whole" in t for t in telegram.texts(7))
    question = next(t for t in telegram.texts(7) if "wants to run write_file" in t)
    assert "HIDDEN-TAIL-RAN" in question and (workspace / "shown.txt").read_text() == LONG_CONTENT["shown"]
