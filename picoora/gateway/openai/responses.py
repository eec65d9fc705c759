"""What an OpenAI client gets back, shaped as OpenAI's API reference shapes it.

The models type the OpenAPI document; the builders make the bodies (plain dicts: a streamed chunk is built
for every token, so it skips pydantic). ``model`` in a response names the model that answered
(``provider/model``), whatever the request asked for.
"""

from __future__ import annotations

import base64
import json
import struct
import time
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from picoora.gateway.openai.requests import MODEL_ID

if TYPE_CHECKING:
    from picoora.agent import TurnResult
    from picoora.llm.base import Usage
    from picoora.messages import ToolCall

# How a turn's stop reason reads as OpenAI's finish_reason.
FINISH = {"answer": "stop", "tool_calls": "tool_calls", "max_iterations": "length", "time_limit": "length",
          "token_budget": "length"}


class CompletionUsage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class CalledFunction(BaseModel):
    name: str
    arguments: str  # JSON text, as OpenAI sends it


class CompletionToolCall(BaseModel):
    id: str
    type: Literal["function"]
    function: CalledFunction


class AssistantMessage(BaseModel):
    role: Literal["assistant"]
    content: str | None
    refusal: None
    tool_calls: list[CompletionToolCall] | None = None


class Choice(BaseModel):
    index: int
    message: AssistantMessage
    finish_reason: Literal["stop", "length", "tool_calls"]
    logprobs: None


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"]
    created: int
    model: str
    choices: list[Choice]
    usage: CompletionUsage
    system_fingerprint: None


class ModelCard(BaseModel):
    id: str
    object: Literal["model"]
    created: int
    owned_by: str


class ModelList(BaseModel):
    object: Literal["list"]
    data: list[ModelCard]


class EmbeddingItem(BaseModel):
    object: Literal["embedding"]
    index: int
    embedding: list[float] | str  # a base64 string of little-endian float32 when asked


class EmbeddingUsage(BaseModel):
    prompt_tokens: int
    total_tokens: int


class EmbeddingList(BaseModel):
    object: Literal["list"]
    data: list[EmbeddingItem]
    model: str
    usage: EmbeddingUsage


def usage_body(usage: Usage) -> dict[str, int]:
    return {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.prompt_tokens + usage.completion_tokens}


def tool_calls_body(calls: list[ToolCall]) -> list[dict[str, Any]]:
    return [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
            for c in calls]


def completion_body(result: TurnResult, completion_id: str, created: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": result.text, "refusal": None}
    if result.calls:
        message["content"] = result.text or None
        message["tool_calls"] = tool_calls_body(result.calls)
    return {
        "id": completion_id, "object": "chat.completion", "created": created, "model": result.model or MODEL_ID,
        "choices": [{"index": 0, "message": message, "finish_reason": FINISH.get(result.stop_reason, "stop"),
                     "logprobs": None}],
        "usage": usage_body(result.usage), "system_fingerprint": None,
    }


class ChunkMaker:
    """The chunks of one streamed completion: same id, creation time and model on each. With
    ``include_usage``, every chunk before the usage chunk says ``"usage": null``, as OpenAI's do (some clients
    read the key on each chunk)."""

    def __init__(self, completion_id: str, model: str, include_usage: bool = False):
        self.completion_id, self.model, self.created = completion_id, model, int(time.time())
        self.include_usage = include_usage

    def delta(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        chunk = self._chunk([{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}])
        return {**chunk, "usage": None} if self.include_usage else chunk

    def usage(self, usage: Usage) -> dict[str, Any]:
        """The extra last chunk of ``stream_options.include_usage``: no choices, the turn's usage."""
        return {**self._chunk([]), "usage": usage_body(usage)}

    def _chunk(self, choices: list[dict[str, Any]]) -> dict[str, Any]:
        return {"id": self.completion_id, "object": "chat.completion.chunk", "created": self.created,
                "model": self.model, "system_fingerprint": None, "choices": choices}


def streamed_calls(calls: list[ToolCall]) -> dict[str, Any]:
    """A delta carrying whole tool calls (each with its index, as the clients assemble them)."""
    return {"tool_calls": [{"index": i, **call} for i, call in enumerate(tool_calls_body(calls))]}


def embedding_value(vector: list[float], encoding: str) -> list[float] | str:
    if encoding == "base64":
        return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")
    return vector


def model_card(model_id: str, created: int) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": created, "owned_by": "picoora"}
