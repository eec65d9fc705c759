"""How recall ranks memories: one set of rules for every backend (pure Python; no numpy needed).

A memory's score for a query is built in three steps:

1. **Base relevance.** The cosine similarity between the query's and the memory's vectors when both come
   from the same embedder. Without a comparable vector (no embedder, embedder down, or a vector from another
   model) it is ``KEYWORD_ONLY_SCALE * keyword_match``: a memory holding every query term ranks like a
   typical paraphrase match (the median cosine of true pairs in the recall test is about 0.48).
2. **Code boost.** ``+ CODE_BOOST * code_match``, where ``code_match`` is the (IDF-weighted) share of the
   query made of codes, numbers and names ("ORA-01408", "A7-4421", "Kowalski") that the memory contains
   (``KeywordIndex.match``). A bare code as the query can move a memory by the full boost; a name inside a
   longer question only by its share. Ordinary words never boost: a fused keyword ranking lets incidental
   words ("billing", "travel") outvote meaning, which cut recall@5 on paraphrased questions from 0.97 to
   0.48 in the issue, and to 0.42 on our recall test (reciprocal-rank fusion, k=60).
3. **Small adjustments.** Importance (0..1) and recency (days since last access or creation) add at most
   ``MAX_ADJUSTMENT`` in total: they reorder near ties and can never override a clearer difference in relevance.

A memory is returned when its cosine reaches the floor (``similarity_floor`` of the embedder, or the
configured ``memory.min_similarity``), or, without a comparable vector, when ``keyword_match`` reaches
``KEYWORD_ONLY_MIN``, or in both cases when ``code_match`` reaches ``CODE_ADMIT`` (an exact code or name
is evidence enough, whatever its cosine). The reported score is the sum, clamped to [0, 1].

Every function here only uses arithmetic, so the file backend passes numpy arrays to the same functions
it documents for single values.
"""

from __future__ import annotations

from datetime import datetime

# Floors: minimum cosine for a match, calibrated per embedder on tests/data/recall_pairs.jsonl (see
# bench/recall_bench.py --calibrate). For all-MiniLM-L6-v2 the true question/fact pairs have cosine
# p5 = 0.25, median 0.48, while the best match of a question the store cannot answer has median 0.26:
# the two overlap, so the floor is a trade-off; 0.2 keeps 98 % of true pairs.
MINILM_SIMILARITY_FLOOR = 0.2
GENERIC_SIMILARITY_FLOOR = 0.3  # unknown embedding models: the Go version's floor (set for MiniLM-L12)

# Calibrated on the recall test: the hardest code query there (one ORA- error among four) needs 0.15 to
# rank first, and the first paraphrased question a name match would mislead needs 0.46.
CODE_BOOST = 0.25  # added to relevance when the query is all codes/names and the memory holds them all
CODE_ADMIT = 0.5  # code_match from which a memory is returned even below the similarity floor
KEYWORD_ONLY_SCALE = 0.5  # relevance of a full keyword match when no vector can be compared
KEYWORD_ONLY_MIN = 0.3  # keyword_match a memory without a comparable vector needs to be returned

IMPORTANCE_WEIGHT = 0.02  # importance 0..1 moves the score by -0.01..+0.01 around the default 0.5
RECENCY_WEIGHT = 0.01  # a memory touched now gets +0.01, one untouched for RECENCY_DAYS +0.005
RECENCY_DAYS = 10.0  # the Go version's decay: 1 / (1 + 0.1 * days)
MAX_ADJUSTMENT = IMPORTANCE_WEIGHT + RECENCY_WEIGHT  # the largest reordering importance+recency can cause

SECONDS_PER_DAY = 86400.0


def keyword_only_relevance(keyword_match):
    """Base relevance of a memory that has no vector comparable with the query's."""
    return KEYWORD_ONLY_SCALE * keyword_match


def relevance(base, code_match):
    """Base relevance (cosine, or ``keyword_only_relevance``) plus the bounded boost for exact codes."""
    return base + CODE_BOOST * code_match


def recency(age_days):
    """1 for a memory touched just now, falling to 0.5 after RECENCY_DAYS (age of either sign)."""
    return 1.0 / (1.0 + abs(age_days) / RECENCY_DAYS)


def adjustment(importance, age_days):
    """The importance + recency nudge, at most MAX_ADJUSTMENT apart between any two memories."""
    return IMPORTANCE_WEIGHT * (importance - 0.5) + RECENCY_WEIGHT * recency(age_days)


def last_touched(created_at: datetime | None, accessed_at: datetime | None) -> datetime | None:
    """The time recency counts from: the last access, or creation when never accessed."""
    if created_at is None or accessed_at is None:
        return accessed_at or created_at
    return max(created_at, accessed_at, key=datetime.timestamp)


def age_in_days(touched: datetime | None, now: datetime) -> float | None:
    """Days between ``touched`` and ``now`` (naive datetimes are local time); None when unknown."""
    return None if touched is None else (now.timestamp() - touched.timestamp()) / SECONDS_PER_DAY


def is_match(similarity: float | None, keyword_match: float, code_match: float, floor: float) -> bool:
    """Whether a memory is returned at all (see the module docstring)."""
    if code_match >= CODE_ADMIT:
        return True
    if similarity is None:
        return keyword_match >= KEYWORD_ONLY_MIN
    return similarity >= floor


def clamp_score(value: float) -> float:
    return min(1.0, max(0.0, value))


def final_score(
    similarity: float | None,
    keyword_match: float,
    code_match: float,
    importance: float,
    created_at: datetime | None,
    accessed_at: datetime | None,
    now: datetime,
) -> float:
    """The score recall reports, in [0, 1].

    ``similarity``: cosine of query and memory vectors from the same embedder, None when not comparable.
    ``keyword_match`` / ``code_match``: shares of the query's terms / codes-numbers-names the memory holds,
    in [0, 1] (``KeywordIndex.scores``). Memories with an unknown age get no recency bonus.
    """
    base = keyword_only_relevance(keyword_match) if similarity is None else similarity
    age = age_in_days(last_touched(created_at, accessed_at), now)
    nudge = IMPORTANCE_WEIGHT * (importance - 0.5) if age is None else adjustment(importance, age)
    return clamp_score(relevance(base, code_match) + nudge)
