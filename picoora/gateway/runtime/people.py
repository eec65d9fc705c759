"""Who a channel's sender is, and each admitted person's assistant.

- ``Directory.admit``: the admission rules of ``picoora.people`` applied to a sender (configured people,
  approved pairings, the channel's ``allow_from``); a sender who is not let in gets a pairing code.
- ``PersonAssistants``: the owner's assistant, or a person's own (their store, the guest tools), opened
  on first use and kept for the next message. At most ``capacity`` people's assistants stay open; the
  least recently used one that no turn is using is closed, so a thousand strangers cost a bounded amount.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from picoora.people import APPROVED_PREFIX, Pairing, PairingRequest, Person, Sender, guest_name, owner_name

if TYPE_CHECKING:
    from picoora.assistant import Assistant
    from picoora.config import Config
    from picoora.store.base import KeyValueStore

PEOPLE_CAPACITY = 32  # open assistants of people other than the owner; each holds a store


def _norm(identity: str) -> str:
    channel, _, who = identity.partition(":")
    return f"{channel}:{who.lower()}" if who.startswith("@") else identity


@dataclass(frozen=True)
class Admission:
    """A sender let in (``person``), or not (``pairing``: their code; ``new_code``: tell them once)."""

    person: Person | None
    pairing: PairingRequest | None = None
    new_code: bool = False


class Directory:
    """Resolves senders to people from the config and the approved pairings in the owner's store."""

    def __init__(self, config: Config, store: KeyValueStore):
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

    def _approved(self, identities: Iterable[str]) -> Person | None:
        for identity in identities:
            name = self.store.get_state(APPROVED_PREFIX + identity)
            if name:
                return Person(name, owner=name == self.owner.name)
        return None

    def person_of(self, sender: Sender, allow_from: list[str]) -> Person | None:
        """The person ``sender`` speaks as, or None when they are not let in."""
        for identity in sender.identities:
            if identity in self._configured:
                return self._configured[identity]
        approved = self._approved(sender.identities)
        if approved is not None:
            return approved
        listed = {entry.lower() if entry.startswith("@") else entry for entry in allow_from}
        if sender.sender_id in listed or (sender.username and f"@{sender.username.lower()}" in listed):
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


class PersonAssistants:
    def __init__(self, owner: Assistant, capacity: int = PEOPLE_CAPACITY):
        self.owner = owner
        self.capacity = capacity
        self._open: OrderedDict[str, _Open] = OrderedDict()
        self._opening = asyncio.Lock()

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

    async def _entry(self, name: str) -> _Open:
        async with self._opening:  # two first messages of one person open one store
            entry = self._open.get(name)
            if entry is None:
                assistant = await asyncio.to_thread(self.owner.open_for_person, name)
                entry = self._open[name] = _Open(assistant)
                await self._evict()
            self._open.move_to_end(name)
            return entry

    async def _evict(self) -> None:
        """Close the least recently used assistants past ``capacity``; one in use closes when its turn ends."""
        while len(self._open) > self.capacity:
            name, entry = next(iter(self._open.items()))
            del self._open[name]
            entry.closing = True
            if not entry.leases:
                await entry.assistant.aclose()

    async def aclose(self) -> None:
        entries, self._open = list(self._open.values()), OrderedDict()
        for entry in entries:
            await entry.assistant.aclose()
