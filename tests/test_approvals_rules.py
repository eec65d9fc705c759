"""Approvals rule by rule, on ``Approvals`` itself with a recording chat channel (test_approvals.py drives
the same rules end to end through Telegram): which turns are asked, where, what a press or a silence
decides, how far a session grant reaches, and what a second press or a stranger's press changes."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from picoora.config import ApprovalsConfig
from picoora.gateway.channels.links import CHOICES, Inbound
from picoora.gateway.runtime.approvals import ARGUMENTS_SHOWN, Approvals
from picoora.identities import Person, Sender
from picoora.owner_chat import remember_chat
from picoora.store.aio import AsyncStore

OWNER = Sender("telegram", "7")


class Asker:
    """The two calls of ``AsksApprovals`` a chat channel makes for approvals, recorded."""

    def __init__(self, *, broken: str = ""):
        self.asked: list[tuple[str, str, str]] = []  # (chat, request id, question)
        self.settled: list[tuple[str, str, str]] = []  # (chat, message id, text)
        self.broken = broken  # "ask" or "settle": that call raises, as a chat API that is down

    async def ask_approval(self, chat_id: str, request_id: str, question: str, choices: dict[str, str]) -> str:
        if self.broken == "ask":
            raise ConnectionError("chat API down")
        self.asked.append((chat_id, request_id, question))
        return f"m{len(self.asked)}"

    async def settle_approval(self, chat_id: str, message_id: str, text: str) -> None:
        if self.broken == "settle":
            raise ConnectionError("chat API down")
        self.settled.append((chat_id, message_id, text))


class _Values:
    """The state family, in memory."""

    def __init__(self):
        self.values: dict[str, str] = {}

    def get(self, key: str) -> str | None:
        return self.values.get(key)

    def set(self, key: str, value: str) -> None:
        self.values[key] = value

    def delete(self, key: str) -> None:
        self.values.pop(key, None)

    def all(self) -> dict[str, str]:
        return dict(self.values)


class State:
    """A store with only its state: where the owner spoke last is all approvals read of it."""

    def __init__(self):
        self.state = _Values()


_STORE_THREADS = ThreadPoolExecutor(max_workers=1, thread_name_prefix="approvals-test-store")


async def _is_owner(sender: Sender) -> bool:
    return sender == OWNER


def _approvals(*, tools=("exec",), timeout=5.0, channels=("telegram",), asker: Asker | None = None,
               state: State | None = None) -> tuple[Approvals, Asker]:
    asker = asker or Asker()
    approvals = Approvals(ApprovalsConfig(channels=list(channels), tools=list(tools), timeout_seconds=timeout),
                          AsyncStore(state or State(), executor=_STORE_THREADS), _is_owner)
    approvals.channels["telegram"] = asker
    return approvals, asker


def _chat(text="run it", *, chat="7", session="", person: Person | None = None) -> Inbound:
    return Inbound("telegram", chat, text, "7", person, session_key=session, from_chat=True, private_chat=True)


async def _decided(approvals: Approvals, asker: Asker, call, choice: str, sender: Sender = OWNER):
    """Run ``call`` (an approve(...) awaitable), press ``choice`` on its question, return its verdict."""
    pending = asyncio.ensure_future(call)
    while len(asker.asked) == len(asker.settled) and not pending.done():
        await asyncio.sleep(0.001)
    if not pending.done():
        await approvals.answer(sender, asker.asked[-1][1], choice)
    return await pending


def test_only_chat_turns_on_a_listed_channel_with_listed_tools_are_asked():
    approvals, _ = _approvals()
    assert approvals.for_turn(_chat()) is not None
    assert approvals.for_turn(Inbound("telegram", "7", "x")) is None  # not a person's chat message (a job's)
    assert approvals.for_turn(Inbound("web", "s1", "x", from_chat=True)) is None  # a door that is not asked
    assert _approvals(tools=())[0].for_turn(_chat()) is None  # nothing needs approving


def test_a_tool_off_the_list_runs_without_asking():
    async def scenario():
        approvals, asker = _approvals(tools=("exec",))
        return await approvals.for_turn(_chat())("read_file", {"path": "x"}), asker.asked

    assert asyncio.run(scenario()) == (None, [])


@pytest.mark.parametrize(("choice", "runs"), [("once", True), ("session", True), ("deny", False)])
def test_each_button_decides_the_call_and_the_question_shows_the_outcome(choice, runs):
    async def scenario():
        approvals, asker = _approvals()
        verdict = await _decided(approvals, asker, approvals.for_turn(_chat())("exec", {"cmd": "ls"}), choice)
        return verdict, asker

    verdict, asker = asyncio.run(scenario())
    assert (verdict is None) == runs
    if not runs:
        assert verdict == "Not run: the owner denied this exec call. Do not try it again in another way."
    [(chat, request, question)] = asker.asked
    outcome = {"once": "approved once", "session": "approved for this session", "deny": "denied"}[choice]
    assert asker.settled == [("7", "m1", f"{question}\n\n→ {outcome}")] and chat == "7"


def test_a_session_grant_covers_that_tool_in_that_session_of_that_person_only():
    async def scenario():
        state = State()
        remember_chat(state, "telegram", "7")  # where a guest's turn is asked
        approvals, asker = _approvals(tools=("exec", "write_file"), state=state)
        ana = Person("ana")
        granted = _chat(session="telegram:7")
        first = await _decided(approvals, asker, approvals.for_turn(granted)("exec", {}), "session")
        again = await approvals.for_turn(granted)("exec", {"cmd": "again"})  # no question
        asked_before = len(asker.asked)
        verdicts = [
            await _decided(approvals, asker, approvals.for_turn(_chat(session=session, person=person))(tool, {}),
                           "deny")
            for session, person, tool in (("telegram:7", None, "write_file"),  # another tool
                                          ("telegram:8", None, "exec"),  # another session
                                          ("telegram:7", ana, "exec"))]  # another person's session of that name
        return first, again, asked_before, verdicts, len(asker.asked)

    first, again, asked_before, verdicts, asked_after = asyncio.run(scenario())
    assert first is None and again is None and asked_before == 1
    assert all(v is not None and "denied" in v for v in verdicts) and asked_after == 4


def test_a_once_approval_is_asked_again_next_time():
    async def scenario():
        approvals, asker = _approvals()
        approve = approvals.for_turn(_chat())
        verdicts = [await _decided(approvals, asker, approve("exec", {}), choice) for choice in ("once", "deny")]
        return verdicts, len(asker.asked)

    verdicts, asked = asyncio.run(scenario())
    assert verdicts[0] is None and "denied" in verdicts[1] and asked == 2


def test_silence_until_the_timeout_is_a_denial_and_a_press_after_it_changes_nothing():
    async def scenario():
        approvals, asker = _approvals(timeout=0.05)
        verdict = await approvals.for_turn(_chat())("exec", {})
        late = await approvals.answer(OWNER, asker.asked[0][1], "once")
        return verdict, late, asker.settled, approvals._pending

    verdict, late, settled, pending = asyncio.run(scenario())
    assert pending == {}  # an expired question leaves nothing behind
    assert verdict == ("Not run: the owner did not answer within 0.05 s, so exec was not approved. "
                       "Ask them, or do without it.")
    assert late == "This question was already answered or has expired."
    assert settled[0][2].endswith("→ not answered within 0.05 s: not run")


def test_a_second_press_a_strangers_press_and_an_unknown_choice_decide_nothing(caplog):
    async def scenario():
        approvals, asker = _approvals()
        pending = asyncio.ensure_future(approvals.for_turn(_chat())("exec", {}))
        while not asker.asked:
            await asyncio.sleep(0.001)
        request = asker.asked[0][1]
        replies = [await approvals.answer(Sender("telegram", "8"), request, "once"),  # a guest in the chat
                   await approvals.answer(OWNER, request, "always"),  # not a button we sent
                   await approvals.answer(OWNER, "unknown-id", "once")]
        still_open = not pending.done()
        replies.append(await approvals.answer(OWNER, request, "deny"))
        replies.append(await approvals.answer(OWNER, request, "once"))  # a second press
        return replies, still_open, await pending, request, approvals._pending

    with caplog.at_level(logging.WARNING, logger="picoora.gateway.runtime.approvals"):
        replies, still_open, verdict, request, left = asyncio.run(scenario())
    # who tried: the operator's trace of a stranger at the owner's buttons
    assert [r.getMessage() for r in caplog.records] == ["approvals: telegram:8 pressed a button but is not the owner"]
    # a short id: "ap:<request>:<choice>" must fit Telegram's 64 bytes of callback data
    assert re.fullmatch(r"[0-9a-f]{12}", request) and left == {}
    assert replies == ["Only the owner can answer this.", "Unknown choice.",
                       "This question was already answered or has expired.", CHOICES["deny"],
                       "This question was already answered or has expired."]
    assert still_open and "denied" in verdict  # the first valid press decided; the second did not undo it


def test_a_guests_turn_is_asked_in_the_owners_last_private_chat_or_not_run_without_one():
    async def scenario():
        state = State()
        approvals, asker = _approvals(state=state)
        guest_turn = _chat(chat="555", session="telegram:555", person=Person("ana"))
        unreachable = await approvals.for_turn(guest_turn)("exec", {})
        remember_chat(state, "discord", "d1")  # the owner spoke last on a channel that cannot ask here
        still_unreachable = await approvals.for_turn(guest_turn)("exec", {})
        remember_chat(state, "telegram", "7")
        verdict = await _decided(approvals, asker, approvals.for_turn(guest_turn)("exec", {"cmd": "ls"}), "once")
        return unreachable, still_unreachable, verdict, asker.asked

    unreachable, still_unreachable, verdict, asked = asyncio.run(scenario())
    assert unreachable == still_unreachable == ("Not run: exec needs the owner's approval and there is no chat "
                                                 "to ask them in.")
    [(chat, _, question)] = asked
    assert verdict is None and chat == "7" and question.startswith("ana wants to run exec:")


def test_the_owners_turn_is_asked_in_its_own_chat():
    async def scenario():
        approvals, asker = _approvals()
        await _decided(approvals, asker, approvals.for_turn(_chat(chat="42"))("exec", {"cmd": "ls"}), "once")
        return asker.asked

    [(chat, _, question)] = asyncio.run(scenario())
    assert chat == "42" and question == 'This chat wants to run exec:\n{\n "cmd": "ls"\n}\nAllow it?'


def test_a_question_that_cannot_be_posted_is_not_run_and_one_not_settled_still_decides(caplog):
    async def scenario():
        approvals, _ = _approvals(asker=Asker(broken="ask"))
        not_posted = await approvals.for_turn(_chat())("exec", {})
        pending_after = dict(approvals._pending)
        approvals, asker = _approvals(asker=Asker(broken="settle"))
        settled_badly = await _decided(approvals, asker, approvals.for_turn(_chat())("exec", {}), "once")
        return not_posted, pending_after, settled_badly

    with caplog.at_level(logging.WARNING, logger="picoora.gateway.runtime.approvals"):
        not_posted, pending_after, settled_badly = asyncio.run(scenario())
    assert [r.getMessage() for r in caplog.records] == ["could not ask the owner to approve exec: chat API down",
                                                        "could not mark the approval of exec as settled: chat API down"]
    assert "there is no chat to ask them in" in not_posted and pending_after == {}
    assert settled_badly is None  # the buttons stay, the owner's yes stands


def test_arguments_up_to_the_bound_are_shown_whole_and_one_character_more_is_refused_unasked():
    async def ask(arguments):
        approvals, asker = _approvals()
        verdict = await _decided(approvals, asker, approvals.for_turn(_chat())("exec", arguments), "deny")
        return verdict, asker.asked[0][2] if asker.asked else None

    def shown(arguments) -> str:
        return json.dumps(arguments, ensure_ascii=False, indent=1)

    # '{\n "c": "…"\n}' is 12 characters around the value
    exactly = {"c": "x" * (ARGUMENTS_SHOWN - 12)}
    longer = {"c": "é" * (ARGUMENTS_SHOWN - 11)}
    assert len(shown(exactly)) == ARGUMENTS_SHOWN and len(shown(longer)) == ARGUMENTS_SHOWN + 1
    _, question = asyncio.run(ask(exactly))
    assert question is not None and shown(exactly) + "\nAllow it?" in question
    refusal, question = asyncio.run(ask(longer))
    assert question is None  # nobody is asked about what a question cannot show whole
    assert f"more than the {ARGUMENTS_SHOWN} an approval question can show whole" in refusal
