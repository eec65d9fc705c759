"""Keyword evidence for recall: a tokenizer that keeps codes, numbers and names whole, and an incremental
inverted index that scores memories BM25-style.

The keyword score is not a rival ranking: ``ranking.py`` uses it as a bounded boost on top of cosine
similarity, and as the whole score only when no vector can be compared. So the score is normalised to
[0, 1]: the share of the query's (IDF-weighted) terms a memory contains, with BM25's term-frequency
saturation and length normalisation. Pure Python, no numpy.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator

# A token is a run of letters/digits, optionally joined by - _ . / : @ ' to more runs, so "ORA-00955",
# "A7-4421", "vpn.example.net", "3.14" and "o'brien" stay one token.
_TOKEN = re.compile(r"[^\W_]+(?:[-_./:@'][^\W_]+)*")
_PART = re.compile(r"[^\W_]+")
_CODE_MARKS = "-_./:@"  # joiners that make a token a code (not the apostrophe of "o'brien")

BM25_K1 = 1.2
BM25_B = 0.75

# Words that carry no identity: matching them says nothing about which memory is meant.
STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being below between
    both but by can cannot could did do does doing done down during each even ever every few for from further
    get gets got had has have having he her here hers herself him himself his how i i'd i'll i'm i've if in
    into is it it's its itself just let like me mine more most much must my myself no nor not now of off often
    on once one only or other our ours ourselves out over own please really same shall she should so some
    such than that that's the their theirs them themselves then there these they this those through to too
    under until up us use used very was we were what what's when where which while who whom whose why will
    with would yes yet you your yours yourself yourselves tell remember know
    """.split()
)


def _fold(text: str) -> str:
    # Case and accents do not identify anything: "Kraków" and "krakow" are the same word here.
    if text.isascii():  # most words: NFKD changes no ASCII character, so this is the same, 3x faster
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _terms(text: str) -> Iterator[tuple[str, bool]]:
    """(term, is_code) pairs; ``is_code`` when the word was written like a code, number or name."""
    for match in _TOKEN.finditer(text):
        raw = match.group().replace("\u2019", "'")
        if raw.endswith(("'s", "'S")):
            raw = raw[:-2]
        token = _fold(raw)
        if not token or token in STOPWORDS:
            continue
        # Capitals mark names and acronyms ("Kowalski", "MOB"); digits and joiners mark codes. Ordinary
        # lower-case words are not codes, so they never get the exact-match boost in ranking.
        # Two-letter capitals ("ID", "TV", "EU") are common words more often than names.
        is_code = (raw[0].isupper() and len(raw) > 2) or any(c.isdigit() or c in _CODE_MARKS for c in raw)
        yield token, is_code
        parts = _PART.findall(token)
        if len(parts) > 1:
            yield from ((p, is_code) for p in parts if len(p) > 1 and p not in STOPWORDS)


def tokenize(text: str) -> list[str]:
    """Index terms of ``text``: folded words, numbers and whole codes, plus the parts of each code.

    "ORA-00955 on A7-4421" gives ["ora-00955", "ora", "00955", "a7-4421", "a7", "4421"]: the whole code
    matches exactly, and a part ("00955") still finds it. Stopwords and a trailing possessive go.
    """
    return [term for term, _ in _terms(text)]


def code_terms(text: str) -> list[str]:
    """The terms of ``text`` written like codes, numbers or names (see ``_terms``)."""
    return [term for term, is_code in _terms(text) if is_code]


def idf(df: int, n_docs: int) -> float:
    """BM25's inverse document frequency, never negative (Lucene's variant)."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


class KeywordIndex:
    """An incremental inverted index over memories, keyed by memory id."""

    def __init__(self) -> None:
        self._postings: dict[str, dict[str, int]] = {}  # term -> {memory id: term frequency}
        self._terms: dict[str, tuple[str, ...]] = {}  # memory id -> its distinct terms (for removal)
        self._lengths: dict[str, int] = {}  # memory id -> number of terms
        self._total_length = 0

    def __len__(self) -> int:
        return len(self._lengths)

    def add(self, key: str, text: str) -> None:
        self.remove(key)
        counts = Counter(tokenize(text))
        for term, tf in counts.items():
            self._postings.setdefault(term, {})[key] = tf
        length = sum(counts.values())
        self._terms[key] = tuple(counts)
        self._lengths[key] = length
        self._total_length += length

    def remove(self, key: str) -> None:
        length = self._lengths.pop(key, None)
        if length is None:
            return
        self._total_length -= length
        for term in self._terms.pop(key):
            docs = self._postings[term]
            del docs[key]
            if not docs:
                del self._postings[term]

    def scores(
        self, terms: Iterable[str], *, among: Iterable[str] | None = None, length_weight: float = BM25_B
    ) -> dict[str, float]:
        """Evidence in [0, 1] for every memory holding one of the query ``terms`` (the others have 0).

        The evidence is the IDF-weighted share of the query's terms the memory holds, so rare names and
        codes count far more than words most memories use; 1.0 means all of them (at a typical length).
        ``among`` is the query's full term list when ``terms`` is only part of it: ``scores(code_terms(q),
        among=tokenize(q))`` is then the share of the whole query that matched as codes.
        ``length_weight`` is BM25's b: how much a long memory is discounted (0: not at all).
        """
        n_docs = len(self._lengths)
        terms = set(terms)
        if not n_docs or not terms:
            return {}
        avg_length = max(self._total_length / n_docs, 1.0)
        weight = {t: idf(len(self._postings.get(t, ())), n_docs) for t in terms.union(among or ())}
        total = sum(weight.values())
        evidence: dict[str, float] = {}
        for term in terms:
            for key, tf in self._postings.get(term, {}).items():
                norm = BM25_K1 * (1.0 - length_weight + length_weight * self._lengths[key] / avg_length)
                # tf (k1+1)/(tf+norm) is 1 for one occurrence at average length; more occurrences saturate.
                evidence[key] = evidence.get(key, 0.0) + weight[term] * tf * (BM25_K1 + 1.0) / (tf + norm)
        return {key: min(value / total, 1.0) for key, value in evidence.items()}

    def match(self, query: str) -> tuple[dict[str, float], dict[str, float]]:
        """(keyword_match, code_match) per memory id, the two keyword inputs of ``ranking``.

        keyword_match: BM25-style share of all the query's terms. code_match: the share of the whole query
        that matched as codes, numbers or names, with no discount for long memories (holding the exact
        code is what counts, however much else the memory says).
        """
        terms = tokenize(query)
        return self.scores(terms), self.scores(code_terms(query), among=terms, length_weight=0.0)
