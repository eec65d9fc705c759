"""How a document chunk is scored for a question, on the file backend: one number in [0, 1] from the
meaning (cosine of the bundled embedder's vectors) and the words (``keywords.KeywordIndex``: the BM25 share
of the question's terms, and the share matched as codes, numbers or names), and the floor below which a
chunk is not an answer at all.

Chunks are long (a hundred words) and questions short, so the cosine of a true answer sits lower than for
memories; the cosine is rescaled from [SIM_LOW, SIM_HIGH] to [0, 1] before it is mixed. An exact code or
name (``ORA-00955``) lifts a chunk by CODE_BONUS: a paraphrase-only embedder ranks it poorly.

A question that resembles the generic background questions (``anchors``: trivia, recipes, greetings) more
than ANCHOR_START costs every chunk ANCHOR_PENALTY times the excess: a document near such a question's topic
then needs stronger evidence than the topic's words to answer it ("Who was the first keeper?" against a
lighthouse's history). The numbers were calibrated by ``bench/docs_bench.py`` on the two development sets of
``tests/data/docs_quality`` (``dev`` and ``dev2``); the held-out sets were each measured once when written
(docs/architecture.md says which were searched for settings afterwards).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

# Frozen on dev and dev2 (68 questions, 34 unanswerable of which 14 near the documents' topics, 80-word chunks)
# by a grid over these, the chunk size and the floor: the best hit@5 that keeps >= 70 % of the unanswerable
# silent on both (no setting of these features kept 80 % silent without losing a third of the answers).
SIM_LOW, SIM_HIGH = 0.20, 0.70
VECTOR_WEIGHT = 0.7  # the rest is the keyword share
CODE_BONUS = 0.25
ANCHOR_START, ANCHOR_PENALTY = 0.30, 1.0
KEYWORD_ONLY_FLOOR = 0.5  # without vectors: at least half the question's weighted terms
MINILM_DOC_FLOOR = 0.20


def hybrid_scores(similarity: np.ndarray | None, keyword: np.ndarray, code: np.ndarray,
                  anchor_best: float | None = None) -> np.ndarray:
    """``anchor_best``: the question's best cosine against the background questions (None: unknown)."""
    import numpy as np

    if similarity is None:
        return np.clip(keyword + CODE_BONUS * code, 0.0, 1.0)
    meaning = np.clip((similarity - SIM_LOW) / (SIM_HIGH - SIM_LOW), 0.0, 1.0)
    generic = ANCHOR_PENALTY * max((anchor_best or 0.0) - ANCHOR_START, 0.0)
    return np.clip(VECTOR_WEIGHT * meaning + (1.0 - VECTOR_WEIGHT) * keyword + CODE_BONUS * code - generic,
                   0.0, 1.0)


def doc_floor(configured: float, with_vectors: bool) -> float:
    """The score a chunk needs to be returned: the configured one, else the calibrated one."""
    if configured > 0:
        return configured
    return MINILM_DOC_FLOOR if with_vectors else KEYWORD_ONLY_FLOOR
