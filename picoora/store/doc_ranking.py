"""How a document chunk is scored for a question, on the file backend: one number in [0, 1] from the
meaning (cosine of the bundled embedder's vectors) and the words (``keywords.KeywordIndex``: the BM25 share
of the question's terms, and the share matched as codes, numbers or names), and the floor below which a
chunk is not an answer at all.

Chunks are long (a hundred words) and questions short, so the cosine of a true answer sits lower than for
memories; the cosine is rescaled from [SIM_LOW, SIM_HIGH] to [0, 1] before it is mixed. An exact code or
name (``ORA-00955``) lifts a chunk by CODE_BONUS: a paraphrase-only embedder ranks it poorly.
The numbers are calibrated by ``bench/docs_bench.py --calibrate`` on the development half of
``tests/data/docs_quality`` (the held-out half only ever reports them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

# Frozen on dev (38 questions, 20 unanswerable of which 8 near the documents' topics) by a grid over these
# and the floor, keeping >= 80 % of the unanswerable silent: hit@5 0.89, hit@1 0.82 there.
SIM_LOW, SIM_HIGH = 0.10, 0.55
VECTOR_WEIGHT = 0.5  # the rest is the keyword share
CODE_BONUS = 0.25
KEYWORD_ONLY_FLOOR = 0.5  # without vectors: at least half the question's weighted terms
MINILM_DOC_FLOOR = 0.32


def hybrid_scores(similarity: np.ndarray | None, keyword: np.ndarray, code: np.ndarray) -> np.ndarray:
    import numpy as np

    if similarity is None:
        return np.clip(keyword + CODE_BONUS * code, 0.0, 1.0)
    meaning = np.clip((similarity - SIM_LOW) / (SIM_HIGH - SIM_LOW), 0.0, 1.0)
    return np.clip(VECTOR_WEIGHT * meaning + (1.0 - VECTOR_WEIGHT) * keyword + CODE_BONUS * code, 0.0, 1.0)


def doc_floor(configured: float, with_vectors: bool) -> float:
    """The score a chunk needs to be returned: the configured one, else the calibrated one."""
    if configured > 0:
        return configured
    return MINILM_DOC_FLOOR if with_vectors else KEYWORD_ONLY_FLOOR
