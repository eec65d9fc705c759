"""The agent loop: one user message in, model calls and tool calls until an answer, everything persisted.

A turn, in order: record its input (the transcript gets each message as it is produced); ask its
conversation source for the tools, the history and the system prompt; then repeatedly repair the message
list, call the model, run the tool calls it asks for (concurrently, results kept in call order); stop on an
answer or a limit; record the final answer and save the turn; emit ``FinalAnswer``; compact the session if
it grew too long.

Each part has its module: whose conversation it is (the session's, or the one an OpenAI client sends) is
the ``ConversationSource``'s (``source.py``, ``session_source.py``, ``client_source.py``), created once in
``Agent._source``; what the turn produced and what is saved where is the ``TurnRecord``'s (``record.py``,
the save policies in one place); a round of tool calls is ``tool_round.py``'s; the window's arithmetic
``window.py``'s; events reach their consumer through ``emitter.py``.

Context overflow: the first ``ContextOverflowError`` of a turn (the provider's classification, never
a guess from the error text), or a request over the window by our own estimate, asks the source to make
room: a session folds its older conversation into the summary, keeping only as many recent messages as
fit, then the same call is made again with the rebuilt system prompt. The turn's own messages are not part
of the session yet, so they stay in the request untouched. A second overflow, a failed summary, or a
conversation the client keeps ends the turn with an error that says what to do.

Stop reasons (``TurnResult.stop_reason`` and ``FinalAnswer.stop_reason``): ``answer``,
``max_iterations``, ``time_limit``, ``error``, and those of ``picoora.agent.stops``
(``repeated_tool_call``, ``oscillation``, ``no_progress``, ``token_budget``); the trace keeps the answer
that says why (``stop_detail``). Every turn ends with exactly one ``FinalAnswer`` event; on an error an
``ErrorEvent`` with the same text comes just before it (a renderer shows one of the two).

Endings and what is saved (``record.py``, the four policies): an answer or a limit's answer saves the
turn as it is; a turn that failed (the model, the store, a bug) or was cancelled (Ctrl+C, /stop, a shutdown)
is kept with every message marked ``cancelled`` and a closing ``FAILED_MARK`` or ``CANCELLED_MARK``, and
later turns never send it to the model (``context.without_cancelled``): the user sends it again if they
still want an answer; a message too large for the window stays out of the session (the transcript keeps it).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
import weakref
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from picoora.agent.client_source import ClientSource
from picoora.agent.compaction import CompactionError, compact_after_answer
from picoora.agent.context import build_messages, join_user_runs
from picoora.agent.emitter import Emitter
from picoora.agent.events import (
    ErrorEvent,
    EventSink,
    FinalAnswer,
    NoticeEvent,
    ReasoningEvent,
    TokenEvent,
    TurnStarted,
)
from picoora.agent.notices import first_showing
from picoora.agent.record import Ending, TurnRecord
from picoora.agent.repair import distinct_ids, repair_history
from picoora.agent.session_source import SessionSource
from picoora.agent.source import AgentParts, ContextFull, ConversationSource, ToolOffer
from picoora.agent.stops import Stop, StopConditions
from picoora.agent.tokens import estimate_message_tokens, estimate_messages_tokens
from picoora.agent.tool_round import ToolRounds
from picoora.agent.trace import TraceRecorder
from picoora.agent.window import context_full, overflow_room, prompt_budget, too_large
from picoora.config import AgentDefaults
from picoora.llm.base import LLM, ContextOverflowError, DeltaKind, LLMError, LLMResponse, OnDelta, Usage
from picoora.llm.pool import ModelChoice, ModelPool
from picoora.messages import Image, Message, ToolCall
from picoora.store.aio import AsyncStore
from picoora.store.base import StoreError
from picoora.store.protocol import Store
from picoora.tools.base import ToolContext, ToolSettings
from picoora.tools.tool_outputs import KEPT_MARK

if TYPE_CHECKING:
    from picoora.agent.conversation import ClientConversation
    from picoora.tools.registry import ToolRegistry

log = logging.getLogger(__name__)

# Asked before a tool call with its name and arguments: None to run it, else why it may not run.
Approve = Callable[[str, dict[str, Any]], Awaitable[str | None]]


@dataclass
class TurnResult:
    text: str
    stop_reason: str  # see the module's docstring; also "tool_calls" and "refused" for a client's conversation
    iterations: int  # model calls made
    tool_calls: int  # tool calls executed
    turn_id: str = ""
    usage: Usage = field(default_factory=Usage)  # tokens of the turn's model calls (estimated where not reported)
    model: str = ""  # provider/model that answered
    calls: list[ToolCall] = field(default_factory=list)  # a client's conversation: the calls handed back to it
    param: str = ""  # stop_reason "refused": the request parameter the model cannot honour
    context_full: bool = False  # stop_reason "error": the request does not fit the model's context window


@dataclass
class _SessionRuntime:
    """What belongs to one session in this process: its model and the notices it has been shown."""

    model: ModelChoice
    notices_shown: set[str] = field(default_factory=set)


class Agent:
    """Runs turns for any number of sessions concurrently; turns of one session run one at a time.

        agent = Agent(store=store, llm=llm, tools=registry, settings=config.agents.defaults, workspace=ws)
        result = await agent.run_turn("cli:default", "hello", on_event=print)

    ``llm`` is one ready client; an assistant passes ``models`` (a ``ModelPool``) instead, and each
    session may then use its own model (``set_session_model``). ``on_event`` may be a plain function or
    a coroutine function; it is called from a task of its own, so a sink that raises, is slow or has gone
    away never stops the turn (a raising sink is dropped, with a log line). Keep one Agent per process:
    the per-session ordering holds among the turns of one Agent. Call ``aclose`` at the end: it waits
    for the compactions still running.
    """

    def __init__(
        self,
        *,
        store: Store,
        tools: ToolRegistry,
        settings: AgentDefaults,
        workspace: Path,
        llm: LLM | None = None,
        models: ModelPool | None = None,
        secrets: Iterable[str] = (),
        tool_settings: ToolSettings | dict[str, Any] | None = None,
        astore: AsyncStore | None = None,
    ):
        if (llm is None) == (models is None):
            raise ValueError("give the Agent either llm or models")
        self.store = store
        self.astore = astore or AsyncStore(store)
        self.models = models or ModelPool.fixed(llm)  # type: ignore[arg-type]
        self.tools = tools
        self.settings = settings
        self.workspace = workspace
        self.secrets = list(secrets)  # the registry scrubs these from every tool result
        self.tool_settings = ToolSettings.coerce(tool_settings)
        # One lock per session with a turn running or waiting; unused locks are collected.
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self._sessions: dict[str, _SessionRuntime] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self._running = 0  # turns between their start and their answer, which ``aclose`` waits for
        self._no_turns = asyncio.Event()  # set while no turn runs
        self._no_turns.set()
        self.messenger: Any = None  # set by the front door (gateway or terminal) for the messaging tools

    # -- sessions ------------------------------------------------------------------------------------

    def _runtime(self, session_key: str) -> _SessionRuntime:
        return self._sessions.get(session_key) or self._start_session(session_key, self.models.default)

    def _start_session(self, session_key: str, choice: ModelChoice) -> _SessionRuntime:
        """A session seen for the first time in this process, on ``choice``."""
        self.models.select(choice)  # raises before the session is known when the client cannot be made
        runtime = self._sessions[session_key] = _SessionRuntime(choice)
        return runtime

    def has_runtime(self, session_key: str) -> bool:
        return session_key in self._sessions

    def session_model(self, session_key: str) -> ModelChoice:
        return self._runtime(session_key).model

    async def sees_images(self, session_key: str) -> bool:
        """The session's model takes pictures (asked of its provider: Ollama's /api/show, else the config)."""
        async with self.models.lease(self.session_model(session_key)) as llm:
            return await llm.sees_images()

    def set_session_model(self, session_key: str, choice: ModelChoice) -> None:
        """Use ``choice`` for this session's next turns; a turn already running finishes on its model."""
        runtime = self._sessions.get(session_key)
        if runtime is None:
            self._start_session(session_key, choice)
            return
        if choice == runtime.model:
            return
        self.models.select(choice)  # raises before anything changes when the client cannot be made
        old, runtime.model = runtime.model, choice
        runtime.notices_shown.clear()  # the new model may have its own limitations to tell about
        self.models.deselect(old)

    # -- turns ---------------------------------------------------------------------------------------

    async def run_turn(self, session_key: str, text: str, on_event: EventSink | None = None, *,
                       conversation: ClientConversation | None = None, approve: Approve | None = None,
                       images: Sequence[Image] = ()) -> TurnResult:
        """Run one turn; returns once its answer is recorded and its events are delivered. With
        ``conversation`` the client keeps the history (``picoora.agent.conversation``) and ``text`` is
        only what the turn is logged as. ``approve`` is asked before each tool call (``ToolContext.approve``).
        ``images`` go with the user's message (their bytes to the model this turn only).

        Compaction of a session that grew too long runs after that, in the background but still
        holding the session's lock, so the answer never waits for a summary and the session's next
        turn never starts before it."""
        lock = self._locks.get(session_key)
        if lock is None:
            lock = self._locks[session_key] = asyncio.Lock()
        emit = Emitter(session_key, uuid.uuid4().hex[:12], on_event)
        source = self._source(session_key, text, images, conversation)
        self._running += 1
        self._no_turns.clear()
        try:
            result = await self._locked_turn(session_key, source, lock, emit, approve)
        except BaseException:  # cancelled (Ctrl+C, /stop, a shutdown) or a bug: nobody drains the sink now
            emit.abandon()
            raise
        finally:
            self._running -= 1
            if not self._running:
                self._no_turns.set()
        await emit.drain()
        return result

    def _source(self, session_key: str, text: str, images: Sequence[Image],
                conversation: ClientConversation | None) -> ConversationSource:
        """Whose conversation the turn is: the session's, or the one the client sent (the only place that asks)."""
        parts = AgentParts(self.store, self.astore, self.tools, self.settings, self.workspace)
        if conversation is None:
            return SessionSource(parts, session_key, text, images)
        return ClientSource(parts, session_key, conversation)

    async def _locked_turn(self, session_key: str, source: ConversationSource, lock: asyncio.Lock, emit: Emitter,
                           approve: Approve | None) -> TurnResult:
        await lock.acquire()
        release_later = False
        try:
            runtime = self._runtime(session_key)
            async with self.models.lease(source.model or runtime.model) as llm:
                turn = _Turn(self, emit, llm, runtime, source)
                turn.ctx.approve = approve
                result = await turn.run()
            # After an error a summary would fail too.
            if result.stop_reason != "error" and source.needs_compaction(turn.record.produced):
                self._in_background(self._compact_then_release(session_key, runtime.model, emit, lock))
                release_later = True
        finally:
            if not release_later:
                lock.release()
        return result

    async def _compact_then_release(self, session_key: str, choice: ModelChoice, emit: Emitter,
                                    lock: asyncio.Lock) -> None:
        """After the answer: fold older messages into the summary; the outcome is a ``CompactionEvent``."""
        try:
            async with self.models.lease(choice) as llm:
                event = await compact_after_answer(self.astore, llm, session_key, self.settings)
                if event is not None:
                    await emit(event)
        finally:
            lock.release()
        await emit.drain()

    def _in_background(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def wait_idle(self) -> None:
        """Wait for the running turns and the background work (compactions) to finish."""
        while self._running or self._background:
            await self._no_turns.wait()
            await asyncio.gather(*list(self._background), return_exceptions=True)

    async def aclose(self) -> None:
        """Waits for the turns still running and their compactions (a gateway cancels what is past its
        shutdown deadline first)."""
        await self.wait_idle()


class _TimeLimitReached(Exception):
    pass


class _Stopped(Exception):
    """A stop condition (``picoora.agent.stops``) ended the turn before a model call."""

    def __init__(self, stop: Stop):
        super().__init__(stop.text)
        self.stop = stop


class _MessageTooLarge(Exception):
    """The user's message alone does not fit the model's context window."""


class _Turn:
    """One turn, inside the session's lock: the loop of the module's docstring."""

    def __init__(self, agent: Agent, emit: Emitter, llm: LLM, runtime: _SessionRuntime, source: ConversationSource):
        self.key = emit.session_key
        self.emit = emit
        self.llm = llm
        self.runtime = runtime
        self.source = source
        self.store = agent.astore
        self.settings = agent.settings
        self.record = TurnRecord(agent.astore, self.key, saved=source.saved, secrets=agent.secrets)
        self.offer = ToolOffer([])
        self.usage = Usage()
        self.iterations = 0  # model calls made
        self.overflow_compacted = False  # a context overflow already made room this turn
        self.deadline = 0.0
        self.stops = StopConditions(agent.settings.max_turn_tokens)
        self.trace = TraceRecorder(emit.turn_id, self.key, llm, agent.secrets)
        self.ctx = ToolContext(
            workspace=agent.workspace,
            store=agent.store,
            session_key=self.key,
            turn_id=emit.turn_id,
            restrict_to_workspace=agent.settings.restrict_to_workspace,
            secrets=list(agent.secrets),
            settings=agent.tool_settings,
            messenger=agent.messenger,
        )
        self.tool_rounds = ToolRounds(agent.tools, self.ctx, self.record, self.stops, self.trace, emit)

    @property
    def model_label(self) -> str:
        """The model answering, as the events, the prompt and the notices state name it: provider/model."""
        return f"{self.llm.provider}/{self.llm.model}"

    async def run(self) -> TurnResult:
        self.deadline = asyncio.get_running_loop().time() + self.settings.turn_timeout_seconds
        await self.emit(TurnStarted(self.key, model=self.model_label))
        refused = self.llm.unsupported(self.source.options)
        if refused is not None:  # before anything is recorded: the request is the client's to fix
            return await self._refuse(*refused)
        try:
            result = await self._start()
        except _MessageTooLarge as exc:
            result = await self._fail(str(exc), Ending.NOT_SENT, context_full=True)
        except ContextFull as exc:
            result = await self._fail(str(exc), context_full=True)
        except LLMError as exc:
            result = await self._fail(str(exc))
        except StoreError as exc:
            result = await self._fail(f"Could not read or save the conversation: {exc}")
        except (asyncio.CancelledError, KeyboardInterrupt):  # Ctrl+C, a shutdown: kept, marked, not sent again
            await self._keep_interrupted(Ending.CANCELLED)
            raise
        except BaseException:  # a bug: leave the store consistent, then propagate
            await self._keep_interrupted(Ending.FAILED)
            raise
        if result.stop_reason == "error":
            await self.record.save_trace(self.trace.finish("error", result.text))
        else:  # a limit or a stop condition: the trace says why, in the words the user got
            detail = None if result.stop_reason == "answer" else result.text
            await self.record.save_trace(self.trace.finish(result.stop_reason, None, detail))
        return result

    async def _start(self) -> TurnResult:
        await self.record.add(self.source.opening())
        self.offer = await self.source.offer_tools(self._announce)
        self.trace.recalled(await self.source.load(self.offer, self.model_label))
        if any(m.role == "tool" and KEPT_MARK in m.content for m in self.source.history):
            self.offer.offer_on_demand()
        refusal = too_large(self.source.system, self.record.produced, self.settings)
        if refusal is not None:  # Ollama would cut it silently from the front: the instructions would go
            raise _MessageTooLarge(refusal)
        return await self._loop()

    async def _loop(self) -> TurnResult:
        on_delta = self._on_delta if self.emit.sink is not None else None
        while True:
            try:
                response = await self._call_model(on_delta)
            except _TimeLimitReached:
                return await self._stop("time_limit", self._time_limit_text())
            except _Stopped as stopped:
                return await self._stop(stopped.stop.reason, stopped.stop.text)
            await self._notice_once(response.notice)
            calls = distinct_ids(response.tool_calls)
            if not calls:
                return await self._answer(response)
            await self.record.add([self._assistant(response, calls)])
            if self.offer.hands_back:  # the client runs its tools and sends the results in its next request
                await self.emit(FinalAnswer(self.key, response.content, stop_reason="tool_calls", calls=calls))
                return self._result(response.content, "tool_calls", calls=calls)
            if self.tool_rounds.count >= self.settings.max_tool_iterations:
                return await self._stop(
                    "max_iterations",
                    f"I stopped after {self.tool_rounds.count} rounds of tool calls without reaching an answer "
                    "(agents.defaults.max_tool_iterations). Ask me to continue, or raise the limit.",
                    unrun="Not run: the turn reached its limit of tool-call rounds.",
                )
            stop = self.stops.before_round(calls)
            if stop is not None:
                return await self._stop(stop.reason, stop.text, unrun=stop.unrun)
            try:
                await self.tool_rounds.run(calls, self._bounded)
            except _TimeLimitReached:
                return await self._stop(
                    "time_limit", self._time_limit_text(), unrun="Interrupted: the turn hit its time limit."
                )
            stop = self.stops.after_round()
            if stop is not None:
                return await self._stop(stop.reason, stop.text)
            if any(KEPT_MARK in m.content for m in self.record.produced[-len(calls):]):
                self.offer.offer_on_demand()

    async def _call_model(self, on_delta: OnDelta | None) -> LLMResponse:
        """One model call; the turn's first context overflow makes room and the call is made again. A request
        that would not fit the window by our own estimate counts as an overflow before it is sent, since
        Ollama never reports one."""
        request = join_user_runs(repair_history(build_messages(self.source.system, self.source.history,
                                                               self.record.produced)))
        request_tokens = estimate_messages_tokens(request)
        if request_tokens > prompt_budget(self.settings):
            await self._make_room()
            return await self._call_model(on_delta)
        stop = self.stops.over_budget(self.usage.prompt_tokens + self.usage.completion_tokens, request_tokens)
        if stop is not None:
            raise _Stopped(stop)
        self.iterations += 1
        self.record.forget_shown()
        try:
            response = await self._bounded(self.llm.chat(request, self.offer.schemas or None, on_delta=on_delta,
                                                         options=self.source.options))
        except ContextOverflowError as exc:
            await self._make_room(exc)
            return await self._call_model(on_delta)
        self.record.forget_shown()  # whole now: the response itself is what gets recorded
        self.trace.model_call(response.usage)
        self._count_usage(request, response)
        return response

    def _count_usage(self, request: list[Message], response: LLMResponse) -> None:
        """The turn's token counts: the provider's, or our estimate where it reports none (some servers)."""
        reported = response.usage
        self.usage.prompt_tokens += reported.prompt_tokens or estimate_messages_tokens(request)
        self.usage.completion_tokens += reported.completion_tokens or estimate_message_tokens(
            self._assistant(response, response.tool_calls))

    async def _make_room(self, overflow: ContextOverflowError | None = None) -> None:
        """Once per turn: the source folds the older conversation into the summary, keeping what fits."""
        if self.overflow_compacted:  # so the call after this is the turn's only retry
            raise ContextFull(context_full("even after the older conversation was summarised",
                                           self.settings)) from overflow
        self.overflow_compacted = True
        room = overflow_room(self.settings, self.record.produced)
        try:
            folded = await self._bounded(self.source.make_room(self.llm, room))
        except CompactionError as exc:
            why = f"and summarising the older conversation failed ({exc}); it is kept as it was"
            raise ContextFull(context_full(why, self.settings)) from exc
        if not folded:
            raise ContextFull(context_full("and there is no older conversation left to summarise", self.settings))
        await self._announce(f"The older conversation ({folded} messages) was summarised to fit the model's "
                             "context window; the transcript keeps every message.")

    async def _bounded(self, awaitable: Any) -> Any:
        remaining = self.deadline - asyncio.get_running_loop().time()
        try:
            return await asyncio.wait_for(awaitable, max(remaining, 0.0))
        except asyncio.TimeoutError:
            if asyncio.get_running_loop().time() >= self.deadline:
                raise _TimeLimitReached from None
            raise

    async def _on_delta(self, kind: DeltaKind, text: str) -> None:
        self.trace.first_token()
        if kind == "token":
            self.record.shown(text)
        await self.emit(TokenEvent(self.key, text) if kind == "token" else ReasoningEvent(self.key, text))

    async def _announce(self, text: str) -> None:
        await self.emit(NoticeEvent(self.key, text))

    async def _notice_once(self, text: str | None) -> None:
        if text and await first_showing(self.store, self.key, self.model_label, text, self.runtime.notices_shown):
            await self._announce(text)

    @staticmethod
    def _assistant(response: LLMResponse, calls: list[ToolCall]) -> Message:
        reasoning = response.reasoning or None
        return Message(role="assistant", content=response.content, tool_calls=calls, reasoning=reasoning)

    def _time_limit_text(self) -> str:
        return (
            f"I stopped because this turn ran past its time limit of {self.settings.turn_timeout_seconds:g} "
            "seconds (agents.defaults.turn_timeout_seconds)."
        )

    # -- how a turn ends -------------------------------------------------------------------------------

    async def _answer(self, response: LLMResponse) -> TurnResult:
        text = response.content
        if not text.strip():
            text = "The model returned an empty answer."
            if response.reasoning.strip():
                text = (
                    "The model spent its whole answer on reasoning and gave no reply; try again, "
                    "or raise agents.defaults.max_tokens."
                )
        return await self._finish(Message(role="assistant", content=text, reasoning=response.reasoning or None),
                                  "answer")

    async def _stop(self, reason: str, text: str, unrun: str = "") -> TurnResult:
        """A limit ends the turn: a final message says why (calls it left open are answered ``unrun``)."""
        return await self._finish(Message(role="assistant", content=text), reason, unrun)

    async def _finish(self, final: Message, reason: str, unrun: str = "") -> TurnResult:
        await self.record.answered(final, unrun)
        await self.emit(FinalAnswer(self.key, final.content, stop_reason=reason))
        return self._result(final.content, reason)

    async def _refuse(self, param: str, why: str) -> TurnResult:
        text = f"{self.model_label} cannot honour '{param}': {why}."
        await self.emit(FinalAnswer(self.key, text, stop_reason="refused"))
        return self._result(text, "refused", param=param)

    async def _fail(self, message: str, ending: Ending = Ending.FAILED, *, context_full: bool = False) -> TurnResult:
        try:
            await self.record.unanswered(ending)
        except StoreError as exc:
            message += f"\n(The conversation could not be saved either: {exc})"
        await self.emit(ErrorEvent(self.key, message))
        await self.emit(FinalAnswer(self.key, message, stop_reason="error"))
        return self._result(message, "error", context_full=context_full)

    async def _keep_interrupted(self, ending: Ending) -> None:
        """An exception ends the turn (a cancellation, a bug): kept as ``ending`` says. The exception matters
        more than a store failure here, which is only logged."""
        try:
            await self.record.unanswered(ending)
        except StoreError as exc:
            log.warning("could not save the interrupted turn of %s: %s", self.key, exc)
        await self.record.save_trace(self.trace.finish("cancelled", None))

    def _result(self, text: str, reason: str, **extra: Any) -> TurnResult:
        return TurnResult(text, reason, self.iterations, self.tool_rounds.executed, self.emit.turn_id, usage=self.usage,
                          model=self.model_label, **extra)
