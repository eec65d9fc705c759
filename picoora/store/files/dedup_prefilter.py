"""A cheap first pass for duplicate checks against a large matrix of memory vectors, that never misses one.

A new memory is a duplicate candidate only for rows at least ``dedup_similarity`` (0.95) close. For unit
vectors that is a squared distance of at most ``2 - 2 * similarity``, and projecting both onto a few
orthonormal directions can only shorten a distance: a row whose *projected* distance is already larger
cannot be close, so only the few rows that pass are compared in full. With 64 directions a pass costs a
sixth of the full product; the directions are the principal ones of the bundled background questions
(for MiniLM's 384 dimensions: on the look-alike store 5 rows pass per query, against 1,336 true pairs in
2,126 memories), seeded random ones for another embedder (exact too, only less selective). This is what
keeps an import's rate from falling as the store grows: the full product per record grew with the store.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

DIRECTIONS = 64
SLACK = 1e-4  # float32 rounding in the projected distances: a little more passes, never less


@functools.lru_cache(maxsize=4)
def basis(dim: int) -> np.ndarray:
    """(DIRECTIONS, dim) orthonormal rows, float32."""
    import numpy as np

    from picoora.store.anchors import MINILM_VECTORS_PATH

    if dim <= DIRECTIONS:
        return np.eye(dim, dtype=np.float32)
    background = np.load(MINILM_VECTORS_PATH)
    if background.shape[1] == dim and background.shape[0] > DIRECTIONS:
        _, _, directions = np.linalg.svd(background - background.mean(axis=0), full_matrices=False)
        return np.ascontiguousarray(directions[:DIRECTIONS], dtype=np.float32)
    random = np.random.default_rng(384).standard_normal((dim, DIRECTIONS))
    return np.ascontiguousarray(np.linalg.qr(random)[0].T, dtype=np.float32)


class Projection:
    """The rows of a matrix (read chunk by chunk through ``read``) projected onto ``basis``, normalised first;
    rows without a vector never pass."""

    def __init__(self, rows: int, dim: int, read: Callable[[int, int], np.ndarray], has_vector: np.ndarray,
                 chunk: int = 4096):
        import numpy as np

        directions = basis(dim)
        self.points = np.zeros((rows, directions.shape[0]), dtype=np.float32)
        for start in range(0, rows, chunk):
            block = read(start, min(rows, start + chunk))
            norms = np.linalg.norm(block, axis=1, keepdims=True)
            np.divide(block, norms, out=block, where=norms > 0)
            np.matmul(block, directions.T, out=self.points[start : start + len(block)])
        self.squared = np.einsum("ij,ij->i", self.points, self.points)
        self.squared[~has_vector] = np.inf

    def near(self, queries: np.ndarray, min_similarity: float) -> list[np.ndarray]:
        """For each of ``queries`` (k, dim), every row whose cosine may reach ``min_similarity`` (a superset)."""
        import numpy as np

        directions = basis(queries.shape[1])
        unit = queries / np.maximum(np.linalg.norm(queries, axis=1, keepdims=True), 1e-12)
        projected = unit @ directions.T
        limit = 2.0 - 2.0 * min_similarity + SLACK
        distances = self.squared[:, None] + np.einsum("ij,ij->i", projected, projected)[None, :]
        distances -= 2.0 * (self.points @ projected.T)
        return [np.flatnonzero(distances[:, column] <= limit) for column in range(len(queries))]
