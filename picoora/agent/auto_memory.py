"""Automatic memory: facts a person states about themselves and their world, taken from their own message
after the turn has answered, without the model having to call ``remember``.

Only the person's message is read: never tool outputs, web pages or the model's answer (text an attacker
can shape), and only at the doors where a person typed it (``Assistant.ask(learn=True)``), not scheduled
jobs or the heartbeat. The rules are cheap and conservative: a sentence is kept when it states something
("my door code is 4421", "I live in Lyon", "I'm allergic to peanuts", "remember that ..."), not when it
asks, requests, supposes, quotes or speaks of today. What is kept goes through ``Store.memories.add``, so it
is deduplicated and supersedes what it states anew, with provenance ``inferred``. The work runs in the
background after the answer, one turn at a time, with a bounded queue (a burst drops the excess, logged).
bench/auto_memory_bench.py measures its precision and its cost per turn.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from picoora.messages import Message
from picoora.store.base import Provenance
from picoora.store.supersession import claim

if TYPE_CHECKING:
    from picoora.llm.pool import ModelPool
    from picoora.store.aio import AsyncStore

Extract = Callable[[str], Awaitable[list[str]]]  # a message -> the facts it states

log = logging.getLogger(__name__)

MAX_MESSAGE_CHARS = 2000  # longer is a pasted document, not a person talking about themselves
MAX_FACTS = 5  # per message
MAX_PENDING = 8  # turns waiting to be read; more are dropped (and logged)
_SENTENCE_CHARS = (8, 300)

# Sentences, and clauses joined by a comma and a conjunction ("..., can you ...", "..., so ...").
_ABBREVIATED = r"(?<!\bDr\.)(?<!\bMr\.)(?<!\bMrs\.)(?<!\bMs\.)(?<!\bSt\.)"  # "Dr. Weber" is one sentence
_SPLIT = re.compile(_ABBREVIATED + r"(?<=[.!?;])\s+|\n+|,\s*(?=(?:and|but|so|can|could|would|will|please|what|how|"
                    r"which)\b)", re.I)
_LEAD = re.compile(r"^(?:(?:oh|ok|okay|so|and|also|btw|by the way|fyi|just so you know|for the record|hey|hi)"
                   r"\b[,:]?\s*)+", re.I)
_REMEMBER = re.compile(r"^(?:please\s+)?(?:remember|note|keep in mind|don't forget)(?: that)?[,:]?\s+(.+)$", re.I)
_QUESTION_START = re.compile(
    r"^(?:what|who|whom|whose|where|when|why|how|which|can|could|would|will|shall|should|do|does|did|is|are|am|"
    r"was|were|have|has|may|might)\b", re.I)
_NOT_A_STATEMENT = re.compile(
    r"\b(?:please|can you|could you|would you|will you|help me|tell me|show me|let's|let us|if|suppose|imagine|"
    r"pretend|maybe|perhaps|probably|might|i think|i guess|i wonder|i bet|not sure|for example|e\.g|say that|"
    r"hypothetically|wish|would like|you|you're|your|ignore|instructions?)\b", re.I)  # addressed to the assistant
_NOW = re.compile(r"\b(?:today|tonight|tomorrow|yesterday|right now|just now|this (?:morning|afternoon|evening|week)|"
                  r"at the moment|later|soon)\b", re.I)
_ANCHORED = re.compile(r"^(?:(?i:my|our|the|i|we|mine)\b|[A-Z][a-z]+'s\b)")
_LIKES = re.compile(
    r"^(?:i|we)\s+(?:really\s+|usually\s+|always\s+|never\s+|don't\s+|do not\s+)?"
    r"(?:like|love|prefer|hate|dislike|enjoy|eat|drink|own|drive|speak|play|use|have an? |have \d|am allergic|"
    r"are allergic)", re.I)
_I_AM = re.compile(r"^(?:i am|i'm|we are|we're)\s+(?:an?\s|from\s|allergic|vegetarian|vegan|married|single|"
                   r"divorced|born|\d|left-handed|right-handed|colou?r-?blind|diabetic)", re.I)
_TRANSIENT_I = re.compile(r"^(?:i am|i'm|we are|we're)\b", re.I)


def facts_in(message: str) -> list[str]:
    """The statements of fact in a person's own ``message``, as memories (at most ``MAX_FACTS``)."""
    if len(message) > MAX_MESSAGE_CHARS or "```" in message:
        return []
    facts: list[str] = []
    for line in message.splitlines():
        if line.lstrip().startswith(">"):  # a quotation: someone else's words
            continue
        for piece in _SPLIT.split(line):
            fact = _fact(piece)
            if fact and fact not in facts:
                facts.append(fact)
    return facts[:MAX_FACTS]


def _fact(sentence: str) -> str | None:
    text = _LEAD.sub("", sentence.strip().strip("\"'")).strip()
    explicit = _REMEMBER.match(text)
    if explicit:
        text = explicit.group(1).strip()
    if not _SENTENCE_CHARS[0] <= len(text) <= _SENTENCE_CHARS[1] or text.endswith("?") or "http" in text:
        return None
    if _QUESTION_START.match(text) or _NOT_A_STATEMENT.search(text) or _NOW.search(text):
        return None
    text = text.rstrip(".!;, ")
    # "Remember ..." asks for a memory, but only a statement makes one: not "remember my boat and my cat"
    # (the model's own remember calls say what about them) nor "remember to buy milk" (a task).
    if not _states(text) and not (explicit and (claim(text) is not None or _has_verb(text))):
        return None
    return text[0].upper() + text[1:] + "."


_FINITE = re.compile(r"\b(?:is|are|was|were|am|has|have|had|do|does|did|can|will|must|should)\b", re.I)
_DETERMINERS = {"my", "our", "the", "a", "an", "his", "her", "their", "its", "this", "that", "on", "in", "at"}


def _has_verb(text: str) -> bool:
    """Whether ``text`` reads as a statement ("the recycling goes out on Thursdays") rather than a bare noun
    phrase ("my boat and my cat") or a task ("to buy milk"): a finite verb, or a lower-case word ending in -s
    or -ed that no determiner or preposition comes before (so "my keys" is a noun)."""
    if text.lower().startswith("to "):
        return False
    if _FINITE.search(text):
        return True
    words = re.findall(r"[A-Za-z']+", text)
    return any(re.fullmatch(r"[a-z]{2,}(?:s|ed)", word) and previous.lower() not in _DETERMINERS
               for previous, word in zip(words, words[1:], strict=False))


def _states(text: str) -> bool:
    """Whether ``text`` states a lasting fact about the person or their world (not how they feel now)."""
    if _LIKES.match(text) or _I_AM.match(text):
        return True
    if _TRANSIENT_I.match(text):  # "I'm tired", "I'm back": the moment, not a fact
        return False
    return bool(_ANCHORED.match(text)) and claim(text) is not None


async def by_rules(message: str) -> list[str]:
    return facts_in(message)


_EXTRACT_PROMPT = (
    "List the lasting facts the person states about themselves or their world in the message below, one per "
    "line, each a short self-contained sentence. Leave out questions, requests and anything about today. "
    "Answer NONE when there are none; nothing else."
)


def by_model(models: ModelPool) -> Extract:
    """Facts as the assistant's default model reads them (``memory.auto: "model"``): a model call per turn."""
    async def extract(message: str) -> list[str]:
        if len(message) > MAX_MESSAGE_CHARS:
            return []
        async with models.lease(models.default) as llm:
            response = await llm.chat([Message(role="system", content=_EXTRACT_PROMPT),
                                       Message(role="user", content=message)])
        lines = [line.strip().lstrip("-*•0123456789.) ").strip() for line in (response.content or "").splitlines()]
        facts = [line for line in lines if _SENTENCE_CHARS[0] <= len(line) <= _SENTENCE_CHARS[1]
                 and line.upper().rstrip(".") != "NONE" and not line.endswith("?")]
        return facts[:MAX_FACTS]

    return extract


class AutoMemory:
    """Remembers what people state, in the background after their turns (one at a time, bounded)."""

    def __init__(self, astore: AsyncStore, person: str, extract: Extract = by_rules):
        self._astore = astore
        self._person = person or "owner"
        self._extract = extract
        self._queue: asyncio.Queue[tuple[str, str, str]] = asyncio.Queue(MAX_PENDING)
        self._worker: asyncio.Task[None] | None = None

    def after_turn(self, message: str, session_key: str, turn_id: str) -> None:
        """Queue ``message`` (the person's own words, after their turn answered); never waits."""
        try:
            self._queue.put_nowait((message, session_key, turn_id))
        except asyncio.QueueFull:
            log.warning("automatic memory is behind: the facts of turn %s were not read", turn_id)
            return
        if self._worker is None or self._worker.done():
            self._worker = asyncio.get_running_loop().create_task(self._work())

    async def _work(self) -> None:
        while not self._queue.empty():
            message, session_key, turn_id = self._queue.get_nowait()
            try:
                await self.remember(message, session_key, turn_id)
            except Exception as exc:  # a store error must not surface in someone else's turn
                log.warning("automatic memory of turn %s failed: %s", turn_id, exc)
            finally:
                self._queue.task_done()

    async def remember(self, message: str, session_key: str, turn_id: str) -> list[str]:
        """Store the facts of ``message`` now; returns the texts stored (new or superseding)."""
        stored = []
        provenance = Provenance(how="inferred", person=self._person, session=session_key, turn_id=turn_id)
        for fact in await self._extract(message):
            added = await self._astore.memories.add(fact, 0.6, "auto", provenance=provenance)
            if added.created:
                stored.append(fact)
        return stored

    async def drain(self, timeout: float = 10.0) -> None:
        """Wait (bounded) for the queued turns, at shutdown: what a person said is not lost to an exit."""
        if self._worker is None or self._worker.done():
            return
        try:
            await asyncio.wait_for(asyncio.shield(self._worker), timeout)
        except asyncio.TimeoutError:
            log.warning("automatic memory: %d turns were not read before shutdown", self._queue.qsize())
