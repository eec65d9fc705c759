"""A tiny deterministic embedder for tests: bag of words hashed into 384 dimensions, L2-normalised.

Texts sharing words are similar; the same words in another case or order are identical. ``salt`` makes a
different "model" (another model_id and unrelated vectors), to test re-embedding after a model change.
"""

from __future__ import annotations

import re
import zlib

import numpy as np


class HashEmbedder:
    dim = 384
    similarity_floor = 0.1

    def __init__(self, salt: str = ""):
        self.salt = salt
        self.model_id = f"test-hash-384{'-' + salt if salt else ''}"
        self.calls = 0  # how many embed calls were made, to check that nothing embeds needlessly

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                digest = zlib.crc32(f"{self.salt}:{word}".encode())
                out[row, digest % self.dim] += 1.0 if digest & 0x8000_0000 else -1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)
