"""The JSON API: health, readiness, chat (JSON or SSE), sessions, their models, memory, traces.

Each route under ``/v1`` acts as the caller (``auth.caller``: the owner for the gateway token, a person for
their API token): their turns, their sessions, their memories, their traces, never anyone else's."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from picoora.gateway.auth import caller_if_any, require_token
from picoora.gateway.channels.links import Inbound
from picoora.gateway.errors import ERROR_RESPONSES, ApiError, ErrorResponse
from picoora.gateway.limits import check_message_size
from picoora.gateway.runtime.turns import outcome_of
from picoora.gateway.schemas import (
    SESSION_KEY,
    ChatRequest,
    ChatResponse,
    Deleted,
    Health,
    HistoryEntry,
    MemoryAdded,
    MemoryIn,
    MemoryList,
    MemorySearch,
    ModelBody,
    ModelInfo,
    Ready,
    ReadyCheck,
    SessionHistory,
    SessionInfo,
    Stopped,
)
from picoora.gateway.sse import KEEPALIVE, SSE_HEADERS, TurnEvents, frame
from picoora.gateway.state import caller_of, gateway_of, person_assistant, result_of, submit_turn, turns_of
from picoora.gateway.timing import server_timing
from picoora.identities import Person  # at run time: FastAPI reads the dependencies' annotations
from picoora.store.base import Provenance, time_to_json
from picoora.store.until import parse_until

if TYPE_CHECKING:
    import asyncio

    from picoora.agent import TurnResult
    from picoora.gateway.runtime.envelopes import TurnOutcome

public = APIRouter(responses=ERROR_RESPONSES)
api = APIRouter(prefix="/v1", dependencies=[Depends(require_token)], responses=ERROR_RESPONSES)

SessionKey = Path(pattern=SESSION_KEY, description="a session key as listed, e.g. web:abc")


@public.get("/health", response_model=Health, tags=["service"])
async def health(request: Request) -> Health:
    """Liveness: the process answers. Needs no token."""
    from picoora import __version__

    return Health(status="ok", version=__version__, uptime_seconds=round(gateway_of(request).uptime, 3))


@public.get("/ready", response_model=Ready, tags=["service"],
            responses={503: {"model": Ready, "description": "a check failed (named in checks, for a token's holder)"}})
async def ready(request: Request, person: Person | None = Depends(caller_if_any)) -> Any:
    """200 when the store, the model (pulled, on Ollama) and every channel work; 503 naming the failing check.
    Without the owner's token (a load balancer's health check, a guest's token) the status alone:
    ``{"ready": ..., "checks": []}``."""
    from picoora.gateway.readiness import run_checks

    gateway = gateway_of(request)
    owner = person is not None and person.owner  # what is broken, and where, is the owner's business alone
    if gateway.assistant is None or gateway.runtime is None or not gateway.runtime.turns.accepting:
        stopping = [ReadyCheck(name="gateway", ok=False, detail="shutting down")] if owner else []
        return JSONResponse(Ready(ready=False, checks=stopping).model_dump(), status_code=503)
    if not owner:
        ok = await request.app.state.ready.ready(gateway.assistant, gateway.runtime.channels)
        return JSONResponse(Ready(ready=ok, checks=[]).model_dump(), status_code=200 if ok else 503)
    checks = await run_checks(gateway.assistant, gateway.runtime.channels)
    body = Ready(ready=all(c.ok for c in checks), checks=checks)
    return JSONResponse(body.model_dump(), status_code=200 if body.ready else 503)


# -- chat ---------------------------------------------------------------------------------------------

@api.post("/chat", tags=["chat"], response_model=ChatResponse,
          responses={200: {"content": {"text/event-stream": {}},
                           "description": "the answer, or with stream/Accept: text/event-stream the turn's events"}})
async def chat(body: ChatRequest, request: Request, response: Response) -> Any:
    """One turn in session ``web:<session_id>``. A client that disconnects does not cancel the turn.
    The JSON answer's ``Server-Timing`` header says how long the turn took (``turn``) and the whole request
    inside the gateway (``app``), in milliseconds."""
    gateway = gateway_of(request)
    check_message_size(body.text, gateway.config.gateway.max_message_chars)
    inbound = Inbound("web", body.session_id, body.text)
    if body.stream or "text/event-stream" in request.headers.get("accept", ""):
        sink = TurnEvents()
        task = submit_turn(request, inbound, sink)
        sink.follow(task)
        return StreamingResponse(_event_stream(sink, task), media_type="text/event-stream", headers=SSE_HEADERS)
    started = time.perf_counter()
    result = result_of(await outcome_of(submit_turn(request, inbound)))
    response.headers["Server-Timing"] = server_timing(request, started)
    return _chat_response(inbound.session, result)


async def _event_stream(sink: TurnEvents, task: asyncio.Task[TurnOutcome]) -> AsyncIterator[bytes]:
    finished = False
    async for event in sink.events(task):
        if event is None:
            yield KEEPALIVE
            continue
        finished = event.type == "final_answer"
        yield frame(event.to_dict(), event=event.type, event_id=f"{event.turn_id}:{event.seq}")
    if finished:
        return
    outcome = task.result() if task.done() and not task.cancelled() else None
    if outcome is not None and outcome.status == "stopped_by_user":  # POST .../stop, or /stop from another chat
        yield frame({"type": "stopped", "message": outcome.error}, event="stopped")
    else:  # the turn broke outside the loop (logged by the turn service) or was cut off
        yield frame({"type": "error", "message": "the turn failed; the gateway log says why"}, event="error")


def _chat_response(session_key: str, result: TurnResult) -> ChatResponse:
    return ChatResponse(session_key=session_key, turn_id=result.turn_id, text=result.text,
                        stop_reason=result.stop_reason, iterations=result.iterations, tool_calls=result.tool_calls)


# -- sessions -----------------------------------------------------------------------------------------

@api.get("/sessions", response_model=list[SessionInfo], tags=["sessions"])
async def list_sessions(request: Request) -> list[SessionInfo]:
    async with person_assistant(request) as assistant:
        sessions = await assistant.sessions()
    return [SessionInfo(key=s.key, messages=len(s.messages), summary=s.summary,
                        created_at=time_to_json(s.created_at), updated_at=time_to_json(s.updated_at))
            for s in sessions]


@api.get("/sessions/{key}", response_model=SessionHistory, tags=["sessions"])
async def session_history(request: Request, key: str = SessionKey,
                          limit: int | None = Query(None, ge=1, le=10_000)) -> SessionHistory:
    """The session's transcript (every message as recorded), oldest first; ``limit``: the last ones."""
    async with person_assistant(request) as assistant:
        entries = await assistant.history(key, limit)
    return SessionHistory(key=key, entries=[
        HistoryEntry(seq=e.seq, created_at=time_to_json(e.created_at), message=e.message.to_dict()) for e in entries])


@api.delete("/sessions/{key}", response_model=Deleted, tags=["sessions"])
async def reset_session(request: Request, key: str = SessionKey) -> Deleted:
    """Start the session afresh: its history goes from the model's view; the transcript and memories stay."""
    async with person_assistant(request) as assistant:
        await assistant.new_session(key)
    return Deleted(deleted=key)


@api.post("/sessions/{key}/stop", response_model=Stopped, tags=["sessions"])
async def stop_turn(request: Request, key: str = SessionKey) -> Stopped:
    """Cancel the turn the caller's session is running now (the web chat's Stop, a chat's ``/stop``); its
    messages are kept, marked cancelled. ``stopped`` is false when the session runs no turn."""
    person = caller_of(request)
    return Stopped(session_key=key, stopped=turns_of(request).stop("" if person.owner else person.name, key))


@api.get("/sessions/{key}/model", response_model=ModelInfo, tags=["sessions"])
async def get_session_model(request: Request, key: str = SessionKey) -> ModelInfo:
    async with person_assistant(request) as assistant:
        choice = await assistant.session_model(key)
    return ModelInfo(provider=choice.provider, model=choice.model)


@api.put("/sessions/{key}/model", response_model=ModelInfo, tags=["sessions"],
         responses={403: {"model": ErrorResponse, "description": "a person other than the owner"}})
async def put_session_model(body: ModelBody, request: Request, key: str = SessionKey) -> ModelInfo:
    """Use another model for this session from its next turn on; 400 (nothing changed) when it cannot answer.
    Only the owner chooses models (what runs, and what it costs, is theirs): 403 for anyone else."""
    _owner_only(request)
    async with person_assistant(request) as assistant:
        choice = await assistant.set_session_model(key, body.model, body.provider)
    return ModelInfo(provider=choice.provider, model=choice.model)


@api.delete("/sessions/{key}/model", response_model=ModelInfo, tags=["sessions"],
            responses={403: {"model": ErrorResponse, "description": "a person other than the owner"}})
async def forget_session_model(request: Request, key: str = SessionKey) -> ModelInfo:
    """Forget the session's choice: the configured default answers from its next turn on (``/model default``)."""
    _owner_only(request)
    async with person_assistant(request) as assistant:
        choice = await assistant.reset_session_model(key)
    return ModelInfo(provider=choice.provider, model=choice.model)


def _owner_only(request: Request) -> None:
    if not caller_of(request).owner:
        raise ApiError(403, "forbidden", "only the owner chooses a session's model; yours follow the configured one")


# -- memory and traces --------------------------------------------------------------------------------

@api.get("/memory", tags=["memory"], response_model=MemorySearch | MemoryList)
async def memory(request: Request, q: str | None = Query(None, max_length=2000, description="search by meaning"),
                 limit: int = Query(20, ge=1, le=500),
                 everything: bool = Query(False, alias="all", description="also superseded and expired")) -> Any:
    """With ``q``: semantic search with scores (recalling here does not count as an access). Without: the list
    of current memories (``all``: also those superseded or expired)."""
    async with person_assistant(request) as assistant:
        if q is not None and q.strip():
            found = await assistant.recall(q, limit)
            return MemorySearch(query=q, degraded=found.degraded, note=found.note, matches=[
                {"memory": m.memory.to_json(), "score": m.score, "similarity": m.similarity} for m in found.matches])
        listed = await assistant.memories(limit if everything else None)
        return MemoryList(memories=[m.to_json() for m in listed if everything or m.is_current()][:limit])


@api.post("/memory", response_model=MemoryAdded, tags=["memory"])
async def add_memory(body: MemoryIn, request: Request) -> MemoryAdded:
    check_message_size(body.content, gateway_of(request).config.gateway.max_message_chars)
    try:
        until = parse_until(body.until) if body.until else None
    except ValueError as exc:
        raise ApiError(400, "invalid_request", str(exc), param="until") from None
    async with person_assistant(request) as assistant:
        added = await assistant.remember(body.content, body.importance, body.category, expires_at=until,
                                         provenance=Provenance(how="by hand", person=assistant.person or "owner",
                                                               session="http"))
    return MemoryAdded(memory=added.memory.to_json(), created=added.created,
                       replaced=[m.to_json() for m in added.replaced])


@api.delete("/memory/{memory_id}", response_model=Deleted, tags=["memory"])
async def forget(request: Request, memory_id: str = Path(max_length=128)) -> Deleted:
    async with person_assistant(request) as assistant:
        forgotten = await assistant.forget(memory_id)
    if not forgotten:
        raise ApiError(404, "not_found", f"no memory {memory_id!r}")
    return Deleted(deleted=memory_id)


@api.get("/traces/{turn_id}", tags=["traces"])
async def trace(request: Request, turn_id: str = Path(pattern=r"^[A-Za-z0-9_-]{1,64}$")) -> dict[str, Any]:
    """What the turn did: model, usage, latency, the memories recalled with their scores, the tool calls."""
    async with person_assistant(request) as assistant:
        found = await assistant.trace(turn_id=turn_id)
    if found is None:
        raise ApiError(404, "not_found", f"no trace of turn {turn_id!r} (traces off, or an unknown turn)")
    return found.to_json()

