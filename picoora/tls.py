"""The process's one TLS context for short-lived httpx clients.

httpx builds a context per client by default, loading the CA bundle each time: ~90 ms (hundreds on a busy
machine) on the event loop, for every web fetch, search, attachment download and transcription.
"""

from __future__ import annotations

import asyncio
import functools
import ssl


@functools.lru_cache(maxsize=1)
def _tls_context() -> ssl.SSLContext:
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


async def tls_context() -> ssl.SSLContext:
    """Made once, in a worker thread (loading the bundle blocks)."""
    return await asyncio.to_thread(_tls_context)
