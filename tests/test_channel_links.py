"""The approval button codec every channel uses (``links.approval_button`` / ``pressed_approval``): what it
writes reads back, and what a modified client can send instead (any data at all) is refused before it
reaches the approvals."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from picoora.channel_registry import ChannelConfig
from picoora.gateway.channels.base import NOT_A_QUESTION, AsksApprovals
from picoora.gateway.channels.links import CHOICES, ChannelLinks, approval_button, pressed_approval
from picoora.identities import Sender

TELEGRAM_CALLBACK_BYTES = 64  # the smallest room of the three platforms (Discord 100, Slack 255)


@pytest.mark.parametrize("choice", list(CHOICES))
def test_a_button_reads_back_as_its_request_and_choice_and_fits_telegram(choice):
    request_id = uuid.uuid4().hex[:12]  # as ``runtime.approvals`` makes them
    data = approval_button(request_id, choice)
    assert data == f"ap:{request_id}:{choice}"
    assert pressed_approval(data) == (request_id, choice)
    longest = approval_button("x" * 32, max(CHOICES, key=len))
    assert len(longest.encode()) <= TELEGRAM_CALLBACK_BYTES


@pytest.mark.parametrize("data", [
    "", "ap", "ap:", "ap::once", "ap:abc:", "ap:abc", "ap:abc:once:extra", "ap:abc:ONCE", "ap:abc:approve",
    "xx:abc:once", "AP:abc:once", " ap:abc:once", "ap:abc:once ", "ap:abc:once\n", "ap:a\nb:once",
    "ap:../../x:once", "ap:a/b:once", "ap:a b:once", "ap:é1:once", "ap:١٢٣:once", "ap:" + "a" * 33 + ":once",
    "ap:abc:once\x00", "ap:abc:deny:session",
])
def test_hostile_or_broken_data_is_not_a_button(data):
    assert pressed_approval(data) is None


@pytest.mark.parametrize(("request_id", "choice"), [
    ("a:b", "once"), ("", "once"), ("x" * 33, "once"), ("abc\n", "once"), ("../x", "deny"), ("abc", "yes"),
    ("abc", ""), ("abc", "once:x"),
])
def test_a_button_is_never_written_with_an_id_or_choice_it_could_not_read_back(request_id, choice):
    with pytest.raises(ValueError):
        approval_button(request_id, choice)


class _Asks(AsksApprovals):
    name = "test"

    async def run(self) -> None: ...
    async def deliver(self, chat_id: str, text: str) -> None: ...
    async def ask_approval(self, chat_id: str, request_id: str, question: str, choices: dict[str, str]) -> str:
        return ""
    async def settle_approval(self, chat_id: str, message_id: str, text: str) -> None: ...


def _pressing(answer: str) -> tuple[_Asks, list[tuple[str, str]]]:
    asked: list[tuple[str, str]] = []

    async def answer_approval(sender: Sender, request_id: str, choice: str) -> str:
        asked.append((request_id, choice))
        return answer

    async def unused(*_: object) -> None:
        raise AssertionError("a button press admits nobody and keeps no state")

    links = ChannelLinks(admit=unused, submit=unused, get_state=unused, set_state=unused,  # type: ignore[arg-type]
                         answer_approval=answer_approval)
    return _Asks(ChannelConfig(), links), asked


def test_a_press_decides_only_when_the_approvals_took_its_choice():
    owner = Sender("test", "1")

    async def press(answer: str, data: str) -> tuple[tuple[bool, str], list[tuple[str, str]]]:
        channel, asked = _pressing(answer)
        return await channel.approval_pressed(owner, data), asked

    assert asyncio.run(press(CHOICES["deny"], "ap:r1:deny")) == ((True, CHOICES["deny"]), [("r1", "deny")])
    refused = "Only the owner can answer this."
    assert asyncio.run(press(refused, "ap:r1:once")) == ((False, refused), [("r1", "once")])
    # A forged id never reaches the approvals: the presser is told the button does nothing.
    assert asyncio.run(press(CHOICES["once"], "ap:r1:once:session")) == ((False, NOT_A_QUESTION), [])
