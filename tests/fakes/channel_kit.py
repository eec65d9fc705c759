"""A chat channel wired to a real people directory and store, with an 'agent' that echoes what it admits:
the Discord and Slack channel tests drive the real channel classes through it, against their fakes."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from picoora.channel_registry import ChannelConfig
from picoora.config import Config
from picoora.gateway.channels.base import ChannelLinks
from picoora.gateway.runtime.admission import Directory
from picoora.store.files import FileStore


class ChannelHarness:
    def __init__(self, tmp_path: Any, channel_class: type, channel_config: ChannelConfig,
                 reply: Callable[[Any], str] | None = lambda m: f"echo: {m.text}", config: Config | None = None):
        self.store = FileStore(tmp_path / "ws")
        self.directory = Directory(config or Config(), self.store)
        self.sleeps: list[float] = []
        self.admitted: list[Any] = []  # the Inbound envelopes the channel submitted as turns
        self.reply = reply
        self.stopping = False  # the turn service refuses new turns, as at shutdown
        self._turns: set[asyncio.Task[None]] = set()

        async def quick_sleep(seconds: float) -> None:  # the waits asked for are recorded, not waited
            self.sleeps.append(seconds)
            await asyncio.sleep(0.01)

        async def admit(sender: Any, allow: list[str]) -> Any:
            return await asyncio.to_thread(self.directory.admit, sender, allow)

        async def get_state(key: str) -> str | None:
            return self.store.state.get(key)

        async def set_state(key: str, value: str) -> None:
            self.store.state.set(key, value)

        links = ChannelLinks(admit=admit, submit=self.submit, get_state=get_state, set_state=set_state)
        self.channel = channel_class(channel_config, links, sleep=quick_sleep)

    def submit(self, inbound: Any) -> asyncio.Task[None]:
        """The turn service's part: an 'agent' that answers each admitted message in its chat (with no
        ``reply``, one that is still thinking)."""
        if self.stopping:
            from picoora.gateway.channels.links import ShuttingDown

            raise ShuttingDown()
        self.admitted.append(inbound)

        async def turn() -> None:
            if self.reply is None:
                await asyncio.Event().wait()
            await self.channel.send(inbound.chat_id, self.reply(inbound))

        task = asyncio.get_running_loop().create_task(turn())
        self._turns.add(task)
        return task

    async def run(self, until: Callable[[], Any], seconds: float = 10.0,
                  meanwhile: Callable[[], Any] | None = None) -> None:
        """Run the channel until ``until()`` holds (or ``seconds`` pass); ``meanwhile`` runs in a thread once
        the channel says it is connected (a test's script against its fake, which then talks to this
        channel's connection, not a previous one's)."""
        runner = asyncio.create_task(self.channel.run())
        try:
            if meanwhile is not None:
                await asyncio.to_thread(wait_for, lambda: self.channel.state == "connected")
                await asyncio.to_thread(meanwhile)
            deadline = asyncio.get_running_loop().time() + seconds
            while not until() and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.02)
        finally:
            runner.cancel()
            for task in self._turns:
                task.cancel()
            await asyncio.gather(runner, *self._turns, return_exceptions=True)
            await self.channel.close()


def wait_for(condition: Callable[[], Any], seconds: float = 10.0) -> None:
    """In a test's thread: block until ``condition()`` holds (a fake's state the channel changes)."""
    import time

    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the condition did not hold in time")
        time.sleep(0.02)


def pairing_code(reply: str) -> str:
    return reply.split("approve ")[1].split()[0]


def pair_then_talk(make: Callable[[], ChannelHarness], say: Callable[[str], Any],
                   replies: Callable[[], list[str]], taken: Callable[[], Any] = lambda: True) -> list[Any]:
    """A stranger writes and gets a code, the owner approves it as "sam", the stranger writes again:
    what the channel admitted the second time (on a fresh start, as after a restart). ``taken``: the
    platform knows the first message was handled (else it may offer it again to the second start)."""
    first = make()
    asyncio.run(first.run(lambda: replies() and taken(), seconds=5, meanwhile=lambda: say("hi")))
    from picoora.identities import Pairing

    assert Pairing(first.store).approve(pairing_code(replies()[0]), "sam").name == "sam"
    second = make()
    asyncio.run(second.run(lambda: len(replies()) > 1, seconds=5, meanwhile=lambda: say("me again")))
    return second.admitted


def refuses_chat_id(h: ChannelHarness, chat_id: str) -> None:
    """``deliver`` to ``chat_id`` raises ValueError (before any request: the test checks its fake)."""
    import pytest

    async def send() -> None:
        try:
            with pytest.raises(ValueError):
                await h.channel.deliver(chat_id, "hi")
        finally:
            await h.channel.close()

    asyncio.run(send())


def run_runtime(config: Config, play: Callable[[Any], Any]) -> Any:
    """The gateway's runtime (turn service, channels, approvals) over ``config`` until ``play(workspace)``, a
    coroutine driving the chat, returns; its result comes back after the runtime drained and closed."""
    from picoora.assistant import build_assistant
    from picoora.gateway.runtime.services import GatewayRuntime

    async def run() -> Any:
        async with build_assistant(config) as assistant:
            runtime = GatewayRuntime(assistant)
            await runtime.start()
            try:
                return await play(assistant.workspace)
            finally:
                await runtime.stop_intake()
                await runtime.turns.drain(5)
                await runtime.close()

    return asyncio.run(run())


async def until(check: Callable[[], Any], seconds: float = 15.0) -> bool:
    """``wait_for`` on the event loop: True once ``check()`` holds, False after ``seconds``."""
    for _ in range(int(seconds / 0.05)):
        if check():
            return True
        await asyncio.sleep(0.05)
    return False
