"""The routes of the OpenAI-compatible endpoint (see ``picoora.gateway.openai``).

A completion is one turn through the turn service, on the conversation the request carries
(``requests.to_conversation``). A turn that failed on the model is 502 with ``x-should-retry: false``:
the provider was already retried by picoora's own policy, so the SDKs' retries would only repeat the
failure (and a retry that still comes is answered from ``replays`` without a new turn).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Depends, Header, Request
from fastapi.responses import Response, StreamingResponse

from picoora.agent.events import FinalAnswer, ReasoningEvent, TokenEvent, TurnStarted
from picoora.gateway.auth import require_token
from picoora.gateway.channels.links import Inbound
from picoora.gateway.errors import ERROR_RESPONSES, ApiError, ErrorResponse
from picoora.gateway.limits import check_message_size
from picoora.gateway.openai import responses as out
from picoora.gateway.openai.items import ResponsesRequest, as_completion_request
from picoora.gateway.openai.replays import Replays, digest
from picoora.gateway.openai.requests import (
    AGENT_MODEL_ID,
    MODEL_ID,
    CompletionRequest,
    EmbeddingRequest,
    conversation_key,
    to_conversation,
)
from picoora.gateway.openai.response_objects import EventWriter, ResponseMaker
from picoora.gateway.runtime.turns import outcome_of
from picoora.gateway.sse import KEEPALIVE, SSE_HEADERS, TurnEvents, frame
from picoora.gateway.state import (
    assistant_of,
    caller_of,
    gateway_of,
    person_assistant,
    result_of,
    submit_turn,
    turns_of,
)
from picoora.gateway.timing import server_timing
from picoora.llm.base import LLMError
from picoora.store.base import NoEmbedder

if TYPE_CHECKING:
    from picoora.agent.conversation import ClientConversation
    from picoora.gateway.runtime.envelopes import TurnOutcome
    from picoora.llm.pool import ModelChoice

NO_RETRY = {"x-should-retry": "false"}  # the OpenAI SDKs (Python and Node) honour it
TURN_ERRORS: dict[int | str, dict[str, Any]] = {
    422: {"model": ErrorResponse, "description": "An Idempotency-Key sent again with another body"},
    502: {"model": ErrorResponse, "description": "The model failed (already retried by picoora: do not retry)"}}

CONTEXT_FULL = "context_length_exceeded"  # OpenAI's code for a request over the model's context window
CONTEXT_FULL_EVENT = "invalid_prompt"  # the same in a streamed response's ``response.failed`` (the spec's codes)

router = APIRouter(prefix="/v1", dependencies=[Depends(require_token)], responses=ERROR_RESPONSES, tags=["openai"])


class EndpointState:
    """What the endpoint keeps between requests: replays, and the models found usable."""

    def __init__(self) -> None:
        self.replays = Replays()
        self.usable: set[ModelChoice] = set()
        self.created = int(time.time())  # the models' ``created``: when this endpoint began serving them


def _state(request: Request) -> EndpointState:
    state: EndpointState = request.app.state.openai  # made with the app (create_app)
    return state


@router.get("/models", response_model=out.ModelList)
async def models(request: Request) -> dict[str, Any]:
    """``picoora`` (the session's model), ``picoora-agent`` (the same with picoora's tools) and the configured
    default model."""
    default, created = assistant_of(request).models.default, _state(request).created
    return {"object": "list", "data": [out.model_card(name, created) for name in (MODEL_ID, AGENT_MODEL_ID,
                                                                                  default.model)]}


@router.get("/models/{model_id:path}", response_model=out.ModelCard)
async def model(model_id: str, request: Request) -> dict[str, Any]:
    await _model_choice(request, model_id)
    return out.model_card(model_id, _state(request).created)


@dataclass
class _StartedTurn:
    task: asyncio.Task[TurnOutcome]
    id: str  # the completion's or response's, the same for a replay
    created: int
    sink: TurnEvents | None  # the turn's events, for a new streamed turn (a replay has none)


async def _start_turn(request: Request, body: CompletionRequest, id_prefix: str, session_header: str | None,
                      idempotency_key: str | None, agent_header: str | None) -> _StartedTurn:
    """The request's turn: started (its events followed when streamed), or the earlier one it repeats."""
    conversation = to_conversation(body, await _model_choice(request, body.model), agent=_opted_in(agent_header))
    limit = gateway_of(request).config.gateway.max_message_chars
    check_message_size("".join(m.content for m in conversation.new), limit)
    session = conversation_key(body, session_header)
    await _check_options(request, conversation, session)
    replays, raw = _state(request).replays, await request.body()
    key = Replays.key(caller_of(request).name, session, idempotency_key, raw)
    replay = replays.find(key)
    if replay is not None and replay.body != digest(raw):
        raise ApiError(422, "invalid_request", "this Idempotency-Key was sent with another body: a retry sends the "
                       "same body, a new request a new key", code="idempotency_key_reused")
    if replay is not None:
        return _StartedTurn(replay.task, replay.completion_id, replay.created, None)
    inbound = Inbound("openai", session.removeprefix("openai:"), conversation.query, session_key=session,
                      conversation=conversation)
    sink = TurnEvents() if body.stream else None
    task = submit_turn(request, inbound, sink)
    started = _StartedTurn(task, id_prefix + uuid.uuid4().hex[:24], int(time.time()), sink)
    replays.keep(key, task, started.id, started.created, raw)
    if sink is not None:
        sink.follow(task, on_leave=lambda: _stop_left_turn(request, task, key))
    return started


def _stop_left_turn(request: Request, task: asyncio.Task[TurnOutcome], key: tuple[str, str]) -> None:
    """The client left its stream before the answer (Ctrl+C in aider, Stop in a UI): stop the turn as the web
    chat's Stop does, so a local model is not kept busy for an answer nobody reads."""
    if turns_of(request).stop_turn(task):
        _state(request).replays.forget(key, task)


@router.post("/chat/completions", response_model=out.ChatCompletion,
             responses={**TURN_ERRORS, 200: {"content": {"text/event-stream": {}},
                                              "description": "The completion, or its chunks when streamed"}})
async def chat_completions(body: CompletionRequest, request: Request, response: Response,
                           x_session_id: str | None = Header(None, max_length=128),
                           idempotency_key: str | None = Header(None, max_length=256),
                           x_picoora_agent: str | None = Header(None, max_length=8)) -> Any:
    started = time.perf_counter()
    turn = await _start_turn(request, body, "chatcmpl-", x_session_id, idempotency_key, x_picoora_agent)
    if body.stream:
        if turn.sink is not None:
            return _stream(_chunks(turn.sink, turn.task, turn.id, body.include_usage))
        return _stream(_replayed_chunks(turn.task, turn.id, body.include_usage))
    result = _answered(await outcome_of(turn.task))
    response.headers["Server-Timing"] = server_timing(request, started)
    return out.completion_body(result, turn.id, turn.created)


@router.post("/responses", responses={**TURN_ERRORS, 200: {
    "content": {"text/event-stream": {}}, "description": "The response, or its events when streamed"}})
async def responses(body: ResponsesRequest, request: Request, response: Response,
                    x_session_id: str | None = Header(None, max_length=128),
                    idempotency_key: str | None = Header(None, max_length=256),
                    x_picoora_agent: str | None = Header(None, max_length=8)) -> Any:
    """OpenAI's Responses API, stateless: ``input`` carries the conversation (``picoora.gateway.openai.items``)."""
    started = time.perf_counter()
    turn = await _start_turn(request, as_completion_request(body), "resp_", x_session_id, idempotency_key,
                             x_picoora_agent)
    maker = ResponseMaker(body, turn.id, turn.created)
    if body.stream:
        return _stream(_response_events(EventWriter(maker), turn))
    result = _answered(await outcome_of(turn.task))
    maker.model = result.model or MODEL_ID
    response.headers["Server-Timing"] = server_timing(request, started)
    return maker.finished(result.stop_reason, result.text, result.calls, result.usage)


@router.post("/embeddings", response_model=out.EmbeddingList)
async def embeddings(body: EmbeddingRequest, request: Request) -> dict[str, Any]:
    """The store's embedder (the one memories are embedded with) over ``input``."""
    from picoora.agent.tokens import estimate_tokens

    texts = [body.input] if isinstance(body.input, str) else body.input
    if not all(texts):
        raise ApiError(400, "invalid_request", "input holds an empty string", param="input")
    limit = gateway_of(request).config.gateway.max_message_chars
    check_message_size("".join(texts), limit)
    try:
        embedded = await assistant_of(request).astore.memories.embed_texts(texts)
    except NoEmbedder as exc:  # as OpenAI says it of a model it does not have
        raise ApiError(404, "model_not_found", f"no embedding model here: {exc}", param="model",
                       code="model_not_found") from exc
    if body.dimensions is not None and embedded.vectors and body.dimensions != len(embedded.vectors[0]):
        raise ApiError(400, "invalid_request", f"{embedded.model} makes {len(embedded.vectors[0])}-dimensional "
                       "vectors; dimensions cannot change that", param="dimensions", code="unsupported_value")
    tokens = sum(estimate_tokens(text) for text in texts)
    return {"object": "list", "model": embedded.model, "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            "data": [{"object": "embedding", "index": i, "embedding": out.embedding_value(v, body.encoding_format)}
                     for i, v in enumerate(embedded.vectors)]}


async def _model_choice(request: Request, name: str) -> ModelChoice | None:
    """The model a request names: None for ``picoora`` (the session's model), else that model, checked
    once per process (404 ``model_not_found`` when it cannot answer, as OpenAI says it)."""
    from picoora.llm import PROVIDERS
    from picoora.llm.pool import ModelChoice

    if name in ("", MODEL_ID, AGENT_MODEL_ID):
        return None
    if not caller_of(request).owner:  # as PUT /v1/sessions/{key}/model: models cost the owner
        raise ApiError(403, "forbidden", "only the owner chooses the model: send model 'picoora'", param="model",
                       code="model_not_allowed")
    assistant = assistant_of(request)
    provider, _, model_name = name.partition("/")
    choice = ModelChoice(provider, model_name) if provider in PROVIDERS and model_name else \
        ModelChoice(assistant.models.default.provider, name)
    usable = _state(request).usable
    if choice not in usable:
        try:
            await assistant.check_model(choice)
        except LLMError as exc:
            raise ApiError(404, "model_not_found", f"{exc} (the model 'picoora' is always the session's own)",
                           param="model", code="model_not_found") from exc
        usable.add(choice)
    return choice


async def _check_options(request: Request, conversation: ClientConversation, session: str) -> None:
    """400 for a parameter the answering model's provider cannot honour, before any turn starts."""
    from picoora.llm import unsupported_options

    async with person_assistant(request) as assistant:
        choice = conversation.model or await assistant.session_model(session)
    refused = unsupported_options(choice.provider, conversation.options)
    if refused is not None:
        param, why = refused
        raise ApiError(400, "invalid_request", f"{choice.label} cannot honour '{param}': {why}", param=param,
                       code="unsupported_parameter")
    if any(m.images for m in (*conversation.history, *conversation.new)):
        async with assistant_of(request).models.lease(choice) as llm:
            sees = await llm.sees_images()
        if not sees:
            raise ApiError(400, "unsupported_content", f"{choice.label} cannot look at pictures: name a vision "
                           "model (for Ollama, e.g. qwen2.5vl or llava)", param="messages", code="unsupported_content")


def _opted_in(header: str | None) -> bool:
    """``X-Picoora-Agent: 1`` (or true, yes): the client wants picoora's agent, its tools and rules."""
    return (header or "").strip().lower() in ("1", "true", "yes")


def _answered(outcome: TurnOutcome) -> Any:
    result = result_of(outcome)
    if result.stop_reason == "error" and result.context_full:  # OpenAI's overflow: litellm, aider trim on it
        raise ApiError(400, "invalid_request", result.text, param="messages", code=CONTEXT_FULL)
    if result.stop_reason == "error":
        raise ApiError(502, "model_error", result.text, NO_RETRY)
    if result.stop_reason == "refused":
        raise ApiError(400, "invalid_request", result.text, param=result.param, code="unsupported_parameter")
    return result


async def _context_full(task: asyncio.Task[TurnOutcome]) -> bool:
    """Whether the turn failed for want of room in the context window (its result follows its last event)."""
    result = (await outcome_of(task)).result
    return result is not None and result.context_full


def _stream(chunks: AsyncIterator[bytes]) -> StreamingResponse:
    return StreamingResponse(chunks, media_type="text/event-stream", headers=SSE_HEADERS)


async def _chunks(sink: TurnEvents, task: asyncio.Task[TurnOutcome], completion_id: str,
                  include_usage: bool) -> AsyncIterator[bytes]:
    maker: out.ChunkMaker | None = None
    streamed = False
    async for event in sink.events(task):
        if event is None:
            yield KEEPALIVE
            continue
        if maker is None:  # the first event (TurnStarted) names the model
            maker = out.ChunkMaker(completion_id, getattr(event, "model", "") or MODEL_ID, include_usage)
            yield frame(maker.delta({"role": "assistant", "content": ""}))
        if isinstance(event, TokenEvent):
            streamed = True
            yield frame(maker.delta({"content": event.text}))
        elif isinstance(event, ReasoningEvent):
            yield frame(maker.delta({"reasoning_content": event.text}))
        elif isinstance(event, FinalAnswer):
            async for chunk in _closing(maker, event, streamed, task, include_usage):
                yield chunk
            return
    yield _error_frame(await outcome_of(task))
    yield frame("[DONE]")


async def _closing(maker: out.ChunkMaker, final: FinalAnswer, streamed: bool, task: asyncio.Task[TurnOutcome],
                   include_usage: bool) -> AsyncIterator[bytes]:
    """The end of a stream: the answer's rest, its tool calls, the finish reason, the usage, [DONE]."""
    if final.stop_reason in ("error", "refused"):  # the openai client raises this as an APIError
        code = CONTEXT_FULL if await _context_full(task) else None
        yield frame({"error": {"message": final.text, "type": "model_error" if final.stop_reason == "error"
                               and code is None else "invalid_request", "param": None, "code": code}})
    else:
        if not streamed and final.text:  # a provider that did not stream: the answer in one piece
            yield frame(maker.delta({"content": final.text}))
        if final.calls:
            yield frame(maker.delta(out.streamed_calls(final.calls)))
        yield frame(maker.delta({}, out.FINISH.get(final.stop_reason, "stop")))
        if include_usage:
            outcome = await outcome_of(task)
            if outcome.result is not None:
                yield frame(maker.usage(outcome.result.usage))
    yield frame("[DONE]")


async def _response_events(writer: EventWriter, turn: _StartedTurn) -> AsyncIterator[bytes]:
    """A streamed response's events (``response_objects``); a replay's, told in one piece once it is done."""
    streamed = False
    events = turn.sink.events(turn.task) if turn.sink is not None else _no_events()
    async for event in events:
        if event is None:
            yield KEEPALIVE
        elif isinstance(event, TurnStarted):
            writer.maker.model = event.model or MODEL_ID
            for opening in writer.opening():
                yield _event_frame(opening)
        elif isinstance(event, TokenEvent):
            streamed = True
            for delta in writer.text_delta(event.text):
                yield _event_frame(delta)
        elif isinstance(event, FinalAnswer) and event.stop_reason in ("error", "refused"):
            code = CONTEXT_FULL_EVENT if await _context_full(turn.task) else None
            yield _event_frame(writer.failed(event.text, code or ("server_error" if event.stop_reason == "error"
                                                                  else "invalid_request")))
            return
    outcome = await outcome_of(turn.task)
    result = outcome.result
    if writer.sequence == 0:  # a replay, or a turn that failed before it started: nothing was told yet
        writer.maker.model = (result.model if result else "") or MODEL_ID
        for opening in writer.opening():
            yield _event_frame(opening)
    if result is None or result.stop_reason in ("error", "refused"):
        yield _event_frame(writer.failed(result.text if result else outcome.error or "the turn failed",
                                         CONTEXT_FULL_EVENT if result and result.context_full else "server_error"))
        return
    for closing in writer.closing(result.stop_reason, "" if streamed else result.text, result.calls, result.usage):
        yield _event_frame(closing)


async def _no_events() -> AsyncIterator[None]:
    return
    yield


def _event_frame(event: dict[str, Any]) -> bytes:
    return frame(event, event=event["type"])


async def _replayed_chunks(task: asyncio.Task[TurnOutcome], completion_id: str,
                           include_usage: bool) -> AsyncIterator[bytes]:
    """A retried stream: the first request's turn, told in one piece once it is done."""
    outcome = await outcome_of(task)
    result = outcome.result
    if result is None:
        yield _error_frame(outcome)
        yield frame("[DONE]")
        return
    maker = out.ChunkMaker(completion_id, result.model or MODEL_ID, include_usage)
    yield frame(maker.delta({"role": "assistant", "content": ""}))
    final = FinalAnswer("", result.text, stop_reason=result.stop_reason, calls=result.calls)
    async for chunk in _closing(maker, final, False, task, include_usage):
        yield chunk


def _error_frame(outcome: TurnOutcome) -> bytes:
    message = outcome.error or "the turn failed; the gateway log says why"
    return frame({"error": {"message": message, "type": "internal_error", "param": None, "code": None}})
