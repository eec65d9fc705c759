"""The one small interface every provider implements, and the errors they raise.

Providers translate ``picoora.messages.Message`` lists and OpenAI-style function schemas into
their SDK's native shapes and back. Streaming is reported through a callback so the agent loop
can forward tokens as typed events while still getting one complete ``LLMResponse``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from picoora.messages import RAW_ARGUMENTS_KEY, Message, ToolCall

# An OpenAI-style function schema: {"type": "function", "function": {"name", "description", "parameters"}}
ToolSchema = dict[str, Any]

__all__ = ["RAW_ARGUMENTS_KEY"]  # defined in picoora.messages; providers use it through here

DeltaKind = Literal["token", "reasoning"]
# Called with ("token", text) or ("reasoning", text) as a streamed answer arrives. May be sync or async.
OnDelta = Callable[[DeltaKind, str], None | Awaitable[None]]


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass
class LLMResponse:
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    reasoning: str = ""
    finish_reason: str = "stop"
    usage: Usage = field(default_factory=Usage)
    # Set when the provider had to drop the tools (the model cannot call them); the loop tells the user once.
    notice: str | None = None


@dataclass(frozen=True)
class CallOptions:
    """What one request asks beyond the configured settings (an OpenAI-endpoint client's parameters).

    ``None`` and empty values mean "as configured". ``tool_choice``: "auto", "none" (no tool may be called),
    "required" (some tool must be), or the name of the one tool that must be called."""

    temperature: float | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] = ()
    json_object: bool = False  # the answer must be a JSON object
    json_schema: dict[str, Any] | None = None  # OpenAI's {"name", "schema", "strict"}: the answer must match it
    tool_choice: str = "auto"
    # Sampling, passed as the client gave them to Ollama (as options) and OpenAI-compatible servers; the
    # Anthropic API refuses sampling parameters, so there they are not sent.
    top_p: float | None = None
    seed: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None

    def sampling(self) -> dict[str, float | int]:
        """The sampling parameters the client set, by their OpenAI (and Ollama option) names."""
        values = {"top_p": self.top_p, "seed": self.seed, "presence_penalty": self.presence_penalty,
                  "frequency_penalty": self.frequency_penalty}
        return {name: value for name, value in values.items() if value is not None}

    @property
    def forced_tool(self) -> str:
        return "" if self.tool_choice in ("auto", "none", "required") else self.tool_choice


DEFAULT_OPTIONS = CallOptions()


class LLM(Protocol):
    provider: str
    model: str

    async def chat(
        self,
        messages: list[Message],
        tools: list[ToolSchema] | None = None,
        *,
        on_delta: OnDelta | None = None,
        options: CallOptions = DEFAULT_OPTIONS,
    ) -> LLMResponse: ...

    def unsupported(self, options: CallOptions) -> tuple[str, str] | None:
        """(parameter, why) for the first of ``options`` this provider cannot honour; None when it can."""
        ...

    async def sees_images(self) -> bool:
        """The model takes pictures with a user message (``Message.images``)."""
        ...

    async def close(self) -> None: ...


class LLMError(Exception):
    """A provider call failed. ``retryable`` is decided from the HTTP status or exception type."""

    retryable: bool = False

    def __init__(self, message: str, *, status: int | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class RetryableError(LLMError):
    """429, 5xx, timeouts and dropped connections: worth another try after a pause."""

    retryable = True


class ProviderUnavailableError(LLMError):
    """The provider cannot be reached at all (connection refused, DNS): say how to start it."""


class NoResponseError(LLMError):
    """The server took the request but sent nothing back within the first-response limit (stuck, or not a
    model server)."""


class ModelNotFoundError(LLMError):
    """The model is not available on the provider (for Ollama: not pulled)."""


class AuthenticationError(LLMError):
    """The API key is missing or rejected."""


class ContextOverflowError(LLMError):
    """The request does not fit the model's context window (classified from status/error type)."""
