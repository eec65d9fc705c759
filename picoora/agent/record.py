"""A turn's record: what the turn produced, and what of it is kept where.

Every message goes to the transcript the moment it exists, so nothing the user was shown is lost (also
after ``kill -9``). The session gets the turn once, at its end, by how it ended (``Ending``); the four
policies are ``session_share`` and ``CLOSING_MARKS``:

- ``ANSWERED``: an answer, or a limit's answer saying why the turn stopped (a call the limit left unrun gets
  an explicit "not run" result first, so the history stays valid for every provider): the turn's messages
  as they are, reasoning left out (it stays in the transcript).
- ``FAILED`` and ``CANCELLED``: the model or the store failed, the turn broke on a bug, or it was cancelled
  (Ctrl+C, /stop, a shutdown). The results that came back and the part of an answer the user saw are
  recorded, then a closing mark (``FAILED_MARK``, ``CANCELLED_MARK``); the session gets the complete
  call/result pairs and the mark, each marked ``cancelled``, so no later turn sends them to the model again
  (``context.without_cancelled``). The user was told the turn failed and sends the message again if they
  still want an answer: joined silently to their next message, an old question would be answered beside the
  new one (``pong: hello\n\nhello\n\nhi``). The transcript is append-only, so its closing mark is what
  marks the turn there.
- ``NOT_SENT``: the user's message alone cannot fit the model's window: the transcript keeps it; the
  session stays as it was, so the message is not loaded with every later turn.

A conversation the client keeps (``saved`` false) never reaches the session, however the turn ended: the
client sends it again with its next request. The first ending counts: a cancellation or a failing event
sink during or after the session write must not save the turn a second time.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable
from dataclasses import replace
from enum import Enum

from picoora.agent.repair import complete_pairs, interrupted_result
from picoora.messages import Message, ToolCall, scrubbed
from picoora.secrets import scrub
from picoora.store.aio import AsyncStore
from picoora.store.base import StoreError, TurnTrace

log = logging.getLogger(__name__)

CUT_OFF_MARK = " [the answer was cut off here]"
CANCELLED_MARK = "[the turn was cancelled; the message above was not answered]"
FAILED_MARK = "[the turn failed; the message above was not answered]"


class Ending(Enum):
    ANSWERED = "answered"
    FAILED = "failed"
    CANCELLED = "cancelled"
    NOT_SENT = "not_sent"


# The message that closes a turn ended so, in the transcript and the session; marked ``cancelled``.
CLOSING_MARKS = {Ending.FAILED: FAILED_MARK, Ending.CANCELLED: CANCELLED_MARK}


def session_share(produced: list[Message], ending: Ending, *, saved: bool) -> list[Message]:
    """What the session gets of a turn that produced ``produced`` and ended so (the module's policies)."""
    if not saved or ending is Ending.NOT_SENT:
        return []
    if ending is Ending.ANSWERED:
        return [replace(m, reasoning=None) if m.reasoning else m for m in produced]
    return [replace(m, cancelled=True, reasoning=None) for m in complete_pairs(produced)]


class TurnRecord:
    """The messages of one turn as they are produced, the answer text the user has seen of the model call in
    progress, the tool calls running and the results back so far; and the turn's writes to the store."""

    def __init__(self, store: AsyncStore, session_key: str, *, saved: bool, secrets: Iterable[str] = ()):
        self._store = store
        self._scrub = functools.partial(scrub, secrets=tuple(secrets))
        self._key = session_key
        self._saved = saved
        self.produced: list[Message] = []  # in the transcript already (or being written to it)
        self._shown: list[str] = []
        self._open: list[ToolCall] = []
        self._returned: dict[str, Message] = {}
        self.ending: Ending | None = None

    async def add(self, messages: list[Message]) -> None:
        # Stored as they may be shown: the transcript is served (history) on every backend.
        messages = [scrubbed(m, self._scrub) for m in messages]
        # Listed before the write: a write cut short by cancellation still completes in its thread.
        self.produced.extend(messages)
        await self._store.transcripts.append(self._key, messages)

    # -- what is under way -----------------------------------------------------------------------------

    def shown(self, text: str) -> None:
        """A piece of answer text the user has been shown while the model call is under way."""
        self._shown.append(text)

    def forget_shown(self) -> None:
        """A model call starts, or returned whole (the response itself is then what gets recorded)."""
        self._shown = []

    def open_round(self, calls: list[ToolCall]) -> None:
        self._open, self._returned = calls, {}

    def returned(self, result: Message) -> None:
        """A tool result of the open round came back (``result.tool_call_id`` names its call)."""
        self._returned[result.tool_call_id or ""] = result

    async def close_round(self) -> None:
        """Every call of the open round returned: their results are recorded in call order."""
        results = [self._returned[call.id] for call in self._open]
        self._open, self._returned = [], {}
        await self.add(results)

    # -- the endings -----------------------------------------------------------------------------------

    async def answered(self, final: Message, unrun: str = "") -> None:
        """The turn ends on ``final``; calls of the last round still without a result get one saying
        ``unrun`` (a limit stopped them), or the one that came back."""
        last = self.produced[-1] if self.produced else None
        if last is not None and last.role == "assistant" and last.tool_calls:
            await self.add([self._returned.get(c.id) or interrupted_result(c, unrun) for c in last.tool_calls])
            self._open, self._returned = [], {}
        await self._keep_what_was_shown()  # a time limit in the middle of a streamed answer
        await self.add([final])
        await self._end(Ending.ANSWERED)

    async def unanswered(self, ending: Ending) -> None:
        """The turn ends without an answer: what came back and what the user saw are recorded, then the
        ending's closing mark. Nothing when the turn had ended already or had produced nothing yet."""
        if self.ending is not None or not self.produced:
            return
        await self._keep_what_was_shown()
        mark = CLOSING_MARKS.get(ending)
        closing = [Message(role="assistant", content=mark, cancelled=True)] if mark else []
        returned = [self._returned[c.id] for c in self._open if c.id in self._returned]
        self._open, self._returned = [], {}
        if returned or closing:
            await self.add([*returned, *closing])
        await self._end(ending)

    async def _keep_what_was_shown(self) -> None:
        """An answer cut off midway (a broken stream, a time limit, Ctrl+C) was partly on the user's screen
        already: it is recorded, marked, so the record shows what the user saw."""
        shown, self._shown = "".join(self._shown), []
        if shown.strip():
            await self.add([Message(role="assistant", content=f"{shown.rstrip()}{CUT_OFF_MARK}")])

    async def _end(self, ending: Ending) -> None:
        self.ending = ending  # before the write: see the module's last paragraph
        share = session_share(self.produced, ending, saved=self._saved)
        if share:
            await self._store.sessions.append(self._key, share)

    async def save_trace(self, trace: TurnTrace) -> None:
        try:
            await self._store.traces.append(trace)
        except StoreError as exc:  # a lost trace must not cost the answer
            log.warning("could not save the trace of turn %s: %s", trace.turn_id, exc)
