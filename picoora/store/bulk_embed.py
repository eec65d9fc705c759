"""Embedding many memories at once (``memory import``, ``memory reindex``): every core, large batches.

Texts are cut into chunks of ``CHUNK`` and yielded in order as each is done, so the caller can store
every chunk durably before the next (an interrupted run keeps what it finished and a rerun skips it).
For the bundled MiniLM with enough texts, the chunks go to one worker process per core, each running
the model file in onnxruntime on one thread: about three times the numpy encoder's throughput per core,
and processes scale on a shared 2-core machine where BLAS threads wait on each other. Any other
embedder (Ollama, tests) embeds the chunks itself, one after another.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import TYPE_CHECKING

from picoora.store.embedder import MINILM_MODEL_ID, Embedder, EmbedderUnavailable, MiniLMEmbedder

if TYPE_CHECKING:
    import numpy as np

CHUNK = 256  # texts per work item and per durable write
PARALLEL_MIN = 2 * CHUNK  # fewer texts than this are not worth starting processes for
Progress = Callable[[int, int], None]  # (texts done, texts in all)

_worker: MiniLMEmbedder | None = None


def _start_worker() -> None:
    global _worker
    _worker = MiniLMEmbedder(runtime="onnxruntime")


def _embed_in_worker(texts: list[str]) -> np.ndarray:
    assert _worker is not None, "the pool's initializer (_start_worker) makes it"
    return _worker.embed(texts)


def _parallel_ok(embedder: Embedder, count: int, least: int) -> bool:
    if embedder.model_id != MINILM_MODEL_ID or count < least:
        return False
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def item_size(texts: int, workers: int) -> int:
    """Texts per work item: at most CHUNK, in a whole number of rounds of the workers so that they finish
    together (three items of 256 on two workers leave one idle for a third of the run)."""
    rounds = -(-texts // (workers * CHUNK))
    return max(-(-texts // (workers * rounds)), 1)


def _cut(texts: list[str], size: int) -> list[tuple[int, list[str]]]:
    return [(start, texts[start : start + size]) for start in range(0, len(texts), size)]


def embed_chunks(
    embedder: Embedder, texts: list[str], *, progress: Progress | None = None, workers: int | None = None,
    parallel_min: int = PARALLEL_MIN,
) -> Iterator[tuple[int, np.ndarray]]:
    """(offset of the chunk in ``texts``, its vectors), chunk by chunk in order. Raises EmbedderUnavailable.
    ``parallel_min``: from how many texts the workers are worth starting (fewer for long texts: documents')."""
    done = 0
    if not _parallel_ok(embedder, len(texts), parallel_min):
        chunks = _cut(texts, CHUNK)
        for start, chunk in chunks:
            vectors = embedder.embed(chunk)
            done += len(chunk)
            if progress:
                progress(done, len(texts))
            yield start, vectors
        return
    embedder.embed(["check the model before starting workers"])  # pinned-hash check, clear errors here
    import multiprocessing

    count = workers or os.cpu_count() or 1
    chunks = _cut(texts, item_size(len(texts), count))
    # spawn, not fork: the parent holds locks and threads (the store, BLAS) a forked child would inherit.
    pool = ProcessPoolExecutor(count, mp_context=multiprocessing.get_context("spawn"), initializer=_start_worker)
    try:
        for (start, chunk), vectors in zip(chunks, pool.map(_embed_in_worker, [c for _, c in chunks]), strict=True):
            done += len(chunk)
            if progress:
                progress(done, len(texts))
            yield start, vectors
    except EmbedderUnavailable:
        raise
    except Exception as exc:  # a worker died (out of memory, killed): the caller keeps what it stored
        raise EmbedderUnavailable(f"bulk embedding stopped: {exc.__class__.__name__}: {exc}") from None
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # an early stop waits only for the chunks already running
