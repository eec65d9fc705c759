"""Plumbing the three providers share: their settings, streamed-delta forwarding, per-loop SDK clients,
and new tool-call ids (arguments are parsed by ``picoora.messages.parse_arguments``).

No SDK is imported here, so ``picoora.llm`` stays cheap to import.
"""

from __future__ import annotations

import asyncio
import base64
import fnmatch
import inspect
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from picoora.config import Config
from picoora.llm.base import DeltaKind, NoResponseError, OnDelta
from picoora.llm.retry import RetryPolicy

C = TypeVar("C")
T = TypeVar("T")


@dataclass(frozen=True)
class ProviderSettings:
    model: str
    api_base: str = ""  # empty: the provider's default endpoint
    api_key: str = ""
    max_tokens: int = 4096
    temperature: float = 0.7
    context_window: int = 16384  # tokens; Ollama is told (num_ctx) so it never silently truncates the prompt
    timeout: float = 120.0  # seconds for one request
    first_response: float = 30.0  # seconds for the first part of an answer
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    vision_models: tuple[str, ...] = ()  # shell-style patterns of the models that take pictures

    @classmethod
    def from_config(cls, config: Config, *, provider: str | None = None, model: str | None = None,
                    retry: RetryPolicy | None = None) -> ProviderSettings:
        defaults = config.agents.defaults
        provider_config = getattr(config.providers, provider or defaults.provider)
        return cls(
            model=model or defaults.model,
            api_base=provider_config.api_base,
            api_key=provider_config.api_key,
            max_tokens=defaults.max_tokens,
            temperature=defaults.temperature,
            context_window=defaults.context_window,
            timeout=provider_config.timeout_seconds,
            first_response=provider_config.first_response_seconds,
            retry=retry or RetryPolicy(max_retries=provider_config.max_retries),
            vision_models=tuple(defaults.vision_models),
        )

    def lists_vision(self, model: str) -> bool:
        """``model`` takes pictures by the configured patterns (OpenAI-compatible and Anthropic providers);
        a router's ``vendor/`` prefix (OpenRouter's ``openai/gpt-4o``) is not part of the match."""
        name = model.rsplit("/", 1)[-1].lower()
        return any(fnmatch.fnmatchcase(name, pattern.lower()) for pattern in self.vision_models)


class DeltaSink:
    """Forwards streamed text to the caller's ``on_delta`` (sync or async) and remembers whether any went out;
    with ``tokens=False`` only the reasoning (the answer is not text to show as it comes)."""

    def __init__(self, on_delta: OnDelta | None, *, tokens: bool = True):
        self._on_delta = on_delta
        self._tokens = tokens
        self.started = False

    @property
    def streaming(self) -> bool:
        return self._on_delta is not None

    async def __call__(self, kind: DeltaKind, text: str | None) -> None:
        if not text or self._on_delta is None or (kind == "token" and not self._tokens):
            return
        self.started = True
        result = self._on_delta(kind, text)
        if inspect.isawaitable(result):
            await result


class PerLoopClient(Generic[C]):
    """One SDK client per running event loop.

    httpx connection pools belong to the loop that opened them, and callers may run each turn under
    its own ``asyncio.run()`` (the CLI does); a client from a finished loop would fail.
    """

    def __init__(self, factory: Callable[[], C], close: Callable[[C], Awaitable[None]]):
        self._factory = factory
        self._close = close
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: C | None = None

    def get(self) -> C:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client, self._loop = self._factory(), loop
        return self._client

    async def close(self) -> None:
        client, same_loop = self._client, self._loop is asyncio.get_running_loop()
        self._client = self._loop = None
        if client is not None and same_loop:
            await self._close(client)


# Asked when the first-response limit passes, with the seconds waited so far: how many more seconds to
# wait (the server says it is still busy, e.g. loading the model), or None to give up.
Extend = Callable[[float], Awaitable[float | None]]


async def within_first_response(first: Awaitable[T], *, seconds: float, where: str, setting: str,
                                extend: Extend | None = None) -> T:
    """``first`` (a server's first reply: a stream's first part, a quick question's answer), or
    ``NoResponseError`` when it did not come within ``seconds`` (``setting`` names the config key). A
    connection that opens and then stays silent otherwise waits out the whole request timeout, retried:
    minutes of nothing on the screen."""
    task: asyncio.Future[T] = asyncio.ensure_future(first)
    waited, budget = 0.0, seconds
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=budget)
            if done:
                return task.result()
            waited += budget
            more = await extend(waited) if extend is not None else None
            if not more:
                raise NoResponseError(
                    f"{where} accepted the request but sent nothing for {waited:g} seconds: it may be stuck, or "
                    "not be a model server. Restart it or check the address; a slow model can get longer with "
                    f"{setting}"
                )
            budget = more
    finally:
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def first_of(stream: AsyncIterator[T], **limits: Any) -> T | None:
    """The first part of a stream under ``within_first_response`` (None: the stream was empty)."""
    try:
        return await within_first_response(stream.__anext__(), **limits)
    except StopAsyncIteration:
        return None


def new_call_id() -> str:
    """An id for a tool call whose provider gives none (Ollama), so results can be matched to calls."""
    return f"call_{uuid.uuid4().hex[:16]}"


def base64_of(data: bytes) -> str:
    """Image bytes as the providers' JSON carries them."""
    return base64.b64encode(data).decode("ascii")
