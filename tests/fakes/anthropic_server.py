"""A scripted Anthropic Messages API (``/v1/messages``), enough for the ``anthropic`` client.

Answers one JSON message, or the SSE event sequence when ``stream`` is true (message_start,
content_block_start/delta/stop for thinking, text and tool_use blocks, message_delta,
message_stop). Reply.thinking becomes a thinking block, Reply.tool_calls tool_use blocks whose
input JSON is streamed in two pieces. Non-200 replies use Anthropic's error shape.

Like API version 2026-10-21, it refuses ``temperature``/``top_p``/``top_k`` with a 400.

Standalone: ``python -m tests.fakes.anthropic_server [--port N]``; use ``<url>`` as the base URL.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
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

__all__ = ["FakeAnthropic", "Reply", "Responder"]

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


class FakeAnthropic(FakeServer):
    """FakeAnthropic(replies=None, responder=None, delay=0.0, port=0)."""

    def route(self, exchange: Exchange) -> None:
        if (exchange.method, exchange.path) != ("POST", "/v1/messages"):
            _send_error(exchange, 404, f"no route {exchange.method} {exchange.path}")
            return
        self.record(exchange)
        sampling = sorted({"temperature", "top_p", "top_k"} & set(exchange.body))
        if sampling:  # API version 2026-10-21 refuses sampling parameters on every model
            _send_error(exchange, 400, f"{sampling[0]}: Extra inputs are not permitted")
            return
        wrong = _bad_image(exchange.body.get("messages") or [])
        if wrong:
            _send_error(exchange, 400, wrong, "invalid_request_error")
            return
        reply = self.next_reply(exchange.body)
        if reply.status != 200:
            _send_error(exchange, reply.status, reply.error, reply.error_code, reply.headers)
            return
        blocks = _blocks(reply)
        stop_reason = "tool_use" if reply.tool_calls else "end_turn"
        usage = {"input_tokens": rough_tokens(exchange.body.get("messages")),
                 "output_tokens": max(1, len(word_chunks(reply.content)))}
        model = str(exchange.body.get("model") or "")
        if exchange.body.get("stream"):
            exchange.send_stream("text/event-stream", _sse(model, blocks, stop_reason, usage), reply.headers)
            return
        message = {**_message_head(model), "content": blocks, "stop_reason": stop_reason, "usage": usage}
        exchange.send_json(200, message, reply.headers)


def _bad_image(messages: list[dict]) -> str:
    """What the Messages API rejects in an ``image`` block: a source that is not base64 of a JPEG, PNG, GIF
    or WebP, or an image in an assistant turn; "" when all is well."""
    for message in messages:
        for block in message.get("content") if isinstance(message.get("content"), list) else []:
            if block.get("type") != "image":
                continue
            source = block.get("source") or {}
            if message.get("role") != "user" or source.get("type") != "base64":
                return "messages: image blocks need a base64 source in a user turn"
            if source.get("media_type") not in ("image/jpeg", "image/png", "image/gif", "image/webp"):
                return f"messages: image media_type {source.get('media_type')!r} is not supported"
            base64.b64decode(source.get("data", ""), validate=True)
    return ""


def _blocks(reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.thinking:
        blocks.append({"type": "thinking", "thinking": reply.thinking, "signature": "sig-fake"})
    if reply.content:
        blocks.append({"type": "text", "text": reply.content})
    for i, (name, arguments) in enumerate(reply.tool_calls):
        tool_input = json.loads(arguments) if isinstance(arguments, str) else arguments
        blocks.append({"type": "tool_use", "id": f"toolu_fake_{i}", "name": name, "input": tool_input})
    return blocks


def _message_head(model: str) -> dict[str, Any]:
    return {"id": "msg_fake", "type": "message", "role": "assistant", "model": model, "stop_sequence": None}


def _sse(model: str, blocks: list[dict[str, Any]], stop_reason: str, usage: dict[str, int]) -> Iterator[str]:
    def event(kind: str, data: dict[str, Any]) -> str:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"

    start_usage = {"input_tokens": usage["input_tokens"], "output_tokens": 1}
    yield event("message_start",
                {"message": {**_message_head(model), "content": [], "stop_reason": None, "usage": start_usage}})
    for index, block in enumerate(blocks):
        kind = block["type"]
        if kind == "thinking":
            yield event("content_block_start",
                        {"index": index, "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
            deltas = [{"type": "thinking_delta", "thinking": p} for p in word_chunks(block["thinking"])]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "text":
            yield event("content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}})
            deltas = [{"type": "text_delta", "text": p} for p in word_chunks(block["text"])]
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            yield event("content_block_start", {"index": index, "content_block": start})
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in halves(json.dumps(block["input"]))]
        for delta in deltas:
            yield event("content_block_delta", {"index": index, "delta": delta})
        yield event("content_block_stop", {"index": index})
    yield event("message_delta", {"delta": {"stop_reason": stop_reason, "stop_sequence": None},
                                  "usage": {"output_tokens": usage["output_tokens"]}})
    yield event("message_stop", {})


def _send_error(exchange: Exchange, status: int, message: str, error_type: str = "",
                headers: dict[str, str] | None = None) -> None:
    error = {"type": error_type or ERROR_TYPES.get(status, "api_error"), "message": message}
    exchange.send_json(status, {"type": "error", "error": error}, {"request-id": "req_fake", **(headers or {})})


if __name__ == "__main__":
    serve_until_killed(FakeAnthropic, "A scripted fake Anthropic Messages API on 127.0.0.1")
