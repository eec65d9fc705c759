"""Admission: who a channel's sender is, and the assistant each admitted person talks to.

- ``Directory.admit``: the admission rules of ``picoora.identities`` applied to a sender (configured people,
  approved pairings, the channel's ``allow_from``); a sender who is not let in gets a pairing code.
- ``PersonAssistants``: the owner's assistant, or a person's own (their store, the guest tools), opened
  on first use and kept for the next message. At most ``capacity`` people's assistants stay open; the
  least recently used one that no turn is using is closed, so a thousand strangers cost a bounded amount,
  and one nobody used for ``idle_seconds`` is closed too, so a guest who left holds no store, lock or thread.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from picoora.gateway.channels.links import Admission
from picoora.identities import (
    APPROVED_PREFIX,
    Pairing,
    Person,
    Sender,
    bound_id,
    check_person_name,
    guest_name,
    owner_name,
)

if TYPE_CHECKING:
    from picoora.assistant import Assistant
    from picoora.config import Config
    from picoora.store.protocol import Store

log = logging.getLogger(__name__)

PEOPLE_CAPACITY = 32  # open assistants of people other than the owner; each holds a store
PEOPLE_IDLE_SECONDS = 900.0  # a person's assistant unused this long is closed (reopened on their next message)


def _norm(identity: str) -> str:
    channel, _, who = identity.partition(":")
    return f"{channel}:{who.lower()}" if who.startswith("@") else identity


def listed_forms(sender: Sender) -> set[str]:
    """The ``allow_from`` entries that name ``sender`` by id. A Slack sender is ``<team>:<user>``, and a
    bare ``<user>`` (the Go version's form, whose team a migration cannot know) names them in any team:
    Slack assigns user ids, nobody chooses one, and ``<team>:<user>`` still pins one workspace."""
    forms = {sender.sender_id}
    if sender.channel == "slack":
        forms.add(sender.sender_id.rpartition(":")[2])
    return forms


class Directory:
    """Resolves senders to people from the config and the approved pairings in the owner's store."""

    def __init__(self, config: Config, store: Store):
        self.config = config
        self.store = store
        self.pairing = Pairing(store)
        self.owner = Person(owner_name(config), owner=True)
        self._configured = self._configured_people()  # the config does not change while it runs

    def _configured_people(self) -> dict[str, Person]:
        found = {}
        for user in self.config.users:
            for identity in user.identities:
                found[_norm(identity)] = Person(user.name, owner=user.owner or user.name == self.owner.name)
        return found

    def _approved(self, sender: Sender) -> Person | None:
        """An approval is bound to the sender's id (``pair.person.<channel>:<id>``); one stored by an older
        picoora under a username is not read, since whoever holds that username now may be someone else."""
        name = self.store.state.get(APPROVED_PREFIX + sender.identities[0])
        if not name:
            return None
        try:
            check_person_name(name)
        except ValueError:  # a hand-edited state: never a store outside the people's folder
            log.warning("ignored the approval of %s: %s", sender.identities[0], name[:40])
            return None
        return Person(name, owner=name == self.owner.name)

    def _username_is_theirs(self, sender: Sender) -> bool:
        return bool(sender.username) and bound_id(self.store, sender.channel, sender.username, sender.sender_id)

    def person_of(self, sender: Sender, allow_from: list[str]) -> Person | None:
        """The person ``sender`` speaks as, or None when they are not let in. A username counts only while
        it is bound to the sender's id (``identities.bound_id``)."""
        by_id, by_username = sender.identities[0], sender.identities[1:]
        if by_id in self._configured:
            return self._configured[by_id]
        if by_username and by_username[0] in self._configured and self._username_is_theirs(sender):
            return self._configured[by_username[0]]
        approved = self._approved(sender)
        if approved is not None:
            return approved
        listed = {entry.lower() if entry.startswith("@") else entry for entry in allow_from}
        id_listed = not listed.isdisjoint(listed_forms(sender))
        if id_listed or (f"@{sender.username.lower()}" in listed and self._username_is_theirs(sender)):
            return self.owner
        if "*" in listed:
            return Person(guest_name(sender))
        return None

    def admit(self, sender: Sender, allow_from: list[str]) -> Admission:
        """Let ``sender`` in, or give them a pairing code (blocking: run it in a thread)."""
        person = self.person_of(sender, allow_from)
        if person is not None:
            return Admission(person)
        request, new = self.pairing.request(sender)
        return Admission(None, request, new)


@dataclass
class _Open:
    assistant: Assistant
    leases: int = 0
    closing: bool = False
    idle_timer: asyncio.TimerHandle | None = None


class PersonAssistants:
    def __init__(self, owner: Assistant, capacity: int = PEOPLE_CAPACITY, idle_seconds: float = PEOPLE_IDLE_SECONDS):
        self.owner = owner
        self.capacity = capacity
        self.idle_seconds = idle_seconds
        self._open: OrderedDict[str, _Open] = OrderedDict()
        self._opening = asyncio.Lock()
        self._closing: set[asyncio.Task[None]] = set()  # idle assistants being closed

    @property
    def open_count(self) -> int:
        return len(self._open)

    @asynccontextmanager
    async def lease(self, person: Person | None) -> AsyncIterator[Assistant]:
        """The assistant ``person`` talks to, kept open while the block runs (None or the owner: the owner's)."""
        if person is None or person.owner:
            yield self.owner
            return
        entry = await self._entry(person.name)
        entry.leases += 1
        try:
            yield entry.assistant
        finally:
            entry.leases -= 1
            if entry.closing and not entry.leases:
                await entry.assistant.aclose()
            elif not entry.leases:
                entry.idle_timer = asyncio.get_running_loop().call_later(self.idle_seconds, self._close_idle,
                                                                         person.name, entry)

    async def _entry(self, name: str) -> _Open:
        async with self._opening:  # two first messages of one person open one store
            entry = self._open.get(name)
            if entry is None:
                assistant = await asyncio.to_thread(self.owner.open_for_person, name)
                entry = self._open[name] = _Open(assistant)
                await self._evict()
            if entry.idle_timer is not None:
                entry.idle_timer.cancel()
                entry.idle_timer = None
            self._open.move_to_end(name)
            return entry

    def _close_idle(self, name: str, entry: _Open) -> None:
        """A person quiet for ``idle_seconds``: their store, its lock and its threads are given back."""
        if self._open.get(name) is not entry or entry.leases:
            return
        del self._open[name]
        task = asyncio.get_running_loop().create_task(entry.assistant.aclose(), name=f"close {name}'s assistant")
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _evict(self) -> None:
        """Close the least recently used assistants past ``capacity``; one in use closes when its turn ends."""
        while len(self._open) > self.capacity:
            name, entry = next(iter(self._open.items()))
            del self._open[name]
            entry.closing = True
            if entry.idle_timer is not None:
                entry.idle_timer.cancel()
            if not entry.leases:
                await entry.assistant.aclose()

    async def aclose(self) -> None:
        entries, self._open = list(self._open.values()), OrderedDict()
        for entry in entries:
            if entry.idle_timer is not None:
                entry.idle_timer.cancel()
            await entry.assistant.aclose()
        await asyncio.gather(*self._closing, return_exceptions=True)
