"""The agent loop: one user message in, model calls and tool calls until an answer, everything persisted.

A turn, in order: log the user message to the transcript; build the context; then repeatedly repair
the message list, call the model, run the tool calls it asks for (concurrently, results kept in call
order); stop on an answer or a limit; write the final answer; append the turn's messages to the
session; emit ``FinalAnswer``; compact the session if it grew too long.

Context overflow: the first ``ContextOverflowError`` of a turn (the provider's classification, never
a guess from the error text) folds the older stored conversation into the session summary, keeping
only as many recent messages as fit, then the same call is made again with the rebuilt system prompt.
The turn's own messages are not part of the session yet, so they stay in the request untouched. A
second overflow, or a failed summary, ends the turn with an error that says what to do.

Stop reasons (``TurnResult.stop_reason`` and ``FinalAnswer.stop_reason``): ``answer``,
``max_iterations``, ``time_limit``, ``error``, and those of ``picoora.agent.stops``
(``repeated_tool_call``, ``oscillation``, ``no_progress``, ``token_budget``); the trace keeps the answer
that says why (``stop_detail``). Every turn ends with exactly one ``FinalAnswer`` event; on an error an
``ErrorEvent`` with the same text comes just before it (a renderer shows one of the two).

Persistence: the transcript gets each message as it is produced; the session gets the turn's
well-formed messages at the end, or on an error or cancellation the user message and the complete
call/result pairs. Calls left unanswered by a limit get an explicit "not run" result, so what is
stored is always valid for every provider. A cancelled turn (Ctrl+C, a shutdown) is kept with every
message marked ``cancelled`` and a closing ``CANCELLED_MARK`` message (the transcript's earlier entries
are never rewritten, so the marker is what marks them there); later turns never send it to the model
(``context.without_cancelled``): the user sends it again if they still want an answer. A failed turn's
user message stays unmarked and is sent with the next one (``join_user_runs``).
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import logging
import time
import uuid
import weakref
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from picoora.agent.compaction import CompactionError, compact, needs_compaction
from picoora.agent.context import (
    ContextInputs,
    build_client_system_prompt,
    build_messages,
    build_system_prompt,
    gather_inputs,
    join_user_runs,
)
from picoora.agent.events import (
    CompactionEvent,
    ErrorEvent,
    Event,
    EventSink,
    FinalAnswer,
    NoticeEvent,
    ReasoningEvent,
    TokenEvent,
    ToolCallFinished,
    ToolCallStarted,
    TurnStarted,
)
from picoora.agent.repair import complete_pairs, interrupted_result, repair_history
from picoora.agent.stops import Stop, StopConditions
from picoora.agent.tokens import estimate_message_tokens, estimate_messages_tokens, estimate_tokens
from picoora.agent.trace import TraceRecorder
from picoora.config import AgentDefaults
from picoora.llm.base import (
    DEFAULT_OPTIONS,
    LLM,
    RAW_ARGUMENTS_KEY,
    ContextOverflowError,
    DeltaKind,
    LLMError,
    LLMResponse,
    OnDelta,
    Usage,
)
from picoora.llm.pool import ModelChoice, ModelPool
from picoora.messages import Image, Message, ToolCall
from picoora.store.aio import AsyncStore
from picoora.store.base import StoreError
from picoora.store.protocol import Store
from picoora.tools.base import ToolContext, ToolResult, ToolSettings
from picoora.tools.tool_outputs import KEPT_MARK

if TYPE_CHECKING:
    from picoora.agent.conversation import ClientConversation
    from picoora.tools.registry import ToolRegistry

log = logging.getLogger(__name__)

# Asked before a tool call with its name and arguments: None to run it, else why it may not run.
Approve = Callable[[str, dict[str, Any]], Awaitable[str | None]]

RAW_PREVIEW_CHARS = 200
# After an overflow, the stored history kept verbatim plus this turn may fill this share of the window
# (the rest is for the system prompt, the summary and the answer).
OVERFLOW_KEPT_SHARE = 0.5
DRAIN_SECONDS = 10.0  # how long a finished turn waits for a slow event consumer before dropping it
CUT_OFF_MARK = " [the answer was cut off here]"
CANCELLED_MARK = "[the turn was cancelled; the message above was not answered]"
NOTICES_STATE = "notices_shown:"  # state key prefix: the notices a session saw on its model, across processes


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
        emit = _Emitter(session_key, uuid.uuid4().hex[:12], on_event)
        self._running += 1
        self._no_turns.clear()
        try:
            result = await self._locked_turn(session_key, text, lock, emit, conversation, approve, list(images))
        except BaseException:  # cancelled (Ctrl+C, /stop, a shutdown) or a bug: nobody drains the sink now
            emit.abandon()
            raise
        finally:
            self._running -= 1
            if not self._running:
                self._no_turns.set()
        await emit.drain()
        return result

    async def _locked_turn(self, session_key: str, text: str, lock: asyncio.Lock, emit: _Emitter,
                           conversation: ClientConversation | None, approve: Approve | None,
                           images: list[Image]) -> TurnResult:
        await lock.acquire()
        release_later = False
        try:
            runtime = self._runtime(session_key)
            choice = conversation.model if conversation is not None and conversation.model else runtime.model
            async with self.models.lease(choice) as llm:
                turn = _Turn(self, session_key, emit, llm, runtime, conversation)
                turn.ctx.approve = approve
                result = await turn.run(text, images)
            if result.stop_reason != "error" and turn.needs_compaction():  # after an error a summary fails too
                self._in_background(self._compact_then_release(turn, lock))
                release_later = True
        finally:
            if not release_later:
                lock.release()
        return result

    async def _compact_then_release(self, turn: _Turn, lock: asyncio.Lock) -> None:
        try:
            async with self.models.lease(turn.runtime.model) as llm:
                turn.llm = llm
                await turn.compact()
        finally:
            lock.release()
        await turn.emit.drain()

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


class _Emitter:
    """Stamps a turn's events (turn id, sequence number) and hands them to the sink from its own task.

    The turn never waits for the sink: events go into a queue, and a delivery task calls the sink in
    order. A sink that raises is dropped for the rest of the turn (the turn and its answer are unharmed);
    ``drain`` waits until what was emitted has been delivered, and drops a sink that stays far behind."""

    def __init__(self, session_key: str, turn_id: str, sink: EventSink | None):
        self.session_key = session_key
        self.turn_id = turn_id
        self.sink = sink
        self._seq = 0
        self._queue: asyncio.Queue[Event] | None = None
        self._task: asyncio.Task[None] | None = None

    async def __call__(self, event: Event) -> None:
        self._seq += 1
        event.session_key, event.turn_id, event.seq = self.session_key, self.turn_id, self._seq
        if self.sink is None:
            return
        if self._queue is None:
            self._queue = asyncio.Queue()
            self._task = asyncio.get_running_loop().create_task(self._deliver(self._queue))
        self._queue.put_nowait(event)

    async def _deliver(self, queue: asyncio.Queue[Event]) -> None:
        while True:
            event = await queue.get()
            try:
                if self.sink is not None:
                    result = self.sink(event)
                    if inspect.isawaitable(result):
                        await result
            except Exception:  # the consumer's problem (a closed connection, a bug): not the turn's
                log.warning("an event consumer of %s failed and was detached", self.session_key, exc_info=True)
                self.sink = None
            finally:
                queue.task_done()

    def abandon(self) -> None:
        """Stop delivering (the turn ended without an answer to wait for)."""
        if self._task is not None:
            self._task.cancel()
        self._task = self._queue = None

    async def drain(self) -> None:
        """Wait until what was emitted is delivered; a sink still behind after DRAIN_SECONDS is dropped."""
        if self._queue is None or self._task is None:
            return
        try:
            await asyncio.wait_for(self._queue.join(), DRAIN_SECONDS)
        except asyncio.TimeoutError:
            log.warning("an event consumer of %s fell %s s behind and was detached", self.session_key, DRAIN_SECONDS)
            self.sink = None
        self._task.cancel()  # idle now; a later event (the compaction's) starts a new delivery task
        self._task = self._queue = None


def distinct_ids(calls: list[ToolCall]) -> list[ToolCall]:
    """The calls of one answer, a repeated id renamed (``id~2``) so every call runs and gets its own result:
    a result is matched to its call by id, so two calls sharing one would leave one of them unanswered."""
    seen: set[str] = set()
    distinct = []
    for call in calls:
        new_id, number = call.id, 1
        while new_id in seen:
            number += 1
            new_id = f"{call.id}~{number}"
        seen.add(new_id)
        distinct.append(call if new_id == call.id else replace(call, id=new_id))
    return distinct


class _TimeLimitReached(Exception):
    pass


class _Stopped(Exception):
    """A stop condition (``picoora.agent.stops``) ended the turn before a model call."""

    def __init__(self, stop: Stop):
        super().__init__(stop.text)
        self.stop = stop


class _MessageTooLarge(Exception):
    """The user's message alone does not fit the model's context window."""


class _ContextFull(Exception):
    """The request does not fit the model's context window and compaction could not make it fit."""


class _Turn:
    """The state of one turn; lives inside the session lock."""

    def __init__(self, agent: Agent, session_key: str, emit: _Emitter, llm: LLM, runtime: _SessionRuntime,
                 conversation: ClientConversation | None = None):
        self.agent = agent
        self.key = session_key
        self.conversation = conversation
        self.options = conversation.options if conversation is not None else DEFAULT_OPTIONS
        self.usage = Usage()
        self.emit = emit
        self.llm = llm
        self.runtime = runtime
        self.store = agent.astore
        self.settings = agent.settings
        self.produced: list[Message] = []  # this turn's messages, in the transcript already
        self.history: list[Message] = []
        self.summary = ""
        self.inputs: ContextInputs | None = None
        self.system = ""  # the system prompt; rebuilt only when the summary changes
        self.schemas: list[dict[str, Any]] = []
        self.overflow_compacted = False  # a context overflow already compacted the session this turn
        self.open_calls: list[ToolCall] = []  # the batch being executed
        self.finished: dict[str, Message] = {}  # results of the open batch that have returned
        self.stops = StopConditions(agent.settings.max_turn_tokens)
        self.offers_kept_outputs = False  # read_tool_output is among the offered tools
        self.streamed: list[str] = []  # answer text of the model call in progress, as the user saw it
        self.iterations = 0
        self.tool_rounds = 0
        self.executed = 0
        self.ctx = ToolContext(
            workspace=agent.workspace,
            store=agent.store,
            session_key=session_key,
            turn_id=emit.turn_id,
            restrict_to_workspace=agent.settings.restrict_to_workspace,
            secrets=list(agent.secrets),
            settings=agent.tool_settings,
            messenger=agent.messenger,
        )
        self.deadline = 0.0
        self.saved = False  # the session got this turn's messages
        self.trace = TraceRecorder(emit.turn_id, session_key, llm, agent.secrets)

    @property
    def model_label(self) -> str:
        """The model answering, as the events, the prompt and the notices state name it: provider/model."""
        return f"{self.llm.provider}/{self.llm.model}"

    async def run(self, text: str, images: list[Image]) -> TurnResult:
        self.deadline = asyncio.get_running_loop().time() + self.settings.turn_timeout_seconds
        await self.emit(TurnStarted(self.key, model=self.model_label))
        conversation = self.conversation
        refused = self.llm.unsupported(self.options)
        if refused is not None:  # before anything is recorded: the request is the client's to fix
            return await self._refuse(*refused)
        try:
            await self._record(conversation.new if conversation else [Message(role="user", content=text,
                                                                              images=images)])
            self.schemas = await self._offered_tools()
            query = conversation.query if conversation else text
            inputs = await self.store.run(gather_inputs, self.agent.store, self.key, query, self.settings,
                                          with_session=conversation is None)
            self.trace.recalled(inputs.recall)
            self._use_context(inputs)
            if any(m.role == "tool" and KEPT_MARK in m.content for m in self.history):
                self._offer_kept_outputs()
            self._check_message_fits()
            result = await self._loop()
        except _MessageTooLarge as exc:
            self.saved = True  # the session stays as it was: later turns must not carry the message either
            result = await self._fail(str(exc))
        except (LLMError, _ContextFull) as exc:
            result = await self._fail(str(exc))
        except StoreError as exc:
            result = await self._fail(f"Could not read or save the conversation: {exc}")
        except (asyncio.CancelledError, KeyboardInterrupt):  # Ctrl+C, a shutdown: kept, marked, not sent again
            try:
                await self._save_cancelled()
            except StoreError as exc:  # the cancellation matters more; this one is only logged
                log.warning("could not save the cancelled turn of %s: %s", self.key, exc)
            await self._save_trace("cancelled", None)
            raise
        except BaseException:  # a bug: leave the store consistent, then propagate
            try:
                await self._keep_what_was_shown()
                await self._save_partial()
            except StoreError as exc:  # the original exception matters more; this one is only logged
                log.warning("could not save the interrupted turn of %s: %s", self.key, exc)
            await self._save_trace("cancelled", None)
            raise
        if result.stop_reason == "error":
            await self._save_trace("error", result.text)
        else:  # a limit or a stop condition: the trace says why, in the words the user got
            await self._save_trace(result.stop_reason, None, None if result.stop_reason == "answer" else result.text)
        return result

    async def _save_trace(self, stop_reason: str, error: str | None, detail: str | None = None) -> None:
        try:
            await self.store.traces.append(self.trace.finish(stop_reason, error, detail))
        except StoreError as exc:  # a lost trace must not cost the answer
            log.warning("could not save the trace of turn %s: %s", self.emit.turn_id, exc)

    async def _offered_tools(self) -> list[dict[str, Any]]:
        """The tools the model may call: the client's when it brought some (they go back to it), else
        picoora's; none when the request says ``tool_choice: none``."""
        conversation = self.conversation
        if conversation is not None and conversation.tools is not None:
            return [] if self.options.tool_choice == "none" else list(conversation.tools)
        for notice in await self.agent.tools.prepare():  # MCP servers start on the first turn
            await self.emit(NoticeEvent(self.key, notice))
        return [] if self.options.tool_choice == "none" else self.agent.tools.schemas()

    def _offer_kept_outputs(self) -> None:
        """Offer the on-demand tools (``read_tool_output``) from now on: a kept output is there to read. Not when
        no tools are offered (``tool_choice: none``) or the client brought its own."""
        if self.schemas and not self.hands_calls_back and not self.offers_kept_outputs:
            self.schemas = self.agent.tools.schemas(on_demand=True)
            self.offers_kept_outputs = True

    @property
    def hands_calls_back(self) -> bool:
        return self.conversation is not None and self.conversation.tools is not None

    def _use_context(self, inputs: ContextInputs) -> None:
        """Take the session's history and summary into this turn (a client's conversation: its own
        history, no summary); the summary is part of the system prompt."""
        self.inputs = inputs
        conversation = self.conversation
        if conversation is not None:
            self.history, self.summary = list(conversation.history), ""
            if conversation.system.strip():
                self.system = build_client_system_prompt(
                    conversation.system, inputs, tools=[] if self.hands_calls_back else self.schemas,
                    settings=self.settings, tool_parts=() if self.hands_calls_back else self.agent.tools.prompt_parts())
                return
        else:
            self.history, self.summary = inputs.session.messages, inputs.session.summary
        self.system = build_system_prompt(
            inputs,
            tools=self.schemas,
            workspace=self.agent.workspace,
            settings=self.settings,
            model_label=self.model_label,
            tool_parts=self.agent.tools.prompt_parts(),
        )

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
            await self._record([self._assistant(response, calls)])
            if self.hands_calls_back:
                return await self._hand_back(response, calls)
            if self.tool_rounds >= self.settings.max_tool_iterations:
                return await self._stop(
                    "max_iterations",
                    f"I stopped after {self.tool_rounds} rounds of tool calls without reaching an answer "
                    "(agents.defaults.max_tool_iterations). Ask me to continue, or raise the limit.",
                    unrun_reason="Not run: the turn reached its limit of tool-call rounds.",
                )
            stop = self.stops.before_round(calls)
            if stop is not None:
                return await self._stop(stop.reason, stop.text, unrun_reason=stop.unrun)
            try:
                await self._run_tools(calls)
            except _TimeLimitReached:
                return await self._stop(
                    "time_limit", self._time_limit_text(), unrun_reason="Interrupted: the turn hit its time limit."
                )
            stop = self.stops.after_round()
            if stop is not None:
                return await self._stop(stop.reason, stop.text)
            if any(KEPT_MARK in m.content for m in self.produced[-len(calls):]):
                self._offer_kept_outputs()

    def _prompt_budget(self) -> int:
        """Tokens a request may take: the window less room for the answer (Ollama's num_ctx holds both)."""
        window = self.settings.context_window
        return window - min(self.settings.max_tokens, window // 4)

    def _check_message_fits(self) -> None:
        """Refuse, before anything is sent, a message that cannot fit the window with the system prompt.
        Ollama cuts an oversized prompt silently from the front: the instructions and memories would go."""
        message, budget = estimate_messages_tokens(self.produced), self._prompt_budget()
        needed = estimate_tokens(self.system) + message
        if needed > budget:
            raise _MessageTooLarge(
                f"Your message is too long for the model: about {message:,} tokens, "
                f"and with the instructions it needs {needed:,} of the {budget:,} the model can take "
                f"(agents.defaults.context_window {self.settings.context_window:,}, less room for the answer). Nothing "
                "was sent and the transcript keeps it. Send it shorter, or save it as a file in the workspace and ask "
                "me to read it."
            )

    async def _call_model(self, on_delta: OnDelta | None) -> LLMResponse:
        """One model call; the turn's first context overflow compacts the session and the call is made again.
        A request that would not fit the window by our own estimate counts as an overflow before it is sent,
        since Ollama never reports one."""
        request = join_user_runs(repair_history(build_messages(self.system, self.history, self.produced)))
        request_tokens = estimate_messages_tokens(request)
        if request_tokens > self._prompt_budget():
            if self.overflow_compacted:
                raise self._context_full("even after the older conversation was summarised")
            await self._compact_for_overflow()
            return await self._call_model(on_delta)
        stop = self.stops.over_budget(self.usage.prompt_tokens + self.usage.completion_tokens, request_tokens)
        if stop is not None:
            raise _Stopped(stop)
        self.iterations += 1
        self.streamed = []
        try:
            response = await self._bounded(self.llm.chat(request, self.schemas or None, on_delta=on_delta,
                                                         options=self.options))
            self.streamed = []  # whole now: the response itself is what gets recorded
            self.trace.model_call(response.usage)
            self._count_usage(request, response)
            return response
        except ContextOverflowError as exc:
            if self.overflow_compacted:  # so the call below is the turn's only retry
                raise self._context_full("even after the older conversation was summarised") from exc
        await self._compact_for_overflow()
        return await self._call_model(on_delta)

    def _count_usage(self, request: list[Message], response: LLMResponse) -> None:
        """The turn's token counts: the provider's, or our estimate where it reports none (some servers)."""
        reported = response.usage
        self.usage.prompt_tokens += reported.prompt_tokens or estimate_messages_tokens(request)
        self.usage.completion_tokens += reported.completion_tokens or estimate_message_tokens(
            self._assistant(response, response.tool_calls))

    async def _compact_for_overflow(self) -> None:
        """Fold the older stored conversation into the summary, keeping what fits, and reload the context."""
        if self.conversation is not None:
            raise _ContextFull("The conversation does not fit the model's context window, and picoora does not "
                               "summarise a conversation the client keeps: send fewer or shorter messages "
                               f"(agents.defaults.context_window is {self.settings.context_window}).")
        self.overflow_compacted = True
        room = int(self.settings.context_window * OVERFLOW_KEPT_SHARE) - estimate_messages_tokens(self.produced)
        try:
            folded = await self._bounded(
                compact(self.store, self.llm, self.key, self.settings, max_kept_tokens=max(room, 0))
            )
        except CompactionError as exc:
            raise self._context_full(
                f"and summarising the older conversation failed ({exc}); it is kept as it was"
            ) from exc
        if not folded:
            raise self._context_full("and there is no older conversation left to summarise")
        assert self.inputs is not None  # set before the first model call
        session = await self.store.sessions.load(self.key)
        self._use_context(replace(self.inputs, session=session))
        await self.emit(NoticeEvent(self.key, f"The older conversation ({folded} messages) was summarised to fit "
                                              "the model's context window; the transcript keeps every message."))

    def _context_full(self, why: str) -> _ContextFull:
        return _ContextFull(
            f"The conversation does not fit the model's context window, {why}. Start a new session with /new, "
            "or use a model with a larger context window and set agents.defaults.context_window to match it "
            f"(now {self.settings.context_window}; for Ollama, raising it raises num_ctx)."
        )

    async def _run_tools(self, calls: list[ToolCall]) -> None:
        self.tool_rounds += 1
        self.open_calls, self.finished = calls, {}
        for call in calls:
            await self.emit(ToolCallStarted(self.key, call.id, call.name, dict(call.arguments)))
        await self._bounded(self._run_batch(calls))
        results = [self.finished[call.id] for call in calls]
        self.open_calls, self.finished = [], {}
        await self._record(results)

    async def _run_batch(self, calls: list[ToolCall]) -> None:
        """The calls concurrently; when cancelled, every call is cancelled and awaited (its child process
        killed) before the cancellation goes on, so nothing is left running or unretrieved."""
        tasks = [asyncio.ensure_future(self._run_tool(call)) for call in calls]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    async def _run_tool(self, call: ToolCall) -> None:
        if RAW_ARGUMENTS_KEY in call.arguments:  # the provider could not parse the model's arguments
            raw = str(call.arguments[RAW_ARGUMENTS_KEY])[:RAW_PREVIEW_CHARS]
            result = ToolResult.error(f"the arguments for {call.name} were not valid JSON ({raw!r}); "
                                      "call it again with a JSON object")
        else:
            started = time.monotonic()
            result = await self.agent.tools.execute(call.name, dict(call.arguments), self.ctx)
            self.executed += 1
            self.trace.tool_call(call, result, time.monotonic() - started)
        self.stops.result(result.content, result.is_error)
        self.finished[call.id] = Message(role="tool", content=result.content, tool_call_id=call.id, name=call.name)
        await self.emit(ToolCallFinished(self.key, call.id, call.name, result.content, ok=not result.is_error))

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
            self.streamed.append(text)
        event = TokenEvent(self.key, text) if kind == "token" else ReasoningEvent(self.key, text)
        await self.emit(event)

    @staticmethod
    def _assistant(response: LLMResponse, calls: list[ToolCall]) -> Message:
        reasoning = response.reasoning or None
        return Message(role="assistant", content=response.content, tool_calls=calls, reasoning=reasoning)

    def _time_limit_text(self) -> str:
        return (
            f"I stopped because this turn ran past its time limit of {self.settings.turn_timeout_seconds:g} "
            "seconds (agents.defaults.turn_timeout_seconds)."
        )

    async def _answer(self, response: LLMResponse) -> TurnResult:
        text = response.content
        if not text.strip():
            text = "The model returned an empty answer."
            if response.reasoning.strip():
                text = (
                    "The model spent its whole answer on reasoning and gave no reply; try again, "
                    "or raise agents.defaults.max_tokens."
                )
        final = Message(role="assistant", content=text, reasoning=response.reasoning or None)
        return await self._finish(final, "answer")

    async def _stop(self, reason: str, text: str, unrun_reason: str = "") -> TurnResult:
        """End the turn on a limit: unanswered calls get an explicit result, then a final message says why."""
        last = self.produced[-1]
        if last.role == "assistant" and last.tool_calls:
            answers = [self.finished.get(c.id) or interrupted_result(c, unrun_reason) for c in last.tool_calls]
            await self._record(answers)
            self.open_calls, self.finished = [], {}
        await self._keep_what_was_shown()  # a time limit in the middle of a streamed answer
        return await self._finish(Message(role="assistant", content=text), reason)

    async def _finish(self, final: Message, reason: str) -> TurnResult:
        await self._record([final])
        await self._save_session(self.produced)
        await self.emit(FinalAnswer(self.key, final.content, stop_reason=reason))
        return self._result(final.content, reason)

    async def _hand_back(self, response: LLMResponse, calls: list[ToolCall]) -> TurnResult:
        """A client's tool calls end the turn: the client runs them (the call message is recorded already)."""
        await self.emit(FinalAnswer(self.key, response.content, stop_reason="tool_calls", calls=calls))
        return self._result(response.content, "tool_calls", calls=calls)

    async def _refuse(self, param: str, why: str) -> TurnResult:
        text = f"{self.model_label} cannot honour '{param}': {why}."
        await self.emit(FinalAnswer(self.key, text, stop_reason="refused"))
        return self._result(text, "refused", param=param)

    def _result(self, text: str, reason: str, **extra: Any) -> TurnResult:
        return TurnResult(text, reason, self.iterations, self.executed, self.emit.turn_id, usage=self.usage,
                          model=self.model_label, **extra)

    async def _fail(self, message: str) -> TurnResult:
        try:
            await self._keep_what_was_shown()
            await self._save_partial()
        except StoreError as exc:
            message += f"\n(The conversation could not be saved either: {exc})"
        await self.emit(ErrorEvent(self.key, message))
        await self.emit(FinalAnswer(self.key, message, stop_reason="error"))
        return self._result(message, "error")

    async def _keep_what_was_shown(self) -> None:
        """An answer cut off midway (a broken stream, Ctrl+C) was partly on the user's screen already: it
        goes to the transcript and the session, marked, so the record shows what the user saw."""
        shown, self.streamed = "".join(self.streamed), []
        if shown.strip():
            await self._record([Message(role="assistant", content=f"{shown.rstrip()}{CUT_OFF_MARK}")])

    async def _save_partial(self) -> None:
        """After an error or cancellation: keep the results that came back, then only complete pairs."""
        returned = [self.finished[c.id] for c in self.open_calls if c.id in self.finished]
        self.open_calls, self.finished = [], {}
        if returned:
            await self._record(returned)
        await self._save_session(complete_pairs(self.produced))

    async def _save_cancelled(self) -> None:
        """After a cancellation: the results that came back and what the user saw are recorded, then a
        closing marker; the session gets the turn's complete pairs and the marker, every one marked
        cancelled. Nothing when the answer was saved already (the turn was done)."""
        if self.saved or not self.produced:
            return
        await self._keep_what_was_shown()
        returned = [self.finished[c.id] for c in self.open_calls if c.id in self.finished]
        self.open_calls, self.finished = [], {}
        await self._record([*returned, Message(role="assistant", content=CANCELLED_MARK, cancelled=True)])
        await self._save_session([replace(m, cancelled=True) for m in complete_pairs(self.produced)])

    async def _record(self, messages: list[Message]) -> None:
        # Listed before the write: a write cut short by cancellation still completes in its thread.
        self.produced.extend(messages)
        await self.store.transcripts.append(self.key, messages)

    async def _save_session(self, messages: list[Message]) -> None:
        """Append the turn to the session, once: a cancellation or a failing event sink after (or during)
        the write must not append it again. Reasoning stays in the transcript only. A client's conversation
        is never appended: the client sends it again."""
        if self.saved:
            return
        self.saved = True
        if self.conversation is not None:
            return
        stripped = [replace(m, reasoning=None) if m.reasoning else m for m in messages]
        await self.store.sessions.append(self.key, stripped)

    async def _notice_once(self, text: str | None) -> None:
        """Tell the session once, also across processes (each ``agent -m`` is a new one): the notices a
        session was shown on its current model are kept in its state."""
        if not text or text in self.runtime.notices_shown:
            return
        self.runtime.notices_shown.add(text)
        key, label = NOTICES_STATE + self.key, self.model_label
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        try:
            stored = json.loads(await self.store.state.get(key) or "{}")
            shown = stored.get("shown", []) if isinstance(stored, dict) and stored.get("model") == label else []
            if digest in shown:
                return
            await self.store.state.set(key, json.dumps({"model": label, "shown": [*shown, digest]}))
        except (StoreError, ValueError) as exc:  # better said twice than never
            log.warning("could not keep track of the notices of %s: %s", self.key, exc)
        await self.emit(NoticeEvent(self.key, text))

    def needs_compaction(self) -> bool:
        if self.conversation is not None:
            return False
        return needs_compaction(self.history + self.produced, self.summary, self.settings)

    async def compact(self) -> None:
        """After the answer: fold older messages into the summary; the outcome is a ``CompactionEvent``."""
        try:
            folded = await asyncio.wait_for(compact(self.store, self.llm, self.key, self.settings),
                                            self.settings.turn_timeout_seconds)
        except (CompactionError, asyncio.TimeoutError) as exc:
            reason = str(exc) or "it took too long"
            await self.emit(CompactionEvent(self.key, f"Could not summarise the older conversation ({reason}); "
                                                      "the history is kept as it was.", ok=False))
            return
        if folded:
            await self.emit(CompactionEvent(self.key, f"Summarised {folded} older messages into the session summary; "
                                                      "the transcript keeps them all.", folded=folded))
