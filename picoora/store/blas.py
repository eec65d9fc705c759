"""One BLAS thread for the store's matrix products.

OpenBLAS threads wait on each other: when the cores are busy (a model answering, a bulk import's
workers, other processes) a two-thread product stalls. We measured 10 ms queries turn into 150-450 ms,
and a 0.2 ms dedup product into 4 ms during an import; one thread loses little on these sizes, and the
100,000-row recall product is memory-bound either way (16 ms with one thread or two).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_controller = None
_lock = threading.Lock()


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block with numpy's BLAS limited to one thread (threadpoolctl; nests)."""
    global _controller
    with _lock:
        if _controller is None:
            from threadpoolctl import ThreadpoolController

            _controller = ThreadpoolController()
    with _controller.limit(limits=1, user_api="blas"):
        yield
