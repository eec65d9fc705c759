"""What the gateway runs beside its HTTP app: the bus dispatcher, the chat channels, the scheduler and the
heartbeat, started together and stopped in reverse order.

    services = GatewayServices(assistant)
    await services.start()      # in the app's lifespan
    ...
    await services.stop()

Each is wired here, at the composition root, from the one assistant: none of them imports another, and every
turn they cause goes through the bus and ``Assistant.ask`` (no side door into the agent).
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from picoora.bus import MessageBus
from picoora.dispatch import Dispatcher

if TYPE_CHECKING:
    from picoora.assistant import Assistant

log = logging.getLogger(__name__)


class GatewayServices:
    def __init__(self, assistant: Assistant, bus: MessageBus | None = None):
        self.assistant = assistant
        self.bus = bus or MessageBus()
        self.channels: list[Any] = []
        self.scheduler: Any = None
        self._tasks: list[asyncio.Task[None]] = []
        self.started: list[str] = []  # what runs, for the start-up lines

    async def start(self) -> None:
        from picoora.gateway.channels import CHANNELS
        from picoora.messengers import BusMessenger, enable_messaging
        from picoora.people import Directory, Pairing

        config = self.assistant.config
        enable_messaging(self.assistant, BusMessenger(self.assistant, self.bus))
        self._spawn("dispatcher", Dispatcher(self.assistant, self.bus).run())
        directory, pairing = Directory(config, self.assistant.store), Pairing(self.assistant.store)
        for name, (module, class_name) in CHANNELS.items():
            if not getattr(config.channels, name).enabled:
                continue
            channel = getattr(importlib.import_module(module), class_name)(
                getattr(config.channels, name), self.bus, directory, pairing)
            self.channels.append(channel)
            self._spawn(f"channel {name}", channel.run())
        if config.cron.enabled:
            from picoora.scheduler.jobs import JobBook
            from picoora.scheduler.service import SchedulerService

            book = JobBook(self.assistant.store, default_zone=config.agents.defaults.timezone)
            self.scheduler = SchedulerService(book, self.assistant.astore, self.bus,
                                              missed_grace=timedelta(minutes=config.cron.missed_grace_minutes))
            await self.scheduler.start()
            self.started.append("scheduler")
        if config.heartbeat.enabled and config.heartbeat.interval:
            from picoora.heartbeat import HeartbeatService

            heartbeat = HeartbeatService(self.assistant, self.bus, interval_minutes=config.heartbeat.interval,
                                         workspace=self.assistant.workspace)
            self._spawn(f"heartbeat every {config.heartbeat.interval} min", heartbeat.run())

    def _spawn(self, name: str, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        task.add_done_callback(lambda done: _report_end(name, done))
        self._tasks.append(task)
        self.started.append(name)

    async def stop(self) -> None:
        """Stop taking new work: channels and timers first, then the dispatcher (turns in flight finish in
        the agent, which the assistant's own close waits for)."""
        if self.scheduler is not None:
            await self.scheduler.stop()
        for task in reversed(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for channel in self.channels:
            await channel.close()


def _report_end(name: str, task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("the gateway's %s stopped: %s", name, task.exception())
