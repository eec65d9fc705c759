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
``max_iterations``, ``time_limit``, ``repeated_tool_call``, ``error``. Every turn ends with exactly one
``FinalAnswer`` event; on an error an ``ErrorEvent`` with the same text comes just before it (a
renderer shows one of the two).

Persistence: the transcript gets each message as it is produced; the session gets the turn's
well-formed messages at the end, or on an error or cancellation the user message and the complete
call/result pairs. Calls left unanswered by a limit get an explicit "not run" result, so what is
stored is always valid for every provider.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import weakref
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from picoora.agent.compaction import CompactionError, compact, needs_compaction
from picoora.agent.context import ContextInputs, build_messages, build_system_prompt, gather_inputs
from picoora.agent.events import (
    ErrorEvent,
    Event,
    EventSink,
    FinalAnswer,
    NoticeEvent,
    ReasoningEvent,
    TokenEvent,
    ToolCallFinished,
    ToolCallStarted,
)
from picoora.agent.repair import complete_pairs, interrupted_result, repair_history, unique_calls
from picoora.agent.tokens import estimate_messages_tokens
from picoora.config import AgentDefaults
from picoora.llm.base import (
    LLM,
    RAW_ARGUMENTS_KEY,
    ContextOverflowError,
    DeltaKind,
    LLMError,
    LLMResponse,
    OnDelta,
)
from picoora.messages import Message, ToolCall
from picoora.store.base import Store, StoreError
from picoora.tools.base import ToolContext, ToolResult

if TYPE_CHECKING:
    from picoora.tools.registry import ToolRegistry

log = logging.getLogger(__name__)

REPEAT_LIMIT = 3  # the third identical call in a turn stops it
RAW_PREVIEW_CHARS = 200
# After an overflow, the stored history kept verbatim plus this turn may fill this share of the window
# (the rest is for the system prompt, the summary and the answer).
OVERFLOW_KEPT_SHARE = 0.5


@dataclass
class TurnResult:
    text: str
    stop_reason: str
    iterations: int  # model calls made
    tool_calls: int  # tool calls executed


class Agent:
    """Runs turns for any number of sessions concurrently; turns of one session run one at a time.

        agent = Agent(store=store, llm=llm, tools=registry, settings=config.agents.defaults, workspace=ws)
        result = await agent.run_turn("cli:default", "hello", on_event=print)

    ``on_event`` may be a plain function or a coroutine function. Keep one Agent per process (or per
    gateway): the per-session ordering holds among the turns of one Agent.
    """

    def __init__(
        self,
        *,
        store: Store,
        llm: LLM,
        tools: ToolRegistry,
        settings: AgentDefaults,
        workspace: Path,
        secrets: Iterable[str] = (),
        tool_settings: dict[str, Any] | None = None,
    ):
        self.store = store
        self.llm = llm
        self.tools = tools
        self.settings = settings
        self.workspace = workspace
        self.secrets = list(secrets)  # the registry scrubs these from every tool result
        self.tool_settings = tool_settings or {}
        # One lock per session with a turn running or waiting; unused locks are collected.
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self._notices_shown: set[str] = set()

    async def run_turn(self, session_key: str, text: str, on_event: EventSink | None = None) -> TurnResult:
        lock = self._locks.get(session_key)
        if lock is None:
            lock = self._locks[session_key] = asyncio.Lock()
        async with lock:
            turn = _Turn(self, session_key, on_event)
            result = await turn.run(text)
            if result.stop_reason != "error":  # the model just failed; a summary request would fail too
                await turn.compact_if_needed()
            return result

    async def _notice_once(self, text: str | None, emit: _Emitter) -> None:
        if text and text not in self._notices_shown:
            self._notices_shown.add(text)
            await emit(NoticeEvent(emit.session_key, text))


class _Emitter:
    def __init__(self, session_key: str, sink: EventSink | None):
        self.session_key = session_key
        self.sink = sink

    async def __call__(self, event: Event) -> None:
        if self.sink is not None:
            result = self.sink(event)
            if inspect.isawaitable(result):
                await result


class _TimeLimitReached(Exception):
    pass


class _ContextFull(Exception):
    """The request does not fit the model's context window and compaction could not make it fit."""


class _Turn:
    """The state of one turn; lives inside the session lock."""

    def __init__(self, agent: Agent, session_key: str, on_event: EventSink | None):
        self.agent = agent
        self.key = session_key
        self.emit = _Emitter(session_key, on_event)
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
        self.call_counts: dict[str, int] = {}
        self.iterations = 0
        self.tool_rounds = 0
        self.executed = 0
        self.ctx = ToolContext(
            workspace=agent.workspace,
            store=agent.store,
            session_key=session_key,
            restrict_to_workspace=agent.settings.restrict_to_workspace,
            secrets=list(agent.secrets),
            settings=agent.tool_settings,
        )
        self.deadline = 0.0
        self.saved = False  # the session got this turn's messages

    async def run(self, text: str) -> TurnResult:
        self.deadline = asyncio.get_running_loop().time() + self.settings.turn_timeout_seconds
        try:
            await self._record([Message(role="user", content=text)])
            self.schemas = self.agent.tools.schemas()
            inputs = await asyncio.to_thread(gather_inputs, self.agent.store, self.key, text, self.settings)
            self._use_context(inputs)
            return await self._loop()
        except (LLMError, _ContextFull) as exc:
            return await self._fail(str(exc))
        except StoreError as exc:
            return await self._fail(f"Could not read or save the conversation: {exc}")
        except BaseException:  # cancelled (Ctrl+C) or a bug: leave the store consistent, then propagate
            try:
                await self._save_partial()
            except StoreError as exc:  # the original exception matters more; this one is only logged
                log.warning("could not save the interrupted turn of %s: %s", self.key, exc)
            raise

    def _use_context(self, inputs: ContextInputs) -> None:
        """Take the session's history and summary into this turn; the summary is part of the system prompt."""
        self.inputs = inputs
        self.history, self.summary = inputs.session.messages, inputs.session.summary
        self.system = build_system_prompt(
            inputs,
            tools=self.schemas,
            workspace=self.agent.workspace,
            settings=self.settings,
            model_label=f"{self.agent.llm.provider}/{self.agent.llm.model}",
        )

    async def _loop(self) -> TurnResult:
        on_delta = self._on_delta if self.emit.sink is not None else None
        while True:
            try:
                response = await self._call_model(on_delta)
            except _TimeLimitReached:
                return await self._stop("time_limit", self._time_limit_text())
            await self.agent._notice_once(response.notice, self.emit)
            calls = unique_calls(response.tool_calls)
            if not calls:
                return await self._answer(response)
            await self._record([self._assistant(response, calls)])
            if self.tool_rounds >= self.settings.max_tool_iterations:
                return await self._stop(
                    "max_iterations",
                    f"I stopped after {self.tool_rounds} rounds of tool calls without reaching an answer "
                    "(agents.defaults.max_tool_iterations). Ask me to continue, or raise the limit.",
                    unrun_reason="Not run: the turn reached its limit of tool-call rounds.",
                )
            repeated = self._count_repeats(calls)
            if repeated is not None:
                return await self._stop(
                    "repeated_tool_call",
                    f"I stopped because I asked for `{repeated.name}` with the same arguments a third time in "
                    "this turn, so I was going in circles. Try rephrasing the request or giving more detail.",
                    unrun_reason="Not run: the same call was already made twice in this turn.",
                )
            try:
                await self._run_tools(calls)
            except _TimeLimitReached:
                return await self._stop(
                    "time_limit", self._time_limit_text(), unrun_reason="Interrupted: the turn hit its time limit."
                )

    async def _call_model(self, on_delta: OnDelta | None) -> LLMResponse:
        """One model call; the turn's first context overflow compacts the session and the call is made again."""
        request = repair_history(build_messages(self.system, self.history, self.produced))
        self.iterations += 1
        try:
            return await self._bounded(self.agent.llm.chat(request, self.schemas or None, on_delta=on_delta))
        except ContextOverflowError as exc:
            if self.overflow_compacted:  # so the call below is the turn's only retry
                raise self._context_full("even after the older conversation was summarised") from exc
        await self._compact_for_overflow()
        return await self._call_model(on_delta)

    async def _compact_for_overflow(self) -> None:
        """Fold the older stored conversation into the summary, keeping what fits, and reload the context."""
        self.overflow_compacted = True
        room = int(self.settings.context_window * OVERFLOW_KEPT_SHARE) - estimate_messages_tokens(self.produced)
        try:
            folded = await self._bounded(
                compact(self.agent.store, self.agent.llm, self.key, self.settings, max_kept_tokens=max(room, 0))
            )
        except CompactionError as exc:
            raise self._context_full(
                f"and summarising the older conversation failed ({exc}); it is kept as it was"
            ) from exc
        if not folded:
            raise self._context_full("and there is no older conversation left to summarise")
        assert self.inputs is not None  # set before the first model call
        session = await asyncio.to_thread(self.agent.store.load_session, self.key)
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
        await self._bounded(asyncio.gather(*(self._run_tool(call) for call in calls)))
        results = [self.finished[call.id] for call in calls]
        self.open_calls, self.finished = [], {}
        await self._record(results)

    async def _run_tool(self, call: ToolCall) -> None:
        if RAW_ARGUMENTS_KEY in call.arguments:  # the provider could not parse the model's arguments
            raw = str(call.arguments[RAW_ARGUMENTS_KEY])[:RAW_PREVIEW_CHARS]
            result = ToolResult.error(f"the arguments for {call.name} were not valid JSON ({raw!r}); "
                                      "call it again with a JSON object")
        else:
            result = await self.agent.tools.execute(call.name, dict(call.arguments), self.ctx)
            self.executed += 1
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
        event = TokenEvent(self.key, text) if kind == "token" else ReasoningEvent(self.key, text)
        await self.emit(event)

    def _count_repeats(self, calls: list[ToolCall]) -> ToolCall | None:
        """Count this answer's calls; the first one now requested for the third time, if any."""
        repeated = None
        for call in calls:
            signature = call.name + "\0" + json.dumps(call.arguments, sort_keys=True, default=str)
            self.call_counts[signature] = self.call_counts.get(signature, 0) + 1
            if self.call_counts[signature] >= REPEAT_LIMIT and repeated is None:
                repeated = call
        return repeated

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
        return await self._finish(Message(role="assistant", content=text), reason)

    async def _finish(self, final: Message, reason: str) -> TurnResult:
        await self._record([final])
        await self._save_session(self.produced)
        await self.emit(FinalAnswer(self.key, final.content, stop_reason=reason))
        return TurnResult(final.content, reason, self.iterations, self.executed)

    async def _fail(self, message: str) -> TurnResult:
        try:
            await self._save_partial()
        except StoreError as exc:
            message += f"\n(The conversation could not be saved either: {exc})"
        await self.emit(ErrorEvent(self.key, message))
        await self.emit(FinalAnswer(self.key, message, stop_reason="error"))
        return TurnResult(message, "error", self.iterations, self.executed)

    async def _save_partial(self) -> None:
        """After an error or cancellation: keep the results that came back, then only complete pairs."""
        returned = [self.finished[c.id] for c in self.open_calls if c.id in self.finished]
        self.open_calls, self.finished = [], {}
        if returned:
            await self._record(returned)
        await self._save_session(complete_pairs(self.produced))

    async def _record(self, messages: list[Message]) -> None:
        # Listed before the write: a write cut short by cancellation still completes in its thread.
        self.produced.extend(messages)
        await asyncio.to_thread(self.agent.store.append_transcript, self.key, messages)

    async def _save_session(self, messages: list[Message]) -> None:
        """Append the turn to the session, once: a cancellation or a failing event sink after (or during)
        the write must not append it again. Reasoning stays in the transcript only."""
        if self.saved:
            return
        self.saved = True
        stripped = [replace(m, reasoning=None) if m.reasoning else m for m in messages]
        await asyncio.to_thread(self.agent.store.append_session, self.key, stripped)

    async def compact_if_needed(self) -> None:
        if not needs_compaction(self.history + self.produced, self.summary, self.settings):
            return
        try:
            folded = await asyncio.wait_for(
                compact(self.agent.store, self.agent.llm, self.key, self.settings),
                self.settings.turn_timeout_seconds,
            )
        except (CompactionError, asyncio.TimeoutError) as exc:
            reason = str(exc) or "it took too long"
            await self.emit(NoticeEvent(self.key, f"Could not summarise the older conversation ({reason}); "
                                                  "the history is kept as it was."))
            return
        if folded:
            await self.emit(NoticeEvent(self.key, f"Summarised {folded} older messages into the session summary; "
                                                  "the transcript keeps them all."))
