"""Ollama through the official ``ollama`` client's native chat API (/api/chat).

Before the first chat with a model, /api/show tells what it can do (cached): a model without
"tools" is asked without them and the response carries a one-time notice; a model with
"thinking" is asked to think, and its thinking is streamed as reasoning. A model that is not
pulled gives ``ModelNotFoundError`` naming ``ollama pull``; Ollama not running gives
``ProviderUnavailableError`` saying how to start it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from functools import partial
from typing import Any, TypeVar

import httpx
import ollama

from picoora.llm.base import (
    DEFAULT_OPTIONS,
    CallOptions,
    LLMError,
    LLMResponse,
    ModelNotFoundError,
    OnDelta,
    ToolSchema,
    Usage,
)
from picoora.llm.common import (
    DeltaSink,
    PerLoopClient,
    ProviderSettings,
    base64_of,
    first_of,
    new_call_id,
    within_first_response,
)
from picoora.llm.constrained import constraint_for, with_instruction
from picoora.llm.ollama_admin import (
    TOOL_MODEL_EXAMPLES,
    capabilities_of,
    classify_ollama_error,
    client_options,
    native_base,
)
from picoora.llm.retry import call_with_retries, parse_retry_after
from picoora.messages import Message, ToolCall, parse_arguments

# The ollama client's ResponseError drops headers, so a response hook notes Retry-After for the
# request in flight. A ContextVar keeps concurrent chats (one task each) from seeing each other's; it
# holds a box, because the request runs in a child task (first-response watch) whose own ``set`` would
# stay in that task's copy of the context.
T = TypeVar("T")

_retry_after: ContextVar[list[float | None] | None] = ContextVar("ollama_retry_after", default=None)
FIRST_RESPONSE_SETTING = "providers.ollama.first_response_seconds"
PS_SECONDS = 3.0  # /api/ps answers at once from a live Ollama, even while it loads a model
LOAD_RECHECK_SECONDS = 5.0


async def _note_retry_after(response: httpx.Response) -> None:
    box = _retry_after.get()
    if response.status_code >= 400 and box is not None:
        box[0] = parse_retry_after(response.headers)


def _noted_retry_after() -> float | None:
    box = _retry_after.get()
    return box[0] if box is not None else None


class OllamaLLM:
    provider = "ollama"

    def __init__(self, settings: ProviderSettings):
        self.model = settings.model
        self._settings = settings
        self.base = native_base(settings.api_base)
        self._clients: PerLoopClient[ollama.AsyncClient] = PerLoopClient(self._new_client, lambda c: c.close())
        self._capabilities: dict[str, frozenset[str] | None] = {}
        self._probes: dict[str, asyncio.Future[frozenset[str] | None]] = {}  # /api/show under way, by model
        self._told_no_tools: set[str] = set()

    def _new_client(self) -> ollama.AsyncClient:
        timeout = httpx.Timeout(self._settings.timeout, connect=min(10.0, self._settings.timeout))
        return ollama.AsyncClient(
            host=self.base, timeout=timeout, event_hooks={"response": [_note_retry_after]}, **client_options(self.base)
        )

    @staticmethod
    def unsupported(options: CallOptions) -> tuple[str, str] | None:
        return None  # a forced tool call is asked for as constrained JSON (``picoora.llm.constrained``)

    async def chat(
        self, messages: list[Message], tools: list[ToolSchema] | None = None, *, on_delta: OnDelta | None = None,
        options: CallOptions = DEFAULT_OPTIONS,
    ) -> LLMResponse:
        model = self.model
        caps = await self._model_capabilities(model)
        notice = None
        if options.tool_choice == "none":
            tools = None
        constraint = constraint_for(tools or [], options)
        if constraint is not None:  # the tools are described in the prompt and the call comes back as JSON
            messages, tools = with_instruction(messages, constraint.instruction), None
        if tools and caps is not None and "tools" not in caps:
            tools = None
            if model not in self._told_no_tools:
                self._told_no_tools.add(model)
                notice = tools_notice(model)
        request: dict[str, Any] = {
            "model": model,
            "messages": to_ollama_messages(messages),
            "tools": tools or None,  # as the tools wrote them: JSON Schema, nested, with $defs
            "think": True if caps and "thinking" in caps else None,
            "options": {
                "temperature": self._settings.temperature if options.temperature is None else options.temperature,
                "num_predict": options.max_tokens or self._settings.max_tokens,
                # Ollama's own default window is small and it truncates the prompt without an error; the
                # compaction thresholds assume the configured window, so ask for exactly that.
                "num_ctx": self._settings.context_window,
            },
        }
        if options.stop:
            request["options"]["stop"] = list(options.stop)
        request["options"].update(options.sampling())
        if constraint is not None:
            request["format"] = constraint.schema
        elif options.json_schema is not None or options.json_object:
            schema = (options.json_schema or {}).get("schema")  # OpenAI's {"name", "schema", "strict"}
            request["format"] = schema if isinstance(schema, dict) else "json"
        # A constrained answer is JSON that may turn out to be a call: its text is not streamed as the answer.
        sink = DeltaSink(on_delta, tokens=constraint is None)
        response = await self._with_retries(partial(self._chat_once, request, sink), model, sink)
        if constraint is not None:
            response.content, response.tool_calls = constraint.read(response.content)
            response.finish_reason = "tool_calls" if response.tool_calls else response.finish_reason
        response.notice = notice
        return response

    async def sees_images(self) -> bool:
        caps = await self._model_capabilities(self.model)  # the probe chats use, asked once per model
        return caps is not None and "vision" in caps

    async def close(self) -> None:
        await self._clients.close()

    async def _chat_once(self, request: dict[str, Any], sink: DeltaSink) -> LLMResponse:
        """Always streamed, so a silent server shows at the first part; text reaches ``sink`` only when asked."""
        _retry_after.set([None])
        # The client's own chat() validates the tools into its ``Tool`` model, which keeps four fields of a
        # property (no nested properties, $ref, minimum, default): the body goes as built, parsed as chat() would.
        body = {key: value for key, value in request.items() if value is not None}
        stream = await self._clients.get()._request(ollama.ChatResponse, "POST", "/api/chat",
                                                    json={**body, "stream": True}, stream=True)
        first = await first_of(stream, seconds=self._settings.first_response, where=f"Ollama at {self.base}",
                               setting=FIRST_RESPONSE_SETTING, extend=partial(self._while_loading, request["model"]))
        parts = []
        if first is not None:
            parts.append(first)
            await sink("reasoning", first.message.thinking)
            await sink("token", first.message.content)
        async for part in stream:
            await sink("reasoning", part.message.thinking)
            await sink("token", part.message.content)
            parts.append(part)
        return response_from_parts(parts)

    async def _while_loading(self, model: str, waited: float) -> float | None:
        """More seconds to wait while Ollama says (in /api/ps) that ``model`` is not in memory yet, i.e. it is
        loading it; None when the model is loaded and still silent, or Ollama does not answer at all."""
        if waited >= self._settings.timeout:
            return None
        try:
            running = await asyncio.wait_for(self._clients.get().ps(), PS_SECONDS)
        except Exception:  # noqa: BLE001 - a server that cannot even list its models is not loading one
            return None
        if full_name(model) in {full_name(m.model or m.name or "") for m in running.models}:
            return None
        return min(LOAD_RECHECK_SECONDS, self._settings.timeout - waited)

    async def _model_capabilities(self, model: str) -> frozenset[str] | None:
        """Asked once per model: chats that start together before the answer wait for the same /api/show
        (a gateway's first burst sent one per chat). A failed probe is not kept, so the next chat asks again."""
        if model in self._capabilities:
            return self._capabilities[model]
        probe = self._probes.get(model)
        if probe is None or probe.get_loop() is not asyncio.get_running_loop():

            async def show() -> ollama.ShowResponse:
                _retry_after.set([None])
                return await within_first_response(self._clients.get().show(model),
                                                   seconds=self._settings.first_response,
                                                   where=f"Ollama at {self.base}", setting=FIRST_RESPONSE_SETTING)

            async def ask() -> frozenset[str] | None:
                try:
                    self._capabilities[model] = capabilities_of(await self._with_retries(show, model))
                    return self._capabilities[model]
                finally:
                    if self._probes.get(model) is probe:
                        del self._probes[model]

            probe = self._probes[model] = asyncio.ensure_future(ask())
        return await asyncio.shield(probe)  # one chat cancelled does not cancel the others' probe

    async def _with_retries(self, attempt: Callable[[], Awaitable[T]], model: str, sink: DeltaSink | None = None) -> T:
        try:
            return await call_with_retries(
                attempt,
                classify=lambda exc: classify_ollama_error(exc, base=self.base, model=model,
                                                           retry_after=_noted_retry_after()),
                policy=self._settings.retry,
                output_started=lambda: sink is not None and sink.started,
            )
        except ModelNotFoundError as exc:
            if await self._lists_models():  # it is Ollama, and the model is really not there
                raise
            raise LLMError(
                f"{self.base} answered 404 and does not answer Ollama's /api/tags either, so it is not Ollama: "
                "set providers.ollama.api_base to where Ollama runs (http://localhost:11434 by default).", status=404
            ) from exc

    async def _lists_models(self) -> bool:
        try:
            await asyncio.wait_for(self._clients.get().list(), PS_SECONDS)
            return True
        except Exception:  # noqa: BLE001 - any failure: not an Ollama API here
            return False


def full_name(model: str) -> str:
    """Ollama's name for a model: an untagged name means ``:latest``."""
    return model if ":" in model else f"{model}:latest"


def tools_notice(model: str) -> str:
    return (
        f"{model} cannot call tools; answering without them. Pick a tool-capable model: "
        f"{TOOL_MODEL_EXAMPLES} (e.g. `ollama pull qwen3`, then set agents.defaults.model)."
    )


def to_ollama_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """picoora messages in Ollama's shape: tool-call arguments as objects, tool results named by ``tool_name``,
    this turn's pictures as base64 ``images``."""
    names_by_call: dict[str, str] = {}
    native: list[dict[str, Any]] = []
    for message in messages:
        item: dict[str, Any] = {"role": message.role, "content": message.text_with_notes()}
        if message.seen_images():
            item["images"] = [base64_of(image.data or b"") for image in message.seen_images()]
        if message.role == "assistant" and message.tool_calls:
            item["tool_calls"] = [{"function": {"name": c.name, "arguments": c.arguments}} for c in message.tool_calls]
            names_by_call.update((c.id, c.name) for c in message.tool_calls)
        if message.role == "tool":
            name = message.name or names_by_call.get(message.tool_call_id or "")
            if name:
                item["tool_name"] = name
        native.append(item)
    return native


def response_from_parts(parts: list[ollama.ChatResponse]) -> LLMResponse:
    """One LLMResponse from a whole answer or the parts of a stream (the last part carries the totals)."""
    tool_calls = [
        ToolCall(id=new_call_id(), name=call.function.name,
                 arguments=parse_arguments(dict(call.function.arguments or {})))
        for part in parts
        for call in part.message.tool_calls or []
    ]
    last = parts[-1] if parts else None
    finish = "tool_calls" if tool_calls else (last.done_reason if last and last.done_reason else "stop")
    return LLMResponse(
        content="".join(part.message.content or "" for part in parts),
        reasoning="".join(part.message.thinking or "" for part in parts),
        tool_calls=tool_calls,
        finish_reason=finish,
        usage=Usage(
            prompt_tokens=(last.prompt_eval_count or 0) if last else 0,
            completion_tokens=(last.eval_count or 0) if last else 0,
        ),
    )
