"""The turn service: every front door of the gateway submits its turns here, and only here.

    task = turns.submit(Inbound("telegram", "42", "hello", person=person), then=reply_to_chat)
    outcome = await task            # TurnOutcome: the answer, or why there is none

- Order within a session, concurrency across sessions: a turn starts when the previous turn submitted for
  the same person and session has ended, whatever door each came through. A session costs nothing while
  it has no turn (no worker, no queue: a chain of tasks).
- The outcome goes back to whoever submitted: the task's result, and ``then`` (a reply to the chat, a
  job's run record) runs inside the same task, so the shutdown drain covers it as well.
- A client that goes away (an HTTP request cancelled) neither cancels nor loses the turn: callers await it
  through ``asyncio.shield`` (``outcome_of``).
- ``stop(person, session)`` cancels the session's running turn at its user's request (a chat's ``/stop``),
  ``stop_turn(task)`` a given one (an OpenAI client that left its stream): it ends as ``stopped_by_user``,
  its messages kept as for any cancelled turn.
- Shutdown: ``stop_accepting`` refuses new turns (``ShuttingDown``); ``drain(deadline)`` waits for every
  turn in flight up to the deadline, then cancels the rest, which end as ``cut_off`` (the agent keeps a
  cancelled turn's messages) and still get their ``then``, bounded by ``CUT_OFF_REPLY_SECONDS``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from picoora.gateway.channels.links import Inbound, ShuttingDown
from picoora.gateway.runtime.envelopes import OnOutcome, TurnOutcome

if TYPE_CHECKING:
    from picoora.agent import TurnResult
    from picoora.agent.events import EventSink

log = logging.getLogger("picoora.gateway")

RunTurn = Callable[[Inbound, "EventSink | None"], Awaitable["TurnResult"]]
Submit = Callable[..., "asyncio.Task[TurnOutcome]"]  # ``TurnService.submit``, as the services beside it get it
CUT_OFF_REPLY_SECONDS = 5.0  # what a cut-off turn may still spend telling its chat or recording its run
CUT_OFF = "the gateway shut down before this turn finished"
STOPPED_BY_USER = "stopped at the user's request"


class SessionBusy(Exception):
    """The session's turn is running on another node of the fleet (``duties.session_turn``); the message
    is the answer for the chat."""


class TurnService:
    def __init__(self, run: RunTurn):
        self._run = run
        self.accepting = True
        self._tasks: set[asyncio.Task[TurnOutcome]] = set()
        self._tails: dict[tuple[str, str], asyncio.Task[TurnOutcome]] = {}  # the last turn of each session
        self._running: dict[tuple[str, str], asyncio.Task[TurnOutcome]] = {}  # the turn each session runs now
        self._stopped: set[asyncio.Task[TurnOutcome]] = set()  # cancelled by ``stop``, not by the shutdown

    def submit(self, inbound: Inbound, *, on_event: EventSink | None = None,
               then: OnOutcome | None = None) -> asyncio.Task[TurnOutcome]:
        """Start ``inbound``'s turn after the session's earlier ones; raises ``ShuttingDown`` once stopping."""
        if not self.accepting:
            raise ShuttingDown("the gateway is shutting down and takes no new turns")
        key = (inbound.person_name, inbound.session)
        previous = self._tails.get(key)
        task = asyncio.get_running_loop().create_task(self._turn(key, inbound, previous, on_event, then),
                                                      name=f"turn {inbound.session}")
        self._tails[key] = task
        self._tasks.add(task)
        task.add_done_callback(lambda done: self._finished(key, done))
        return task

    async def _turn(self, key: tuple[str, str], inbound: Inbound, previous: asyncio.Task[TurnOutcome] | None,
                    on_event: EventSink | None, then: OnOutcome | None) -> TurnOutcome:
        current = asyncio.current_task()
        try:
            if previous is not None:
                await asyncio.wait({previous})  # its end, whatever it was, is ours to start on
            if current is not None:
                self._running[key] = current
            outcome = TurnOutcome.of(await self._run(inbound, on_event))
        except SessionBusy as exc:
            outcome = TurnOutcome("busy", error=str(exc))
        except asyncio.CancelledError:
            if current is not None and hasattr(current, "uncancel"):  # 3.11+: the cancel is handled here
                current.uncancel()
            if current in self._stopped:
                outcome = TurnOutcome("stopped_by_user", error=STOPPED_BY_USER)
            else:
                outcome = TurnOutcome("cut_off", error=CUT_OFF)
        except Exception as exc:  # a bug or a store failure outside the agent loop: this turn only
            log.error("a %s turn failed outside the agent loop", inbound.channel, exc_info=True)
            outcome = TurnOutcome("failed", error=f"the turn failed: {exc}")
        if self._running.get(key) is current:  # a /stop now is too late: the reply must not be cut
            del self._running[key]
        if then is not None:
            # A cut-off turn's reply is bounded: the gateway is stopping.
            timeout = CUT_OFF_REPLY_SECONDS if outcome.status == "cut_off" else None
            try:
                await asyncio.wait_for(then(inbound, outcome), timeout)
            except Exception:
                log.exception("recording or reporting the outcome of a %s turn of %s failed", inbound.channel,
                              inbound.session)
        return outcome

    def _finished(self, key: tuple[str, str], task: asyncio.Task[TurnOutcome]) -> None:
        self._tasks.discard(task)
        self._stopped.discard(task)
        if self._tails.get(key) is task:
            del self._tails[key]
        if self._running.get(key) is task:
            del self._running[key]

    def stop(self, person: str, session: str) -> bool:
        """Cancel the turn ``person``'s ``session`` is running now (the turns queued after it still run);
        False when it runs none."""
        task = self._running.get((person, session))
        return task is not None and self.stop_turn(task)

    def stop_turn(self, task: asyncio.Task[TurnOutcome]) -> bool:
        """Cancel ``task``, running or queued, as ``stop`` does (an OpenAI client that left its stream);
        False when it has ended."""
        if task.done() or task not in self._tasks:
            return False
        self._stopped.add(task)
        task.cancel()
        return True

    def stop_accepting(self) -> None:
        self.accepting = False

    async def drain(self, deadline_seconds: float) -> int:
        """Wait for the turns in flight up to ``deadline_seconds``, then cut off the rest; returns how many
        were cut off. Turns submitted while draining (a job firing, a subagent) are refused."""
        self.accepting = False
        pending = set(self._tasks)
        if not pending:
            return 0
        _, late = await asyncio.wait(pending, timeout=deadline_seconds)
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)
        return len(late)


async def outcome_of(task: asyncio.Task[TurnOutcome]) -> TurnOutcome:
    """The turn's outcome; the caller going away (cancelled) leaves the turn running."""
    return await asyncio.shield(task)
