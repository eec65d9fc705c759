"""Running a turn from the terminal: Ctrl+C cancels the turn, not the program, and prints one line.

Cancelling ends the turn cleanly: the agent keeps what the turn produced (complete tool pairs only), the
tool's child processes are killed, and no traceback or "exception was never retrieved" reaches the user.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Awaitable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from picoora.agent import TurnResult
    from picoora.assistant import Assistant
    from picoora.cli.waiting import WaitingIndicator

T = TypeVar("T")


async def run_terminal_turn(assistant: Assistant, text: str, session: str, stream: bool) -> TurnResult | None:
    """One turn rendered on stdout/stderr with the waiting spinner; None when Ctrl+C cancelled it."""
    from picoora.cli.render import TurnRenderer
    from picoora.cli.waiting import WaitingIndicator

    renderer = WaitingIndicator(TurnRenderer(sys.stdout, sys.stderr, stream=stream), sys.stderr)
    try:
        return await run_interruptible(assistant.ask(text, session_key=session, on_event=renderer, learn=True),
                                       renderer)
    finally:
        renderer.close()


async def run_interruptible(turn: Awaitable[T], renderer: WaitingIndicator) -> T | None:
    """Await ``turn``; SIGINT cancels it and returns None (after ``renderer.cancelled()``)."""
    task = asyncio.ensure_future(turn)
    interrupted = False

    def on_interrupt() -> None:
        nonlocal interrupted
        interrupted = True
        task.cancel()

    loop = asyncio.get_running_loop()
    previous = signal.getsignal(signal.SIGINT)
    loop.add_signal_handler(signal.SIGINT, on_interrupt)
    try:
        return await task
    except asyncio.CancelledError:
        if not interrupted:  # the caller itself is being cancelled, not just this turn
            raise
        renderer.cancelled()
        return None
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        signal.signal(signal.SIGINT, previous)
