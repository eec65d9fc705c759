"""The OpenAI-compatible endpoint: ``POST /v1/chat/completions`` (streaming and not) and ``GET /v1/models``.

The assistant keeps each conversation itself, so a request is one turn: its last user message is what
the user says; the earlier messages (which an OpenAI client re-sends every time) and the client's system
message are not replayed, because the session already holds that history and the assistant's own prompt
applies. The session is ``openai:<X-Session-Id header>``, else ``openai:<user field>``, else
``openai:default``. The ``model`` field is not a switch: the session's model answers (change it with
``PUT /v1/sessions/{key}/model``); responses name the model ``picoora``."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Literal

from fastapi import APIRouter, Depends, Header, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from picoora.agent.events import FinalAnswer, ReasoningEvent, TokenEvent
from picoora.gateway.auth import require_token
from picoora.gateway.errors import ERROR_RESPONSES, ApiError
from picoora.gateway.limits import check_message_size
from picoora.gateway.runtime.envelopes import Inbound
from picoora.gateway.runtime.turns import outcome_of
from picoora.gateway.sse import KEEPALIVE, SSE_HEADERS, TurnEvents, frame
from picoora.gateway.state import gateway_of, result_of, submit_turn

if TYPE_CHECKING:
    import asyncio

    from picoora.gateway.runtime.envelopes import TurnOutcome

MODEL_ID = "picoora"
_FINISH = {"answer": "stop", "max_iterations": "length", "time_limit": "length"}

router = APIRouter(prefix="/v1", dependencies=[Depends(require_token)], responses=ERROR_RESPONSES, tags=["openai"])


class TextPart(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str
    text: str | None = None


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")  # name, tool_calls, ... are accepted and not used
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[TextPart] | None = None


class CompletionRequest(BaseModel):
    model_config = ConfigDict(extra="allow")  # temperature, max_tokens, ...: the assistant's settings apply
    model: str = MODEL_ID
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    user: str | None = Field(None, max_length=128)


@router.get("/models")
async def models() -> dict[str, Any]:
    return {"object": "list", "data": [{"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "picoora"}]}


@router.post("/chat/completions", responses={200: {"content": {"text/event-stream": {}}}})
async def chat_completions(body: CompletionRequest, request: Request,
                           x_session_id: str | None = Header(None, max_length=128)) -> Any:
    text = _last_user_text(body.messages)
    check_message_size(text, gateway_of(request).config.gateway.max_message_chars)
    inbound = Inbound("openai", _session_id(x_session_id or body.user or "default"), text)
    completion_id = "chatcmpl-" + uuid.uuid4().hex[:24]
    if body.stream:
        sink = TurnEvents()
        task = submit_turn(request, inbound, sink)
        sink.follow(task)
        return StreamingResponse(_chunks(sink, task, completion_id), media_type="text/event-stream",
                                 headers=SSE_HEADERS)
    result = result_of(await outcome_of(submit_turn(request, inbound)))
    if result.stop_reason == "error":
        raise ApiError(502, "model_error", result.text)
    return {
        "id": completion_id, "object": "chat.completion", "created": int(time.time()), "model": MODEL_ID,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": result.text},
                     "finish_reason": _FINISH.get(result.stop_reason, "stop")}],
    }


def _last_user_text(messages: list[ChatMessage]) -> str:
    for message in reversed(messages):
        if message.role != "user":
            continue
        if isinstance(message.content, str):
            text = message.content
        else:
            parts = message.content or []
            if any(p.type != "text" for p in parts):
                raise ApiError(400, "unsupported_content", "only text content is supported (no images or files)")
            text = "\n".join(p.text or "" for p in parts)
        if text.strip():
            return text
        raise ApiError(400, "invalid_request", "the last user message is empty")
    raise ApiError(400, "invalid_request", "messages holds no user message: the last one is the turn")


def _session_id(raw: str) -> str:
    """A client's id as a session id: characters outside the session alphabet become '_'."""
    return re.sub(r"[^A-Za-z0-9._@-]", "_", raw)[:128]


async def _chunks(sink: TurnEvents, task: asyncio.Task[TurnOutcome], completion_id: str) -> AsyncIterator[bytes]:
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return frame({"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": MODEL_ID,
                      "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    yield chunk({"role": "assistant", "content": ""})
    streamed = False
    async for event in sink.events(task):
        if event is None:
            yield KEEPALIVE
        elif isinstance(event, TokenEvent):
            streamed = True
            yield chunk({"content": event.text})
        elif isinstance(event, ReasoningEvent):
            yield chunk({"reasoning_content": event.text})
        elif isinstance(event, FinalAnswer):
            if event.stop_reason == "error":  # the openai client raises this as an APIError
                yield frame({"error": {"type": "model_error", "message": event.text}})
            else:
                if not streamed and event.text:  # a provider that did not stream: the answer in one piece
                    yield chunk({"content": event.text})
                yield chunk({}, _FINISH.get(event.stop_reason, "stop"))
            break
    else:
        yield frame({"error": {"type": "internal_error", "message": "the turn failed; the gateway log says why"}})
    yield frame("[DONE]")
