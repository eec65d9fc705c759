"""A retried request gets the first one's turn, not a new one.

The OpenAI SDKs retry a failed or timed-out request (twice by default), LangChain and others retry
on their own; a retry run as a new turn would store three failed turns, or give three answers to one
question. A request is the same as an earlier one when it carries the same ``Idempotency-Key``
header (replayed, whatever its outcome, for ``KEY_SECONDS``; the key sent again with another body is
refused, as the IETF Idempotency-Key draft and Stripe do), or has the very same body, in the same
conversation, as one that is still running or failed less than ``BODY_SECONDS`` ago. The conversation
(``X-Session-Id``, ``prompt_cache_key``) is part of it: two clients, or one sampling in parallel, that
ask the same thing at once under their own ids get an answer each. A body that already got an answer is
not replayed: a client sending the same conversation again after an answer is asking for a new one (a
chat UI's "regenerate"). Replays are per person, in this process, at most ``MAX_KEPT`` at a time.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio

    from picoora.gateway.runtime.envelopes import TurnOutcome

KEY_SECONDS = 3600.0
BODY_SECONDS = 60.0
MAX_KEPT = 512


@dataclass
class Replay:
    task: asyncio.Task[TurnOutcome]
    completion_id: str
    created: int
    by_key: bool  # an Idempotency-Key names it (else the body does)
    until: float
    body: str  # the request body's digest, to refuse a key sent again with another body

    def replayable(self, now: float) -> bool:
        if now > self.until:
            return False
        if self.by_key or not self.task.done():
            return True
        return self.task.cancelled() or self.task.exception() is not None or not self.task.result().ok


class Replays:
    def __init__(self) -> None:
        self._kept: OrderedDict[tuple[str, str], Replay] = OrderedDict()

    @staticmethod
    def key(person: str, conversation: str, idempotency_key: str | None, body: bytes) -> tuple[str, str]:
        if idempotency_key:
            return person, "key:" + idempotency_key
        return person, "body:" + digest(conversation.encode() + b"\0" + body)

    def find(self, key: tuple[str, str]) -> Replay | None:
        replay = self._kept.get(key)
        if replay is None:
            return None
        if not replay.replayable(time.monotonic()):
            del self._kept[key]
            return None
        return replay

    def forget(self, key: tuple[str, str], task: asyncio.Task[TurnOutcome]) -> None:
        """``task``'s turn is not one to replay (its client stopped it): a retry is a new turn."""
        replay = self._kept.get(key)
        if replay is not None and replay.task is task:
            del self._kept[key]

    def keep(self, key: tuple[str, str], task: asyncio.Task[TurnOutcome], completion_id: str, created: int,
             body: bytes) -> None:
        by_key = key[1].startswith("key:")
        until = time.monotonic() + (KEY_SECONDS if by_key else BODY_SECONDS)
        self._kept[key] = Replay(task, completion_id, created, by_key, until, digest(body))
        self._kept.move_to_end(key)
        while len(self._kept) > MAX_KEPT:
            self._kept.popitem(last=False)


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
