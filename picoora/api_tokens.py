"""Per-person API tokens: one gateway serving a family's HTTP and MCP clients, each as their own person.

``picoora token create NAME`` makes a token for a person of ``users`` in config and prints it once; only
its SHA-256 is kept, in the owner's store state (``api.token.<sha256>`` -> the token's id, person, label
and creation time), so it works the same on files and Oracle and a running gateway sees a new or revoked
token on its next request. A token is 256 random bits, so a plain hash is enough (a slow password hash
protects guessable secrets, which these are not) and looking the hash up by key leaks nothing useful.
The gateway token keeps meaning the owner; it is not stored here.
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from picoora.identities import Person, owner_name

if TYPE_CHECKING:
    from picoora.config import Config
    from picoora.store.protocol import Store

log = logging.getLogger(__name__)

TOKEN_PREFIX = "pico_"  # recognisable in a config file or a leak scanner
STATE_PREFIX = "api.token."
MAX_LABEL = 80


@dataclass(frozen=True)
class ApiToken:
    id: str
    person: str
    label: str
    created: str  # ISO, UTC


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


class ApiTokens:
    """The tokens in ``store`` (the owner's), for the people of ``config.users``. With ``config_file`` (a
    running gateway), the people are read again when that file changes, so a person added to ``users`` (and
    given a token) gets in at once, and one removed is out at their next request, without a restart."""

    def __init__(self, store: Store, config: Config, *, config_file: Path | None = None):
        self.store = store
        self._config_file = config_file
        self._stamp: tuple[int, int] | None = None  # the file is read at the first lookup: it may have changed
        self._take_people(config)

    def _take_people(self, config: Config) -> None:
        self.owner = owner_name(config)
        self.people = {user.name for user in config.users} | {self.owner}

    def _refresh(self) -> None:
        stamp = _stamp(self._config_file)
        if self._config_file is None or stamp == self._stamp:
            return
        from picoora.config import ConfigError, load_config

        self._stamp = stamp
        try:
            self._take_people(load_config(self._config_file))
        except (ConfigError, OSError) as exc:  # a file caught mid-edit: the people stay as they were
            log.warning("%s changed but cannot be read (%s); the people with tokens stay as they were",
                        self._config_file, exc)

    def create(self, person: str, label: str = "") -> tuple[ApiToken, str]:
        """A new token for ``person``: its record and the token itself, which is not kept anywhere."""
        if person not in self.people:
            known = ", ".join(sorted(self.people))
            raise ValueError(f"no person {person!r} in config (users): tokens are for {known}")
        label = "".join(ch for ch in " ".join(label.split()) if ch.isprintable())  # listed on a terminal
        if len(label) > MAX_LABEL:
            raise ValueError(f"a label is at most {MAX_LABEL} characters")
        secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
        record = ApiToken(secrets.token_hex(4), person, label, datetime.now(timezone.utc).isoformat(timespec="seconds"))
        self.store.state.set(STATE_PREFIX + _digest(secret), json.dumps(asdict(record)))
        return record, secret

    def listed(self) -> list[ApiToken]:
        return sorted((record for _, record in self._records()), key=lambda r: (r.person, r.created))

    def revoke(self, token_id: str) -> ApiToken:
        """Revoke the token ``token_id`` (as listed); KeyError when there is none."""
        for key, record in self._records():
            if record.id == token_id.strip():
                self.store.state.delete(key)
                return record
        raise KeyError(f"no token {token_id!r}: `picoora token list` shows them")

    def person_of(self, secret: str) -> Person | None:
        """The person ``secret`` belongs to, or None (unknown, revoked, or its person left ``users``)."""
        if not secret.startswith(TOKEN_PREFIX):
            return None  # not one of ours: no store read for it
        self._refresh()
        record = _parse(self.store.state.get(STATE_PREFIX + _digest(secret)))
        if record is None or record.person not in self.people:
            return None
        return Person(record.person, owner=record.person == self.owner)

    def _records(self) -> list[tuple[str, ApiToken]]:
        found = []
        for key, value in self.store.state.all().items():
            if key.startswith(STATE_PREFIX):
                record = _parse(value)
                if record is not None:
                    found.append((key, record))
        return found


def _stamp(path: Path | None) -> tuple[int, int] | None:
    """What changes when the file does (its modification time and size), or None when it is not there."""
    try:
        info = path.stat() if path is not None else None
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_size) if info is not None else None


def _parse(value: str | None) -> ApiToken | None:
    if not value:
        return None
    try:
        return ApiToken(**json.loads(value))
    except (ValueError, TypeError):
        return None  # a damaged row admits nobody
