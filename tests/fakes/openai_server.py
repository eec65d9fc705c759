"""A scripted OpenAI-compatible API (what vLLM, llama.cpp's server, Groq, OpenRouter... speak).

``/v1/chat/completions`` answers one JSON, or SSE when ``stream`` is true (content in several
chunks, ``reasoning_content`` deltas, tool-call deltas by index with the arguments split in two,
a usage chunk when ``stream_options.include_usage``); ``/v1/models`` lists the models. A Reply with
a non-200 status answers OpenAI's error shape with its headers (e.g. ``Retry-After``).

Standalone: ``python -m tests.fakes.openai_server [--port N]``; point clients at ``<url>/v1``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Sequence
from typing import Any

from tests.fakes._http import (
    Exchange,
    FakeServer,
    Reply,
    Responder,
    halves,
    rough_tokens,
    serve_until_killed,
    word_chunks,
)

__all__ = ["FakeOpenAI", "Reply", "Responder"]

CREATED = 1_767_225_600
ERROR_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 404: "invalid_request_error",
               429: "rate_limit_exceeded"}


class FakeOpenAI(FakeServer):
    def __init__(
        self,
        replies: list[Reply] | None = None,
        responder: Responder | None = None,
        models: Sequence[str] | None = None,  # None: any model name is served
        delay: float = 0.0,
        port: int = 0,
    ):
        super().__init__(replies, responder, delay, port)
        self.models = list(models) if models is not None else None

    def route(self, exchange: Exchange) -> None:
        if (exchange.method, exchange.path) == ("POST", "/v1/chat/completions"):
            self._chat(exchange)
        elif (exchange.method, exchange.path) == ("GET", "/v1/models"):
            names = self.models or ["fake-model"]
            data = [{"id": m, "object": "model", "created": CREATED, "owned_by": "fake"} for m in names]
            exchange.send_json(200, {"object": "list", "data": data})
        else:
            _send_error(exchange, 404, f"no route {exchange.method} {exchange.path}", code="not_found")

    def _chat(self, exchange: Exchange) -> None:
        self.record(exchange)
        model = str(exchange.body.get("model") or "")
        if self.models is not None and model not in self.models:
            _send_error(exchange, 404, f"The model `{model}` does not exist", code="model_not_found")
            return
        wrong = _bad_content(exchange.body.get("messages") or [])
        if wrong:
            _send_error(exchange, 400, wrong, code="invalid_value")
            return
        reply = self.next_reply(exchange.body)
        if reply.status != 200:
            _send_error(exchange, reply.status, reply.error, reply.error_code, reply.error_param, reply.headers)
            return
        ids = reply.call_ids or [f"call_{i}" for i in range(len(reply.tool_calls))]
        calls = [(ids[i], name, _as_json(args)) for i, (name, args) in enumerate(reply.tool_calls)]
        finish = "tool_calls" if calls else "stop"
        usage = {
            "prompt_tokens": rough_tokens(exchange.body.get("messages")),
            "completion_tokens": max(1, len(word_chunks(reply.content))),
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        if exchange.body.get("stream"):
            include_usage = bool((exchange.body.get("stream_options") or {}).get("include_usage"))
            events = _sse(model, reply, calls, finish, usage if include_usage else None)
            exchange.send_stream("text/event-stream", events, reply.headers)
            return
        message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
        if reply.thinking:
            message["reasoning_content"] = reply.thinking
        if calls:
            message["tool_calls"] = [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
                for cid, name, args in calls
            ]
        choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
        exchange.send_json(200, {**_envelope(model, "chat.completion"), "choices": [choice], "usage": usage},
                           reply.headers)


def _bad_content(messages: list[dict]) -> str:
    """What OpenAI would reject in content parts (a picture must be an ``image_url`` with a URL or a base64
    data: URL, on a user message); "" when all is well."""
    for message in messages:
        parts = message.get("content")
        if not isinstance(parts, list):
            continue
        for part in parts:
            if part.get("type") == "text" and isinstance(part.get("text"), str):
                continue
            url = (part.get("image_url") or {}).get("url", "") if part.get("type") == "image_url" else ""
            if message.get("role") != "user" or not url:
                return f"Invalid content part: {str(part)[:80]}"
            if url.startswith("data:"):
                head, _, data = url.partition(",")
                if not head.endswith(";base64") or not head[5:].startswith("image/"):
                    return "Invalid image data URL"
                base64.b64decode(data, validate=True)
    return ""


def _as_json(arguments: dict | str) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def _envelope(model: str, kind: str) -> dict[str, Any]:
    return {"id": "chatcmpl-fake", "object": kind, "created": CREATED, "model": model}


def _sse(model: str, reply: Reply, calls: list[tuple[str, str, str]], finish: str, usage: dict | None) -> Iterator[str]:
    def event(delta: dict[str, Any], finish_reason: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
        return f"data: {json.dumps({**_envelope(model, 'chat.completion.chunk'), 'choices': [choice]})}\n\n"

    yield event({"role": "assistant", "content": ""})
    for piece in word_chunks(reply.thinking):
        yield event({"reasoning_content": piece})
    for piece in word_chunks(reply.content):
        yield event({"content": piece})
    for index, (call_id, name, arguments) in enumerate(calls):
        yield event({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                     "function": {"name": name, "arguments": ""}}]})
        for piece in halves(arguments):
            yield event({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield event({}, finish)
    if usage is not None:
        yield f"data: {json.dumps({**_envelope(model, 'chat.completion.chunk'), 'choices': [], 'usage': usage})}\n\n"
    yield "data: [DONE]\n\n"


def _send_error(
    exchange: Exchange, status: int, message: str, code: str = "", param: str = "",
    headers: dict[str, str] | None = None,
) -> None:
    error = {
        "message": message,
        "type": ERROR_TYPES.get(status, "server_error"),
        "param": param or None,
        "code": code or None,
    }
    exchange.send_json(status, {"error": error}, headers)


if __name__ == "__main__":
    serve_until_killed(FakeOpenAI, "A scripted fake OpenAI-compatible API on 127.0.0.1")
