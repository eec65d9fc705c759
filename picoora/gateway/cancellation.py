"""Cancellation that a library on the way swallowed.

A task's ``cancel()`` can come out of a library as something else: websockets' closing handshake turns it
into the close under way, and on Python 3.11 ``asyncio.wait_for`` can return the result it raced the
cancellation with. A loop that goes round again then never ends, and neither does the gateway's shutdown.
Loops that run until cancelled call ``stop_if_cancelled`` where such a library hands back control.
"""

from __future__ import annotations

import asyncio


def stop_if_cancelled(cause: BaseException | None = None) -> None:
    """Raise CancelledError when the current task has been cancelled (Python 3.11+ knows; before it a
    cancelled task raises as usual, so there is nothing to catch up on)."""
    task = asyncio.current_task()
    cancelling = getattr(task, "cancelling", None)
    if cancelling is not None and cancelling():
        raise asyncio.CancelledError() from cause
