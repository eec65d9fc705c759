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
   Memories are *ordered* by the cosine with a query from which part of the generic-question direction is
   removed (``ranking_query``, ``GENERIC_SHIFTS``): what is specific to the question decides, not how much a
   memory resembles questions in general. The floor and the push rule use the plain cosine.
3. **Small adjustments.** Importance (0..1) and recency (days since last access or creation) add at most
   ``MAX_ADJUSTMENT`` in total: they reorder near ties and can never override a clearer difference in relevance.

A memory is returned when its cosine reaches the floor (``similarity_floor`` of the embedder, or the
configured ``memory.min_similarity``), or, without a comparable vector, when ``keyword_match`` reaches
``KEYWORD_ONLY_MIN``, or in both cases when ``code_match`` reaches ``CODE_ADMIT`` (an exact code or name
is evidence enough, whatever its cosine). The reported score is the sum, clamped to [0, 1].

**Pushing is stricter than returning.** ``recall`` (the tool, ``memory search``) returns every match above;
what the agent pushes into a turn's context unasked must be about the message, so it also needs
``push_mask``: a cosine at least ``PushCalibration.min_similarity`` and at least ``anchor_margin`` above the
query's best cosine against ``data/background_queries.txt`` (greetings, trivia, coding help: things people
ask that no memory answers). A question a memory answers is closer to that memory than to any generic
question; "hi there" or "Who painted the Mona Lisa?" is closer to a generic question. The absolute floor
alone cannot separate them with MiniLM-L6 (true pairs and off-topic best matches overlap around 0.25-0.35);
the anchors are the query's own yardstick. Calibrations are per embedding model and per backend
(bench/precision_bench.py prints the evidence).

Every function here only uses arithmetic and ``& | ^``, so the file backend passes numpy arrays to the same functions
it documents for single values.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from picoora.store.keywords import code_terms, tokenize

if TYPE_CHECKING:
    from picoora.store.base import MemoryRecord

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
_SPACES = re.compile(r"\s+")


def normalise_text(content: str) -> str:
    """The form two memories must share to be the same text: case, spacing and final punctuation ignored."""
    return _SPACES.sub(" ", content.casefold()).strip().rstrip(".!;").rstrip()


@dataclass(frozen=True)
class PushCalibration:
    """When a recalled memory is pushed into a turn's context unasked (see ``should_push``)."""

    min_similarity: float  # cosine floor for pushing (returning has the lower similarity floor)
    anchor_margin: float  # how far the cosine must be above the query's best background-question cosine
    calibrated_on: str  # where the numbers come from; "uncalibrated" until measured


# File backend, the bundled MiniLM (and Ollama's all-minilm, the same model): bench/precision_bench.py on
# tests/data (140 queries over 126 facts, 60 off-topic questions): silence 0.883, recall@5 0.957, recall@1 0.857
# (ordered with GENERIC_SHIFTS); with 2,000 look-alike memories added 0.833 / 0.879 / 0.771 (README). Margins
# -0.08..-0.04 trade silence against recall; the two folds of `--grid` agree within 0.03. On the held-out set
# (tests/data/heldout, written after the ranking was frozen, never tuned on: 96 queries over 93 facts, 30
# off-topic) the same rule gives recall@5 0.906, recall@1 0.771, silence 0.767 (`--set tests/data/heldout`).
MINILM_PUSH = PushCalibration(min_similarity=0.2, anchor_margin=-0.06,
                              calibrated_on="tests/data, bench/precision_bench.py")
# Any other model: the anchors alone, with no slack (a memory must beat every generic question).
GENERIC_PUSH = PushCalibration(min_similarity=GENERIC_SIMILARITY_FLOOR, anchor_margin=0.0, calibrated_on="uncalibrated")
# The Oracle backend: its in-database ONNX model (ALL_MINILM_L12_V2 by default) scores differently from the
# bundled L6, so it has its own numbers, and its background questions are embedded by that same model
# (PICO_BACKGROUND_QUESTIONS, store/oracle/background.py). Not yet measured (no live database here): the floor
# is the floor for returning a match (GENERIC_SIMILARITY_FLOOR, the Go version's, set for L12) and the margin
# 0.0, i.e. a memory is pushed only when it is closer to the query than every generic question. The rule is
# relative to the model's own background vectors, so the margin should carry across models better than an
# absolute floor. To calibrate: bench/oracle_calibrate.py against a live database (the PICO_TEST_ORACLE_*
# settings of the live tier, or the configured one) picks (floor, margin) on tests/data exactly as
# precision_bench.py does for the file backend, confirms it once on tests/data/heldout and prints the
# PushCalibration line to paste here. `--check-with-bundled-model` (the fake database, L6 as its model)
# reproduces the file backend's plain-cosine rows on both sets (recall@5 / recall@1 / silence: tuning 0.957 /
# 0.836 / 0.883, held out 0.885 / 0.760 / 0.767), so the Oracle path's scoring is the file one's; what only a
# live run can give is L12's cosines. Without background vectors (filling failed) the floor alone decides.
ORACLE_PUSH = {
    "ALL_MINILM_L12_V2": PushCalibration(min_similarity=GENERIC_SIMILARITY_FLOOR, anchor_margin=0.0,
                                         calibrated_on="uncalibrated: returning floor, margin 0"),
}
ORACLE_GENERIC_PUSH = PushCalibration(min_similarity=0.4, anchor_margin=0.0, calibrated_on="uncalibrated")
KEYWORD_PUSH_MIN = 0.6  # without a comparable vector, only a strong keyword match is pushed

FILE_PUSH = {"all-MiniLM-L6-v2-int8": MINILM_PUSH, "ollama:all-minilm": MINILM_PUSH}


def file_push_calibration(model_id: str | None) -> PushCalibration:
    return FILE_PUSH.get(model_id or "", GENERIC_PUSH)


def oracle_push_calibration(model: str) -> PushCalibration:
    return ORACLE_PUSH.get(model.upper(), ORACLE_GENERIC_PUSH)


# How much of the background questions' mean vector is taken out of a query before memories are ordered by
# it, per embedding model. MiniLM puts every question near one direction ("what/which/do I"), so a memory
# that resembles questions in general ("I read roughly 25 books a year") outranks the one that answers
# ("I'm writing a cookbook" for "What book am I working on?"). Ordering by q - shift * centroid ranks by what
# is specific to the query; the cosine (floor, pushing, the similarity shown) stays the plain one. For MiniLM
# on tests/data recall@1 goes 0.836 -> 0.857 (both folds gain, flat from 0.4 to 1.0; with 2,000 look-alikes
# 0.779 -> 0.771): bench/precision_bench.py --shift. Other models: not measured, so no shift.
GENERIC_SHIFTS = {"all-MiniLM-L6-v2-int8": 0.5, "ollama:all-minilm": 0.5}


def generic_shift(model_id: str | None) -> float:
    return GENERIC_SHIFTS.get(model_id or "", 0.0)


def ranking_query(query_vector, centroid, shift: float):
    """The query vector memories are ordered by: ``shift`` of the background centroid removed."""
    return query_vector - shift * centroid


def push_mask(similarity, comparable, keyword_match, code_match, anchor_best, calibration: PushCalibration):
    """Whether returned matches are also pushed into the context unasked (scalars, or numpy arrays of them).

    ``comparable``: whether ``similarity`` is a cosine of comparable vectors (else keywords decide).
    ``anchor_best``: the query's best cosine against the background questions, None when unknown (the
    floor alone decides then). An exact code or name (``CODE_ADMIT``) is evidence enough, as for returning.
    """
    anchor = float("-inf") if anchor_best is None else anchor_best
    by_meaning = (similarity >= calibration.min_similarity) & (similarity - anchor >= calibration.anchor_margin)
    by_words = keyword_match >= KEYWORD_PUSH_MIN
    not_comparable = comparable ^ True  # logical not for a bool and for a numpy bool array alike
    return (code_match >= CODE_ADMIT) | (comparable & by_meaning) | (not_comparable & by_words)


def should_push(similarity: float | None, keyword_match: float, code_match: float, anchor_best: float | None,
                calibration: PushCalibration) -> bool:
    """``push_mask`` for one match; ``similarity`` None when not comparable."""
    comparable = similarity is not None
    return bool(push_mask(similarity if comparable else 0.0, comparable, keyword_match, code_match, anchor_best,
                          calibration))


def is_same_fact(content: str, other: str, similarity: float | None, dedup_similarity: float) -> bool:
    """Whether a new memory repeats a stored one: the same normalised text, or vectors at least
    ``dedup_similarity`` close *and* the same codes, numbers and names. "parallel A fact 1" and
    "parallel A fact 2", or an old and a new door code, are different facts however close their vectors: both
    are kept, the newer ranking a little higher by recency."""
    if normalise_text(content) == normalise_text(other):
        return True
    if similarity is None or similarity < dedup_similarity:
        return False
    # A code, number or name of one that the other does not mention at all makes them different facts
    # (sentence-initial capitals count as names, so "Door code 4711" and "Office door code 4711" still agree).
    return not (set(code_terms(content)) - set(tokenize(other)) or set(code_terms(other)) - set(tokenize(content)))


def closest_same_fact(content: str, sims, record_at: Callable[[int], MemoryRecord],
                      dedup_similarity: float) -> MemoryRecord | None:
    """The closest of the rows at least ``dedup_similarity`` close (``sims``: a numpy array, by row) whose
    record ``content`` repeats (``is_same_fact``); None when none does."""
    import numpy as np

    close = np.flatnonzero(sims >= dedup_similarity)
    for row in close[np.argsort(-sims[close])]:
        record = record_at(int(row))
        if is_same_fact(content, record.content, float(sims[row]), dedup_similarity):
            return record
    return None


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
