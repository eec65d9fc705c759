"""The one small interface every chat channel implements, and the chores they share.

A channel only translates: it receives platform updates and calls :meth:`Channel.receive`, and it
implements :meth:`Channel.deliver` for what goes back to a chat. It is handed ``ChannelLinks``, the few
callables it needs, and reaches nothing else of the gateway:

- ``admit``: who the sender is (``picoora.gateway.runtime.admission.Directory``); an unknown sender gets one
  short reply with a pairing code and nothing else: their text never reaches the model;
- ``submit``: the admitted message becomes a turn of the turn service, which replies to the chat through
  outbound delivery (this channel's ``send``) when the turn ends;
- ``get_state`` / ``set_state``: the channel's own bookkeeping in the owner's store (Telegram's offset).

A channel says how it stands with its platform through ``report`` (``CONNECTED``, ``REFUSED_TOKEN``,
``UNREACHABLE``); the gateway's start-up lines wait briefly for the first report (``first_state``).

The base also shows a typing indicator while the assistant works on a chat, stopped when the reply is sent.

A platform's channel subclasses ``Channel`` (or ``socket_channel.SocketChannel`` for one that pushes
events over a websocket, as Discord and Slack do), implements ``run`` (receive until cancelled),
``deliver`` (send one piece of text) and optionally ``show_typing``; it lives in a package of its own with
a ``MANIFEST`` (docs/architecture.md, "Adding a channel"). A platform that can edit a sent message also
subclasses ``EditsMessages`` (its answers then stream into one message), one with buttons
``AsksApprovals``. Chat commands (``/new`` ...) are the runtime's: a channel passes the text through.
"""

from __future__ import annotations

import abc
import asyncio
import logging

from picoora.channel_registry import ChannelConfig
from picoora.gateway.channels.links import CHOICES, Attachment, ChannelLinks, Inbound, pressed_approval
from picoora.identities import Sender

log = logging.getLogger(__name__)

TYPING_REFRESH_SECONDS = 4.0  # Telegram shows "typing" for about 5 s per request
TYPING_LIMIT_SECONDS = 600.0  # never type for ever if a reply is lost
CONNECTING, CONNECTED, REFUSED_TOKEN, UNREACHABLE = "connecting", "connected", "refused token", "unreachable"
STREAMING_MARK = " …"  # ends an answer's preview while it streams: ``EditsMessages.split`` leaves room for it
NOT_A_QUESTION = "This button does nothing any more."
PAIRING_REPLY = ("I don't know you yet, so I can't help here. Ask my owner to let you in with:\n"
                 "picoora pair approve {code}\n(this code works for one hour)")


class Channel(abc.ABC):
    name: str

    def __init__(self, config: ChannelConfig, links: ChannelLinks):
        self.config = config
        self.links = links
        self._typing: dict[str, asyncio.Task[None]] = {}
        self.state = CONNECTING
        # What keeps the channel from working, for /ready and the start-up warnings; None once it is connected.
        self.problem: str | None = "not connected yet"
        self._reported = asyncio.Event()

    def report(self, state: str, problem: str = "") -> None:
        """How the channel stands with its platform now (logged when it changes); ``problem`` says more than
        the state does when it is not connected."""
        if state != self.state:
            log.info("%s: %s", self.name, state)
        self.state = state
        self.problem = None if state == CONNECTED else (problem or state)
        self._reported.set()

    async def first_state(self, seconds: float) -> str:
        """The first state reported within ``seconds`` (else still ``connecting``)."""
        try:
            await asyncio.wait_for(self._reported.wait(), seconds)
        except asyncio.TimeoutError:
            pass
        return self.state

    @abc.abstractmethod
    async def run(self) -> None:
        """Receive messages until cancelled; network trouble is retried here, never raised."""

    @abc.abstractmethod
    async def deliver(self, chat_id: str, text: str) -> None:
        """Send one reply to ``chat_id`` (splitting and formatting are the channel's business)."""

    async def show_typing(self, chat_id: str) -> None:  # noqa: B027 - an optional hook: doing nothing is right
        """Tell the chat the assistant is working (once; the base repeats it). Optional."""

    async def receive(self, sender: Sender, chat_id: str, text: str, *, private: bool = False,
                      attachments: tuple[Attachment, ...] = (), **metadata: object) -> bool:
        """One incoming message: submitted as a turn, or answered with a pairing code. True if admitted.
        ``private``: a one-to-one chat (only those become where jobs and the heartbeat answer; a group never).
        ``attachments`` are fetched by the turn, never for a sender who was not admitted.
        Raises ``ShuttingDown`` when the gateway takes no more turns (the platform should offer it again)."""
        admission = await self.links.admit(sender, self.config.allow_from)
        if admission.person is None:
            if admission.new_code and admission.pairing is not None:  # said once per code: no talking in a loop
                # The owner learns of it here; the code itself stays out of the log (it is the key to get in).
                log.warning("%s: %s asked to talk to the assistant: `picoora pair list` shows the request",
                            self.name, _who(sender))
                await self._deliver_safely(chat_id, PAIRING_REPLY.format(code=admission.pairing.code))
            else:
                log.info("%s: refused another message from %s (pairing requested)", self.name, _who(sender))
            return False
        self.links.submit(Inbound(self.name, chat_id, text, sender_id=sender.sender_id, person=admission.person,
                                  from_chat=True, private_chat=private, metadata=dict(metadata),
                                  attachments=attachments))
        self._start_typing(chat_id)
        return True

    async def send(self, chat_id: str, text: str) -> None:
        """What outbound delivery calls: a reply, a job's result, a ``message`` tool call."""
        self._stop_typing(chat_id)
        await self.deliver(chat_id, text)

    def keep_typing(self, chat_id: str) -> None:
        """Show typing again: an interim message ("heard: ...") was sent and stopped it, the answer is to come."""
        self._start_typing(chat_id)

    async def _deliver_safely(self, chat_id: str, text: str) -> None:
        try:
            await self.deliver(chat_id, text)
        except Exception as exc:
            log.warning("%s: could not reply to chat %s: %s", self.name, chat_id, exc)

    def _start_typing(self, chat_id: str) -> None:
        if chat_id not in self._typing:
            self._typing[chat_id] = asyncio.get_running_loop().create_task(self._keep_typing(chat_id))

    def _stop_typing(self, chat_id: str) -> None:
        task = self._typing.pop(chat_id, None)
        if task is not None:
            task.cancel()

    async def _keep_typing(self, chat_id: str) -> None:
        loop = asyncio.get_running_loop()
        until = loop.time() + TYPING_LIMIT_SECONDS
        while loop.time() < until:
            try:
                await self.show_typing(chat_id)
            except Exception as exc:  # a lost "typing" is cosmetic
                log.debug("%s: typing indicator failed: %s", self.name, exc)
            await asyncio.sleep(TYPING_REFRESH_SECONDS)
        self._typing.pop(chat_id, None)

    async def close(self) -> None:
        """After the drain: nothing more will be sent (``run`` was cancelled before it)."""
        for task in self._typing.values():
            task.cancel()
        self._typing.clear()


def _who(sender: Sender) -> str:
    return f"@{sender.username} (id {sender.sender_id})" if sender.username else f"user {sender.sender_id}"


class EditsMessages(Channel):
    """A channel whose platform can edit a sent message: its answers stream into one message
    (``picoora.gateway.runtime.streaming``), previews ending with ``STREAMING_MARK``."""

    edit_interval = 1.0  # seconds between edits of a streamed answer, within the platform's rate limit

    @abc.abstractmethod
    def split(self, text: str) -> list[str]:
        """``text`` in pieces the platform takes as one message each."""

    @abc.abstractmethod
    async def start_message(self, chat_id: str, text: str) -> str:
        """Post ``text`` (plain) as a message that will be edited, and stop typing; its id."""

    @abc.abstractmethod
    async def edit_message(self, chat_id: str, message_id: str, text: str, *, final: bool) -> None:
        """Replace the message's text (``final``: the answer, formatted as a reply is)."""


class AsksApprovals(Channel):
    """A channel that can ask the owner to approve a tool call with buttons
    (``picoora.gateway.runtime.approvals``)."""

    @abc.abstractmethod
    async def ask_approval(self, chat_id: str, request_id: str, question: str, choices: dict[str, str]) -> str:
        """Post ``question`` with a button per choice (key -> label), each carrying
        ``links.approval_button(request_id, key)`` as its data (``approval_pressed`` reads it back).
        Returns the message's id."""

    async def approval_pressed(self, sender: Sender, data: str) -> tuple[bool, str]:
        """A button with ``data`` was pressed by ``sender``: whether that decided the question, and what to
        tell the presser (refused: a stranger, too late, or a button this gateway did not make)."""
        pressed = pressed_approval(data)
        if pressed is None or self.links.answer_approval is None:
            return False, NOT_A_QUESTION
        request_id, choice = pressed
        answer = await self.links.answer_approval(sender, request_id, choice)
        return answer == CHOICES[choice], answer

    @abc.abstractmethod
    async def settle_approval(self, chat_id: str, message_id: str, text: str) -> None:
        """Replace the question with its outcome, without buttons."""
