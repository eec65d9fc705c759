"""Identities: who is talking, on which channel, and the pairing codes that bind a stranger's identity to a person.

An identity is ``<channel>:<sender id>`` or ``<channel>:@<username>``. A person is a name with the
identities that are theirs (``users`` in config, plus those the owner admitted with ``picoora pair
approve``, which binds the sender's id, never their username). A username can change hands, so wherever
one is accepted (``users[].identities``, ``allow_from``) it is a hint: the first sender to use it binds it
to their id (``bound_id``), and a later sender with that username but another id is a stranger.
Admission, for a sender on a channel:

- a configured person or an approved pairing: admitted as that person;
- listed in the channel's ``allow_from`` by id or @username: admitted as the owner when no person
  claims the identity (the single-user set-up: "this Telegram account is me");
- ``allow_from: ["*"]``: admitted as a guest of their own (``guest-<channel>-<id>``), never as the owner,
  so strangers do not share the owner's memory (the Go version's fault);
- anyone else: refused; they get a pairing code and nothing of their text reaches the model.

The owner's data is the store as configured; everyone else's is scoped to them (``store.scoped``).
Admission itself (the rules above, applied to a sender) is the gateway's: ``picoora.gateway.runtime.admission``.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from picoora.config import PERSON_NAME_PATTERN, Config
from picoora.store.protocol import Store

OWNER = "owner"  # the owner's name when no configured user is marked owner
PAIR_PREFIX, APPROVED_PREFIX = "pair.code.", "pair.person."
BOUND_PREFIX = "pair.bound."  # "<channel>:@<username>" -> the sender id that first used it
CODE_LIFETIME = timedelta(hours=1)
_CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read aloud or typed from a phone
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class Person:
    name: str
    owner: bool = False


@dataclass(frozen=True)
class Sender:
    channel: str
    sender_id: str
    username: str = ""  # without the @

    @property
    def identities(self) -> list[str]:
        ids = [f"{self.channel}:{self.sender_id}"]
        if self.username:
            ids.append(f"{self.channel}:@{self.username.lstrip('@').lower()}")
        return ids


def check_person_name(name: str) -> str:
    """``name`` when it may name a person (the ``users[].name`` rule), else ValueError: it names their
    store, so ``.``, ``..``, ``.picoora`` or a slash would put it somewhere else."""
    if not re.fullmatch(PERSON_NAME_PATTERN, name):
        raise ValueError(f"a person's name is 1 to 32 letters, digits, '.', '_' or '-', starting with a letter "
                         f"or digit, not {name[:40]!r}")
    return name


def bound_id(store: Store, channel: str, username: str, sender_id: str) -> bool:
    """True when ``@username`` on ``channel`` belongs to ``sender_id``: bound to it now if nobody used it yet
    (first contact), or bound to it before. Blocking (a state read, perhaps a write)."""
    key = f"{BOUND_PREFIX}{channel}:@{username.lstrip('@').lower()}"
    bound = store.state.get(key)
    if not bound:
        store.state.set(key, sender_id)
        return True
    return bound == sender_id


def owner_name(config: Config) -> str:
    return next((u.name for u in config.users if u.owner), OWNER)


def guest_name(sender: Sender) -> str:
    return _SAFE.sub("-", f"guest-{sender.channel}-{sender.sender_id}")[:32]


@dataclass
class PairingRequest:
    code: str
    channel: str
    sender_id: str
    username: str
    expires: str  # ISO, UTC

    @property
    def expired(self) -> bool:
        return datetime.fromisoformat(self.expires) <= datetime.now(timezone.utc)


class Pairing:
    """Codes for unknown senders, kept in the owner's store so ``picoora pair`` works from another process."""

    def __init__(self, store: Store):
        self.store = store

    def request(self, sender: Sender) -> tuple[PairingRequest, bool]:
        """The sender's open request (a new one if none is valid); True when it is new (so it is told once)."""
        for pending in self.pending():
            if (pending.channel, pending.sender_id) == (sender.channel, sender.sender_id):
                return pending, False
        code = "".join(secrets.choice(_CODE_ALPHABET) for _ in range(8))
        request = PairingRequest(code, sender.channel, sender.sender_id, sender.username,
                                 (datetime.now(timezone.utc) + CODE_LIFETIME).isoformat())
        self.store.state.set(PAIR_PREFIX + code, json.dumps(request.__dict__))
        return request, True

    def pending(self) -> list[PairingRequest]:
        """The requests still valid. Expired ones are deleted as they are met: each stranger who wrote once
        would otherwise leave a state key behind for good."""
        requests = []
        for key, value in self.store.state.all().items():
            if key.startswith(PAIR_PREFIX) and value:
                try:
                    request = PairingRequest(**json.loads(value))
                except (ValueError, TypeError):
                    continue
                if request.expired:
                    self.store.state.delete(key)
                else:
                    requests.append(request)
        return requests

    def _take(self, code: str) -> PairingRequest:
        value = self.store.state.get(PAIR_PREFIX + code.strip().upper())
        if not value:
            raise KeyError(f"no pairing code {code}: `picoora pair list` shows the open ones")
        request = PairingRequest(**json.loads(value))
        self.store.state.delete(PAIR_PREFIX + request.code)
        if request.expired:
            raise KeyError(f"the pairing code {code} has expired: ask them to write again for a new one")
        return request

    def approve(self, code: str, name: str = "") -> Person:
        """Admit the code's sender as ``name`` (default: a guest of their own). Bound to their id: whoever
        takes their username later is not them. A bad name is refused before the code is spent."""
        if name:
            check_person_name(name)
        request = self._take(code)
        sender = Sender(request.channel, request.sender_id, request.username)
        person = name or guest_name(sender)
        self.store.state.set(APPROVED_PREFIX + sender.identities[0], person)
        return Person(person)

    def refuse(self, code: str) -> PairingRequest:
        return self._take(code)

    def approved(self) -> dict[str, str]:
        """Every identity let in with ``approve``, and the person it speaks as."""
        return {key[len(APPROVED_PREFIX):]: value for key, value in sorted(self.store.state.all().items())
                if key.startswith(APPROVED_PREFIX) and value}

    def revoke(self, who: str) -> dict[str, str]:
        """Take back ``who``'s access: an identity (``telegram:123``) or every identity of a person's name.
        Their memories stay (a new approval as the same name finds them). Returns what was revoked."""
        gone = {identity: person for identity, person in self.approved().items() if who in (identity, person)}
        for identity in gone:
            self.store.state.delete(APPROVED_PREFIX + identity)
        return gone
