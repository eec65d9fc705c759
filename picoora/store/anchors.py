"""The background questions a query is measured against before its memories are pushed into a turn.

``data/background_queries.txt`` lists things people ask an assistant that no personal memory answers
(greetings, trivia, coding help, recipes). ``ranking.push_mask`` compares a memory's cosine with the
query's best cosine against these. Their vectors for the bundled MiniLM ship precomputed in
``data/background_minilm.npy`` (embedding 120 texts would cost a one-shot turn about a second); for any
other embedder they are embedded once per process, on the first automatic recall.
Regenerate the bundled file after changing the texts or the model: ``bench/precision_bench.py --write-anchors``.
"""

from __future__ import annotations

import logging
import threading
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

from picoora.store.embedder import MINILM_MODEL_ID, Embedder, EmbedderUnavailable

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

DATA = Path(__file__).parent / "data"
TEXTS_PATH = DATA / "background_queries.txt"
MINILM_VECTORS_PATH = DATA / "background_minilm.npy"


def background_texts() -> list[str]:
    return [line.strip() for line in TEXTS_PATH.read_text(encoding="utf-8").splitlines() if line.strip()]


_of_embedder: weakref.WeakKeyDictionary[Embedder, Anchors] = weakref.WeakKeyDictionary()
_of_embedder_lock = threading.Lock()


def anchors_for(embedder: Embedder) -> Anchors:
    """The process's one ``Anchors`` of ``embedder``: every store embedding with it (the owner's, each
    person's) reads the same background vectors rather than a copy each (184 KB for MiniLM).
    It holds the embedder weakly (a strong reference would keep the key alive); an embedder that cannot be
    referenced weakly gets anchors of its own."""
    with _of_embedder_lock:
        try:
            anchors = _of_embedder.get(embedder)
            if anchors is None:
                anchors = _of_embedder[embedder] = Anchors(weakref.proxy(embedder))
        except TypeError:
            return Anchors(embedder)
        return anchors


class Anchors:
    """The background vectors of one embedder, loaded or embedded on first use."""

    def __init__(self, embedder: Embedder):
        self._embedder = embedder
        self._lock = threading.Lock()
        self._vectors: np.ndarray | None = None
        self._centroid: np.ndarray | None = None

    def best(self, query_vector: np.ndarray) -> float | None:
        """The query's highest cosine against the background questions; None when they cannot be had."""
        vectors = self._load()
        return None if vectors is None else float((vectors @ query_vector).max())

    def centroid(self) -> np.ndarray | None:
        """The mean background vector: the direction every question shares (``ranking.ranking_query``)."""
        vectors = self._load()
        if vectors is None:
            return None
        with self._lock:
            if self._centroid is None:
                self._centroid = vectors.mean(axis=0)
            return self._centroid

    def _load(self) -> np.ndarray | None:
        import numpy as np

        with self._lock:
            if self._vectors is None:
                texts = background_texts()
                if self._embedder.model_id == MINILM_MODEL_ID and MINILM_VECTORS_PATH.is_file():
                    vectors = np.load(MINILM_VECTORS_PATH)
                    if vectors.shape == (len(texts), self._embedder.dim):
                        self._vectors = vectors.astype(np.float32, copy=False)
                        return self._vectors
                    log.warning("%s does not match %s: embedding the background questions",
                                MINILM_VECTORS_PATH, TEXTS_PATH)
                try:
                    self._vectors = self._embedder.embed(texts)
                except EmbedderUnavailable:
                    return None
            return self._vectors
