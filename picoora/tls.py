"""The process's one TLS context for short-lived httpx clients.

httpx builds a context per client by default, loading the CA bundle each time: ~90 ms (hundreds on a busy
machine) on the event loop, for every web fetch, search, attachment download and transcription.
"""

from __future__ import annotations

import asyncio
import ssl

_context: ssl.SSLContext | None = None


def _make() -> ssl.SSLContext:
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


async def tls_context() -> ssl.SSLContext:
    """Made once, in a worker thread (loading the bundle blocks); after that, no thread hop per client."""
    global _context
    if _context is None:
        made = await asyncio.to_thread(_make)
        _context = _context or made  # two first callers at once: both get the one kept
    return _context
