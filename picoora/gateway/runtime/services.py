"""The gateway's runtime, wired: the turn service and what stands beside it (people, outbound delivery,
the messenger, the chat channels, the scheduler, the heartbeat), all from the one open assistant.

    runtime = GatewayRuntime(assistant)
    await runtime.start()              # in the app's lifespan
    task = runtime.turns.submit(Inbound("web", session_id, text))
    ...
    await runtime.stop_intake()        # no new work: channels stop receiving, timers stop
    await runtime.turns.drain(deadline)
    await runtime.close()              # channels closed, people's assistants closed

A channel message becomes a turn here (``_submit_chat``): the sender was admitted by the channel through
``admission.Directory``, the turn runs in that person's assistant (``_run``), and its answer goes back to the
chat through ``delivery`` (``_reply``), or into the message it streamed into on a channel that edits
(``runtime.streaming``). A chat command (``runtime.commands``) is answered in the same order without the
model; ``/stop`` at once. Each service gets the callables it needs, never the assistant.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from picoora.gateway.channels.links import Admission, Inbound
from picoora.gateway.runtime import media
from picoora.gateway.runtime.admission import Directory, PersonAssistants
from picoora.gateway.runtime.approvals import Approvals
from picoora.gateway.runtime.commands import parse_command, run_command
from picoora.gateway.runtime.delivery import Delivery
from picoora.gateway.runtime.duties import SingletonDuty, session_turn
from picoora.gateway.runtime.envelopes import TurnOutcome
from picoora.gateway.runtime.messenger import GatewayMessenger
from picoora.gateway.runtime.streaming import EditedReply
from picoora.gateway.runtime.turns import TurnService
from picoora.owner_chat import remember_chat
from picoora.store.leases import node_id

if TYPE_CHECKING:
    from picoora.agent import TurnResult
    from picoora.agent.events import EventSink
    from picoora.assistant import Assistant
    from picoora.gateway.channels.base import Channel, EditsMessages
    from picoora.gateway.runtime.heartbeat import HeartbeatService
    from picoora.gateway.runtime.scheduler import SchedulerService
    from picoora.identities import Sender

log = logging.getLogger(__name__)

FIRST_STATE_SECONDS = 5.0  # how long start-up waits for the channels to say whether they are connected
CUT_OFF_REPLY = "I was stopped (the gateway is restarting) before I could finish this. Please send it again."
STOPPED_REPLY = "Stopped. I did not finish that answer; send it again if you still want it."
NOTHING_TO_STOP = "Nothing is being worked on right now."


class GatewayRuntime:
    def __init__(self, assistant: Assistant):
        self.assistant = assistant
        self.turns = TurnService(self._run)
        self.people = PersonAssistants(assistant)
        self.directory = Directory(assistant.config, assistant.store)
        self.approvals = Approvals(assistant.config.tools.approvals, assistant.astore, self._is_owner)
        self.delivery = Delivery(assistant.astore, assistant.agent.secrets)
        self.messenger = GatewayMessenger(self.turns.submit, self.delivery)
        self.channels: list[Channel] = []
        self._editors: dict[str, EditsMessages] = {}  # channels whose answers stream into one message
        self._said: set[asyncio.Task[None]] = set()
        self.scheduler: SchedulerService | None = None
        self.heartbeat: HeartbeatService | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.started: list[str] = ["turn service"]  # what runs, for the start-up lines
        self.channel_lines: list[str] = []  # every channel and its state ("slack refused token", "web off")
        self.node = node_id()  # this gateway's name in the leases a fleet shares (scheduler, channels, sessions)

    # -- turns ----------------------------------------------------------------------------------------

    async def _run(self, inbound: Inbound, on_event: EventSink | None) -> TurnResult:
        async with self.people.lease(inbound.person) as assistant, \
                session_turn(assistant.store.leases, inbound.session, self.node):
            if inbound.from_chat and inbound.private_chat:  # never a group: jobs' answers go there
                await assistant.astore.run(remember_chat, assistant.store, inbound.channel, inbound.chat_id)
            if inbound.command is not None:
                from picoora.agent import TurnResult

                return TurnResult(await run_command(assistant, inbound, *inbound.command), "answer", 0, 0)
            if inbound.fresh_session:
                await assistant.new_session(inbound.session)
            text, images = inbound.text, []
            if inbound.attachments:
                taken = await media.take(assistant, inbound.session, inbound.text, inbound.attachments)
                for line in taken.said:
                    await self.delivery.deliver(inbound.channel, inbound.chat_id, line)
                if taken.said and not taken.reply:
                    self._keep_typing(inbound)
                if taken.reply:
                    from picoora.agent import TurnResult

                    return TurnResult(taken.reply, "answer", 0, 0)
                text, images = taken.text, taken.images
            return await assistant.ask(text, session_key=inbound.session, on_event=on_event,
                                       conversation=inbound.conversation, approve=self.approvals.for_turn(inbound),
                                       images=images, learn=inbound.typed_by_a_person)

    def _keep_typing(self, inbound: Inbound) -> None:
        for channel in self.channels:
            if channel.name == inbound.channel:
                channel.keep_typing(inbound.chat_id)

    def _submit_chat(self, inbound: Inbound) -> asyncio.Task[Any]:
        """A channel's admitted message: a turn whose answer goes back to the chat (a chat command is
        recognised here, once, and carried by the envelope)."""
        command = parse_command(inbound.text)
        inbound = replace(inbound, command=command)
        if command is not None and command[0] == "stop":
            if self.turns.stop(inbound.person_name, inbound.session):
                return self._say(inbound, "")  # the stopped turn's own reply says so
            return self._say(inbound, NOTHING_TO_STOP)
        editor = self._editors.get(inbound.channel) if command is None else None
        stream = EditedReply(editor, inbound.chat_id, interval=editor.edit_interval) if editor is not None else None

        async def reply(inbound: Inbound, outcome: TurnOutcome) -> None:
            await self._reply(inbound, outcome, stream)

        return self.turns.submit(inbound, on_event=stream, then=reply)

    def _say(self, inbound: Inbound, text: str) -> asyncio.Task[None]:
        """A short reply outside any turn (``/stop``); none when ``text`` is empty."""
        async def say() -> None:
            if text:
                await self.delivery.deliver(inbound.channel, inbound.chat_id, text)

        task = asyncio.get_running_loop().create_task(say())
        self._said.add(task)
        task.add_done_callback(self._said.discard)
        return task

    async def _reply(self, inbound: Inbound, outcome: TurnOutcome, stream: EditedReply | None = None) -> None:
        if outcome.status == "cut_off":
            text = CUT_OFF_REPLY
        elif outcome.status == "stopped_by_user":
            text = STOPPED_REPLY
        elif outcome.status == "busy":
            text = outcome.error
        elif outcome.result is not None:
            text = outcome.result.text  # an answer, or the loop's own words on why there is none
        else:
            text = "Something went wrong on my side and I could not answer; the gateway's log says what."
        if self.messenger.already_said(inbound.session, text):
            return  # the model already sent this reply with the message tool: not twice
        if stream is not None and outcome.result is not None and await stream.finish(text):
            return
        receipt = await self.delivery.deliver(inbound.channel, inbound.chat_id, text)
        if not receipt.delivered:
            log.warning("the reply to %s was not delivered: %s", receipt.where, receipt.error)

    async def _admit(self, sender: Sender, allow_from: list[str]) -> Admission:
        return await asyncio.to_thread(self.directory.admit, sender, allow_from)

    async def _is_owner(self, sender: Sender) -> bool:
        """``sender`` speaks as the owner (no pairing code is made for a stranger asking)."""
        allow_from = getattr(self.assistant.config.channels, sender.channel).allow_from
        person = await asyncio.to_thread(self.directory.person_of, sender, allow_from)
        return person is not None and person.owner

    # -- lifecycle ------------------------------------------------------------------------------------

    async def start(self) -> None:
        from picoora.gateway.channels import manifests
        from picoora.gateway.channels.base import AsksApprovals, ChannelLinks, EditsMessages

        config, astore = self.assistant.config, self.assistant.astore
        self.assistant.enable_messaging(self.messenger)
        links = ChannelLinks(admit=self._admit, submit=self._submit_chat, get_state=astore.state.get,
                             set_state=astore.state.set, answer_approval=self.approvals.answer)
        for manifest in manifests():
            name, settings = manifest.name, getattr(config.channels, manifest.name)
            if not settings.enabled:
                continue
            channel = manifest.channel(settings, links)
            self.channels.append(channel)
            self.delivery.register(name, channel.send)
            if isinstance(channel, EditsMessages):
                self._editors[name] = channel
            if isinstance(channel, AsksApprovals):
                self.approvals.channels[name] = channel
            self._spawn(f"channel {name}", self._singleton(f"channel.{name}", channel.run))
        await self._note_channel_states()
        if config.cron.enabled:
            from picoora.gateway.runtime.scheduler import SchedulerService
            from picoora.scheduler.jobs import JobBook

            book = JobBook(self.assistant.store, default_zone=config.agents.defaults.timezone)
            self.scheduler = SchedulerService(book, astore, submit=self.turns.submit, delivery=self.delivery,
                                              missed_grace=timedelta(minutes=config.cron.missed_grace_minutes),
                                              leases=self.assistant.store.leases)
            await self.scheduler.start()
            self.started.append("scheduler")
        if config.heartbeat.enabled and config.heartbeat.interval:
            from picoora.gateway.runtime.heartbeat import HeartbeatService

            self.heartbeat = HeartbeatService(astore, submit=self.turns.submit, delivery=self.delivery,
                                              interval_minutes=config.heartbeat.interval,
                                              workspace=self.assistant.workspace)
            self._spawn(f"heartbeat every {config.heartbeat.interval} min",
                        self._singleton("heartbeat", self.heartbeat.run))

    def _singleton(self, duty: str, work: Any) -> Any:
        """``work()`` on one gateway of a fleet at a time (on a single machine: simply here)."""
        return SingletonDuty(self.assistant.store.leases, duty, self.node, work).run()

    async def _note_channel_states(self) -> None:
        """Each channel's first word on its platform (bounded), so the start-up lines say what works."""
        from picoora.channel_registry import CHANNELS

        states = await asyncio.gather(*(c.first_state(FIRST_STATE_SECONDS) for c in self.channels))
        running = {channel.name: state for channel, state in zip(self.channels, states, strict=True)}
        self.channel_lines = [f"{name} {running.get(name, 'off')}" for name in CHANNELS]

    def _spawn(self, name: str, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        task.add_done_callback(lambda done: _report_end(name, done))
        self._tasks.append(task)
        self.started.append(name)

    async def stop_intake(self) -> None:
        """No new work from any door but HTTP: timers stop, channels stop receiving (they can still send,
        so the turns being drained reach their chats)."""
        self.turns.stop_accepting()
        if self.scheduler is not None:
            await self.scheduler.stop()
        for task in reversed(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def close(self) -> None:
        """After the drain: close the channels and the people's assistants (the owner's is the caller's)."""
        for channel in self.channels:
            self.delivery.unregister(channel.name)
            await channel.close()
        await self.people.aclose()


def _report_end(name: str, task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("the gateway's %s stopped: %s", name, task.exception())
