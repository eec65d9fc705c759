"""A scripted Ollama HTTP API for tests and benchmarks, spoken to by the official ``ollama`` client.

Implements /api/chat (one JSON, or NDJSON when ``stream`` is true), /api/tags, /api/show (with
``capabilities``), /api/version and /api/embed (deterministic hashed vectors), like Ollama does:
unknown models get 404 ``{"error": "model 'x' not found"}``, tools sent to a model without tool
support get 400 "... does not support tools", ``think`` for a model that cannot think gets 400.

Standalone for benchmarks: ``python -m tests.fakes.ollama_server [--port N]`` prints its URL and
serves until killed.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from collections.abc import Sequence
from typing import Any

from tests.fakes._http import Exchange, FakeServer, Reply, Responder, rough_tokens, serve_until_killed, word_chunks

__all__ = ["EMBED_DIMENSIONS", "FakeOllama", "Reply", "Responder", "hashed_embedding"]

CREATED_AT = "2026-01-01T00:00:00.000000Z"
VERSION = "0.12.6"
EMBED_DIMENSIONS = 384


class FakeOllama(FakeServer):
    def __init__(
        self,
        replies: list[Reply] | None = None,
        responder: Responder | None = None,
        models: Sequence[str] = ("qwen3:latest",),
        tool_models: Sequence[str] | None = None,  # None: every model supports tools
        delay: float = 0.0,
        thinking_models: Sequence[str] | None = None,  # None: every model can think
        vision_models: Sequence[str] = (),  # the models that take pictures ("vision" in /api/show)
        port: int = 0,
        load_seconds: float = 0.0,  # the first chat waits this long "loading the model"; /api/ps shows it after
    ):
        super().__init__(replies, responder, delay, port)
        self.load_seconds = load_seconds
        self.loaded: set[str] = set()  # what /api/ps lists
        self.models = [_full_name(m) for m in models]
        self.tool_models = None if tool_models is None else {_full_name(m) for m in tool_models}
        self.thinking_models = None if thinking_models is None else {_full_name(m) for m in thinking_models}
        self.vision_models = {_full_name(m) for m in vision_models}

    def route(self, exchange: Exchange) -> None:
        handlers = {
            ("POST", "/api/chat"): self._chat,
            ("GET", "/api/tags"): self._tags,
            ("POST", "/api/show"): self._show,
            ("GET", "/api/version"): lambda ex: ex.send_json(200, {"version": VERSION}),
            ("GET", "/api/ps"): self._ps,
            ("POST", "/api/embed"): self._embed,
        }
        handler = handlers.get((exchange.method, exchange.path))
        if handler is None:
            exchange.send_json(404, {"error": f"no route {exchange.method} {exchange.path}"})
        else:
            handler(exchange)

    def capabilities(self, model: str) -> list[str]:
        caps = ["completion"]
        if self.tool_models is None or model in self.tool_models:
            caps.append("tools")
        if self.thinking_models is None or model in self.thinking_models:
            caps.append("thinking")
        if model in self.vision_models:
            caps.append("vision")
        return caps

    def _known(self, exchange: Exchange) -> str | None:
        """The model the request names, or None after answering 404 as Ollama does."""
        name = str(exchange.body.get("model") or exchange.body.get("name") or "")
        if _full_name(name) in self.models:
            return _full_name(name)
        exchange.send_json(404, {"error": f"model '{name}' not found"})
        return None

    def _chat(self, exchange: Exchange) -> None:
        self.record(exchange)
        model = self._known(exchange)
        if model is None:
            return
        caps = self.capabilities(model)
        if exchange.body.get("tools") and "tools" not in caps:
            exchange.send_json(400, {"error": f"registry.ollama.ai/library/{model} does not support tools"})
            return
        if any(m.get("images") for m in exchange.body.get("messages") or []) and "vision" not in caps:
            exchange.send_json(500, {"error": f"{model} does not support images"})  # as Ollama answers
            return
        if exchange.body.get("think") and "thinking" not in caps:
            exchange.send_json(400, {"error": f'"{model}" does not support thinking'})
            return
        if model not in self.loaded:
            time.sleep(self.load_seconds)
            self.loaded.add(model)
        reply = self.next_reply(exchange.body)
        if reply.status != 200:
            exchange.send_json(reply.status, {"error": reply.error}, reply.headers)
            return
        done = {
            "model": model,
            "created_at": CREATED_AT,
            "done": True,
            "done_reason": "stop",
            "total_duration": 1000,
            "prompt_eval_count": rough_tokens(exchange.body.get("messages")),
            "eval_count": max(1, len(word_chunks(reply.content))),
        }
        if exchange.body.get("stream", True):
            exchange.send_stream("application/x-ndjson", _ndjson(model, reply, done), reply.headers, reply.cut_after)
        else:
            exchange.send_json(200, {**done, "message": _message(reply.content, reply.thinking, reply.tool_calls)},
                               reply.headers)

    def _tags(self, exchange: Exchange) -> None:
        models = [
            {
                "name": m,
                "model": m,
                "modified_at": CREATED_AT,
                "size": 5_200_000_000,
                "digest": hashlib.sha256(m.encode()).hexdigest(),
                "details": _details(m),
            }
            for m in self.models
        ]
        exchange.send_json(200, {"models": models})

    def _ps(self, exchange: Exchange) -> None:
        running = [{"name": m, "model": m, "size": 5_200_000_000, "digest": hashlib.sha256(m.encode()).hexdigest(),
                    "details": _details(m), "expires_at": "2099-01-01T00:00:00Z", "size_vram": 0}
                   for m in sorted(self.loaded)]
        exchange.send_json(200, {"models": running})

    def _show(self, exchange: Exchange) -> None:
        model = self._known(exchange)
        if model is None:
            return
        exchange.send_json(
            200,
            {
                "modelfile": f"FROM {model}",
                "parameters": "",
                "template": "{{ .Prompt }}",
                "details": _details(model),
                "model_info": {"general.architecture": model.split(":")[0]},
                "capabilities": self.capabilities(model),
                "modified_at": CREATED_AT,
            },
        )

    def _embed(self, exchange: Exchange) -> None:
        model = self._known(exchange)
        if model is None:
            return
        texts = exchange.body.get("input") or ""
        texts = [texts] if isinstance(texts, str) else list(texts)
        exchange.send_json(
            200,
            {
                "model": model,
                "embeddings": [hashed_embedding(t) for t in texts],
                "total_duration": 1000,
                "load_duration": 0,
                "prompt_eval_count": sum(len(t.split()) for t in texts),
            },
        )


def hashed_embedding(text: str, dimensions: int = EMBED_DIMENSIONS) -> list[float]:
    """A unit vector from hashed words: the same text always gives the same vector; shared words raise cosine."""
    vector = [0.0] * dimensions
    for word in re.findall(r"\w+", text.lower()):
        digest = hashlib.sha256(word.encode()).digest()
        vector[int.from_bytes(digest[:4], "big") % dimensions] += 1.0 if digest[4] % 2 else -1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


def _full_name(model: str) -> str:
    return model if ":" in model else f"{model}:latest"


def _details(model: str) -> dict[str, Any]:
    family = model.split(":")[0]
    return {
        "parent_model": "",
        "format": "gguf",
        "family": family,
        "families": [family],
        "parameter_size": "8B",
        "quantization_level": "Q4_K_M",
    }


def _message(content: str, thinking: str = "",
             tool_calls: list[tuple[str, dict | str]] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if thinking:
        message["thinking"] = thinking
    if tool_calls:
        message["tool_calls"] = [{"function": {"name": name, "arguments": args}} for name, args in tool_calls]
    return message


def _ndjson(model: str, reply: Reply, done: dict[str, Any]):
    def line(message: dict[str, Any], **extra: Any) -> str:
        return json.dumps({"model": model, "created_at": CREATED_AT, "message": message, "done": False, **extra}) + "\n"

    for piece in word_chunks(reply.thinking):
        yield line(_message("", thinking=piece))
    for piece in reply.pieces or word_chunks(reply.content):
        if reply.piece_delay:
            time.sleep(reply.piece_delay)
        yield line(_message(piece))
    if reply.tool_calls:
        yield line(_message("", tool_calls=reply.tool_calls))
    yield json.dumps({**done, "message": _message("")}) + "\n"


if __name__ == "__main__":
    serve_until_killed(FakeOllama, "A scripted fake Ollama API on 127.0.0.1")
