"""Whether a new memory states a new value for what an older one states (so the older is superseded).

Rules over the text, not embeddings: a fact is split at its verb into a subject and a value ("the door
code" | "is" | "4421"); two facts are about the same thing when their subjects have the same content
words and their verbs the same kind, and the newer supersedes the older when the values differ. Embedding
similarity cannot tell "locker 3 for the blue bag" from "locker 4 for the red bag" (they are near-identical
vectors) but the subjects ("blue bag" vs "red bag") can; bench/supersession_bench.py measures the rule.

Conservative on purpose: a missed supersession leaves both facts recalled (recency still orders them), a
wrong one hides a true fact; so a bare "I am ..." supersedes only a number (an age), and facts whose values
name different things ("3 for the blue bag" vs "4 for the red bag") never do.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from picoora.store.base import MemoryRecord

CANDIDATES = 8  # the nearest current memories a new one is compared with

# Verb kinds, longest phrases first within each (the first match in the sentence splits it).
_VERBS: tuple[tuple[str, str], ...] = (
    ("is", r"has changed to|has been changed to|changed to|has moved to|moved to|is now|are now|was changed to"
           r"|is still|is|are|am|was|were|equals|became|has become"),
    ("lives", r"now lives? (?:in|at|on)|lives? (?:in|at|on)|moved to|relocated to|am living (?:in|at)"
              r"|are living (?:in|at)|is living (?:in|at)"),
    ("works", r"now works? (?:at|for|as)|works? (?:at|for|as)|switched jobs to|started working (?:at|for)"),
    ("named", r"is called|are called|is named|named|called"),
)
_VERB_RE = [(kind, re.compile(rf"\b(?:{pattern})\b")) for kind, pattern in _VERBS]
_PRONOUNS = {"i", "we", "he", "she", "they", "it", "this", "that", "you"}
# Words that say nothing about which thing the fact is about, or only that it changed.
_FILLER = {
    "the", "a", "an", "my", "our", "his", "her", "their", "your", "its", "of", "new", "current", "currently",
    "now", "actually", "still", "anymore", "updated", "latest", "since", "today", "recently", "then", "so",
    "just", "also", "no", "longer", "not", "and", "really",
}
_TIME_TAIL = re.compile(r"\b(?:since|as of|from now on|starting|effective|until|till)\b.*$")
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_NUMBER = re.compile(r"\d")
# A value naming which thing it belongs to ("4 for the red bag", "3 of the garage"): compared word for word.
_QUALIFIER = re.compile(r"\b(?:for|of)\b (.+)$")
_LEADING = {"on", "at", "in", "to"}  # "is on Tuesday" / "moved to Thursday" state the same kind of value


@dataclass(frozen=True)
class Claim:
    subject: frozenset[str]  # content words of what the fact is about
    kind: str  # the verb's kind
    value: tuple[str, ...]  # the words stating it
    pronoun: bool  # the subject is only "I", "she", ...


def _words(text: str) -> list[str]:
    return [w.removesuffix("'s") for w in _WORD.findall(text.lower())]


def _content(words: Iterable[str]) -> list[str]:
    return [w for w in words if w not in _FILLER]


def claim(text: str) -> Claim | None:
    """The fact as subject / verb kind / value, or None when it has no verb the rules know."""
    lowered = " ".join(text.lower().replace("’", "'").split()).rstrip(".!")
    lowered = re.sub(r"\b(i|you|we|they)'(m|re)\b", lambda m: m.group(1) + (" am" if m.group(2) == "m" else " are"),
                     lowered)
    # The model writes "the user's door code" for what the person says as "my door code".
    lowered = re.sub(r"\b(?:the )?user's\b", "my", re.sub(r"\bthe user (is|lives|works|moved)\b", r"i \1", lowered))
    found: tuple[int, int, str] | None = None
    for kind, pattern in _VERB_RE:
        match = pattern.search(lowered)
        # The earliest verb splits the fact; where two start together the longer phrase is the verb ("is
        # living in", "is called"), else "is" would take "living in Rome" for a value of the subject.
        if match and (found is None or (match.start(), -match.end()) < (found[0], -found[1])):
            found = (match.start(), match.end(), kind)
    if found is None:
        return None
    start, end, kind = found
    subject = _content(_words(lowered[:start]))
    value = _content(_words(_TIME_TAIL.sub("", lowered[end:])))
    while value and value[0] in _LEADING:
        value = value[1:]
    if not subject or not value:
        return None
    pronoun = all(w in _PRONOUNS for w in subject)
    if kind == "is" and "moved" in lowered[start:end] and pronoun:
        kind = "lives"  # "I moved to Munich" states where I live
    return Claim(frozenset(subject), kind, tuple(value), pronoun)


def restates(new: str, old: str) -> bool:
    """Whether ``new`` states what ``old`` states, in other words ("My door code is 4421" after "The user's
    door code is 4421"): the same subject, verb kind and value."""
    a, b = claim(new), claim(old)
    return a is not None and a == b


def supersedes(new: str, old: str) -> bool:
    """Whether ``new`` states a new value for what ``old`` states."""
    a, b = claim(new), claim(old)
    if a is None or b is None or a.subject != b.subject or a.kind != b.kind or a.value == b.value:
        return False
    if a.pronoun and a.kind == "is":  # "I am a teacher" / "I am vegetarian" are two facts; ages are one
        return bool(_NUMBER.search(" ".join(a.value))) and bool(_NUMBER.search(" ".join(b.value)))
    return _same_qualifier(a.value, b.value)


def _same_qualifier(new: tuple[str, ...], old: tuple[str, ...]) -> bool:
    """False when both values say which thing they are for and those things differ ("4 for the red bag")."""
    qa, qb = _QUALIFIER.search(" ".join(new)), _QUALIFIER.search(" ".join(old))
    if qa is None or qb is None:
        return True
    masked = [re.sub(r"\S*\d\S*", "#", q.group(1)) for q in (qa, qb)]
    return masked[0] == masked[1] or not (_NUMBER.search(" ".join(new)) and _NUMBER.search(" ".join(old)))


def candidate_query(new: str) -> str | None:
    """What to search for the memories ``new`` may supersede: its subject ("door code"), the whole text when
    the subject is a pronoun; None when it states nothing the rules can compare (no search needed)."""
    parsed = claim(new)
    if parsed is None:
        return None
    return new if parsed.pronoun else " ".join(sorted(parsed.subject))


def restated_among(new: str, candidates: Iterable[MemoryRecord]) -> MemoryRecord | None:
    """The first current one of ``candidates`` that ``new`` only restates (a duplicate in other words)."""
    return next((m for m in candidates if m.is_current() and restates(new, m.content)), None)


def superseded_among(new: str, candidates: Iterable[MemoryRecord]) -> list[MemoryRecord]:
    """The current ``candidates`` that ``new`` supersedes."""
    return [m for m in candidates if m.is_current() and m.content.strip() != new.strip() and supersedes(new, m.content)]
