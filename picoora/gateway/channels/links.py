"""The vocabulary between the gateway's runtime and its chat channels: everything that crosses from one to
the other is named here, and this module imports neither side.

A channel imports this (and the shared channel modules beside it), never ``picoora.gateway.runtime``; the
runtime imports this to wire channels in. What crosses:

- ``ChannelLinks``: the callables a channel is handed, and ``Admission``, what ``admit`` answers;
- ``Inbound``: the envelope of a turn (a channel submits one per admitted message; every other door of
  the gateway submits one too), and ``ShuttingDown``, what ``submit`` raises once the gateway stops;
- ``Attachment`` (with ``TooLarge`` and ``DownloadFailed``): a file a message carries, announced by the
  channel, fetched by the runtime;
- ``COMMANDS``: the chat commands, which channels offer in their platform's menu;
- ``CHOICES`` and the approval button codec (``approval_button`` / ``pressed_approval``): the data
  ``ap:<request>:<choice>`` of every approval button, written and read in one place.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from picoora.agent.conversation import ClientConversation
    from picoora.identities import PairingRequest, Person, Sender


class ShuttingDown(Exception):
    """``submit`` after the gateway stopped taking turns (the platform should offer the message again)."""


@dataclass(frozen=True)
class Admission:
    """A sender let in (``person``), or not (``pairing``: their code; ``new_code``: tell them once)."""

    person: Person | None
    pairing: PairingRequest | None = None
    new_code: bool = False


Kind = Literal["image", "audio", "document"]


class TooLarge(Exception):
    """The download passed its limit (the platform announced less, or nothing)."""


class DownloadFailed(Exception):
    """The platform did not give the file; the message says why (and carries no token)."""


@dataclass(frozen=True)
class Attachment:
    """A picture, voice note or file a message carries, not yet downloaded: the runtime decides whether to
    ``fetch`` it (``picoora.gateway.runtime.media``), after the sender was admitted and the announced size
    and type passed the limits."""

    kind: Kind
    name: str  # as the sender's app called it: untrusted, sanitised before it names a file
    mime: str  # as announced (lower case, no parameters); "" when the platform says nothing
    size: int | None  # bytes, as announced; None when the platform does not say
    fetch: Callable[[int], Awaitable[bytes]]  # the bytes, at most this many (else ``TooLarge``)


@dataclass(frozen=True)
class Inbound:
    """What a door submits to the turn service: one envelope per turn."""

    channel: str  # the front door: "web", "openai", "telegram", "cron", "heartbeat", "task", ...
    chat_id: str
    text: str
    sender_id: str = ""
    person: Person | None = None  # None: the owner
    session_key: str = ""  # empty: "<channel>:<chat_id>"
    fresh_session: bool = False  # clear the session's history first (the heartbeat's beats see nothing older)
    from_chat: bool = False  # a person's chat message (set by the channel)
    private_chat: bool = False  # ... in a one-to-one chat: it becomes where their jobs and the heartbeat go
    metadata: dict[str, Any] = field(default_factory=dict)
    conversation: ClientConversation | None = None  # the OpenAI endpoint: the client keeps the history
    attachments: tuple[Attachment, ...] = ()  # a chat message's pictures, voice notes, files (not yet fetched)
    # A chat command (name, argument), recognised once when the message came in (``runtime.commands``);
    # None: the text goes to the model.
    command: tuple[str, str] | None = None

    @property
    def session(self) -> str:
        return self.session_key or f"{self.channel}:{self.chat_id}"

    @property
    def typed_by_a_person(self) -> bool:
        """Whether ``text`` is what a person wrote (a chat, the web chat, the API), not a job, the heartbeat or
        a background task: only such text may become memories by itself."""
        return self.from_chat or self.channel in ("web", "openai")

    @property
    def person_name(self) -> str:
        return "" if self.person is None or self.person.owner else self.person.name


@dataclass(frozen=True)
class ChannelLinks:
    """All a channel reaches of the gateway (it is handed these; it imports nothing of the runtime)."""

    admit: Callable[[Sender, list[str]], Awaitable[Admission]]
    submit: Callable[[Inbound], object]  # raises ShuttingDown once the gateway stops taking turns
    get_state: Callable[[str], Awaitable[str | None]]
    set_state: Callable[[str, str], Awaitable[None]]
    # A button press on an approval question (sender, request id, choice) -> what to tell the presser.
    answer_approval: Callable[[Sender, str, str], Awaitable[str]] | None = None


# name -> what it does (also the list channels register with their platform, e.g. Telegram's setMyCommands)
COMMANDS = {
    "new": "Start a new conversation (memories stay)",
    "model": "Show this chat's model, or switch it: /model NAME",
    "stop": "Stop the answer being worked on",
    "whoami": "Who I think you are and what you may do here",
    "help": "The commands",
}

# An approval question's choices: key (in the button's data) -> label (on the button, and the presser's answer)
CHOICES = {"once": "Approve once", "session": "This session", "deny": "Deny"}

_APPROVAL = "ap"
# A request id as the button carries it: no ":" (the separator), nothing a platform could mangle, and short
# enough that the whole data fits Telegram's 64 bytes of callback_data (Discord takes 100, Slack 255).
_REQUEST_ID = re.compile(r"[A-Za-z0-9_-]{1,32}")


def approval_button(request_id: str, choice: str) -> str:
    """The data of the button answering ``request_id`` with ``choice``: ``ap:<request>:<choice>``."""
    if not _REQUEST_ID.fullmatch(request_id) or choice not in CHOICES:
        raise ValueError(f"not an approval button: request {request_id[:40]!r}, choice {choice[:20]!r}")
    return f"{_APPROVAL}:{request_id}:{choice}"


def pressed_approval(data: str) -> tuple[str, str] | None:
    """(request id, choice) of a pressed button's data, or None for anything ``approval_button`` did not
    write: the data comes back from the platform, and a modified client can send any."""
    parts = data.split(":")
    if len(parts) != 3:
        return None
    kind, request_id, choice = parts
    if kind != _APPROVAL or not _REQUEST_ID.fullmatch(request_id) or choice not in CHOICES:
        return None
    return request_id, choice
