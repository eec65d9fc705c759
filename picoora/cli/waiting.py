"""A spinner on the terminal while a turn waits for its model: "⠙ waiting for qwen3:latest… 7s".

A local model on a CPU can think for many seconds before its first token; without a sign of life that
looks like a hang. The indicator sits between the turn's events and the renderer: it runs from the
start of the turn, and again after each batch of tool calls, until the model's first token, reasoning
or tool call (or the end of the turn). It draws on stderr only when stderr is a terminal, and erases
its line before anything else is written there.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import IO, TYPE_CHECKING

from picoora.agent.events import Event, ToolCallFinished, ToolCallStarted, TurnStarted

if TYPE_CHECKING:
    from picoora.cli.render import TurnRenderer

FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
TICK_SECONDS = 0.1
ERASE = "\r\x1b[K"


class WaitingIndicator:
    """Wraps a ``TurnRenderer`` (same calls); call ``close`` when the turn is over."""

    def __init__(self, renderer: TurnRenderer, err: IO[str]):
        self.renderer = renderer
        self.err = err
        self.enabled = err.isatty()
        self._model = "the model"
        self._open_calls = 0
        self._since = 0.0
        self._task: asyncio.Task[None] | None = None
        self._drawn = False

    def __call__(self, event: Event) -> None:
        self._erase()
        waiting = self._task is not None
        if isinstance(event, TurnStarted):
            self._model = event.model.partition("/")[2] or event.model or self._model
            waiting = True
        elif isinstance(event, ToolCallStarted):
            self._open_calls += 1
            waiting = False
        elif isinstance(event, ToolCallFinished):
            self._open_calls = max(0, self._open_calls - 1)
            waiting = self._open_calls == 0  # the results go back to the model now
        elif event.type in ("token", "reasoning", "final_answer", "error"):
            waiting = False
        self.renderer(event)
        if waiting:
            self._start()
        else:
            self._stop()

    def cancelled(self) -> None:
        self.close()
        self.renderer.cancelled()

    def close(self) -> None:
        self._stop()
        self._erase()

    def _start(self) -> None:
        if not self.enabled or self._task is not None:
            return
        self._since = time.monotonic()
        self._task = asyncio.get_running_loop().create_task(self._spin())

    def _stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _spin(self) -> None:
        frame = 0
        with contextlib.suppress(asyncio.CancelledError):
            while True:
                seconds = int(time.monotonic() - self._since)
                self.err.write(f"{ERASE}{FRAMES[frame % len(FRAMES)]} waiting for {self._model}… {seconds}s")
                self.err.flush()
                self._drawn = True
                frame += 1
                await asyncio.sleep(TICK_SECONDS)

    def _erase(self) -> None:
        if self._drawn:
            self.err.write(ERASE)
            self.err.flush()
            self._drawn = False
