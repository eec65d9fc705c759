"""A real model behind the Ollama HTTP API, for the live tier when no Ollama binary can be had.

Serves a GGUF file through ``llama_cpp.Llama`` with the parts of Ollama's API that picoora uses
(``/api/version``, ``/api/tags``, ``/api/show``, ``/api/chat`` with NDJSON streaming and tool calls),
so the official ``ollama`` client, and so picoora's default provider, run against a real model:

    python tests/fakes/ollama_llama_server.py --model SmolLM2-135M-Instruct.Q4_1.gguf --port 11435
    PICO_TEST_OLLAMA_URL=http://127.0.0.1:11435 PICO_TEST_OLLAMA_MODEL=smollm2-135m pytest -m live_llm

It needs ``llama-cpp-python`` in the interpreter that runs it (README, "Tests"). Tiny models never
choose a tool by themselves, so on the first round of a turn (the last message is the user's) the
server forces one offered tool (``recall`` when offered) with llama.cpp's grammar; that exercises
the whole tool-call plumbing, and the next round answers in prose.
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

PREFERRED_TOOL = "recall"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def _chat_messages(messages: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Ollama messages to plain ChatML turns (the GGUF's template has no tool roles)."""
    out = []
    for message in messages:
        if message.get("role") == "tool":
            out.append({"role": "user", "content": f"Tool result: {message.get('content', '')}"})
        else:
            out.append({"role": message.get("role", "user"), "content": message.get("content") or ""})
    return out


def _forced_tool(body: dict[str, Any]) -> dict[str, Any] | None:
    tools = body.get("tools") or []
    if not tools or (body.get("messages") or [{}])[-1].get("role") != "user":
        return None
    names = [t["function"]["name"] for t in tools]
    name = PREFERRED_TOOL if PREFERRED_TOOL in names else names[0]
    return {"type": "function", "function": {"name": name}}


class OllamaOverLlama(BaseHTTPRequestHandler):
    llm: Any = None
    alias = "smollm2-135m"

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        pass

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/api/version":
            self._json(200, {"version": "0.12.0"})
        elif self.path == "/api/tags":
            self._json(200, {"models": [{"name": self.alias, "model": self.alias, "modified_at": _now(), "size": 0,
                                         "digest": "0" * 64, "details": {"format": "gguf"}}]})
        else:
            self._json(404, {"error": "not found"})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if self.path == "/api/show":
            self._json(200, {"modelfile": f"FROM {self.alias}", "parameters": "", "template": "{{ .Tools }}",
                             "details": {"format": "gguf"}, "model_info": {"general.architecture": "llama"},
                             "capabilities": ["completion", "tools"], "modified_at": _now()})
        elif self.path != "/api/chat":
            self._json(404, {"error": "not found"})
        elif body.get("model") != self.alias:
            self._json(404, {"error": f"model '{body.get('model')}' not found"})
        else:
            self._chat(body)

    def _chat(self, body: dict[str, Any]) -> None:
        options = body.get("options") or {}
        request: dict[str, Any] = {
            "messages": _chat_messages(body.get("messages") or []),
            "temperature": options.get("temperature", 0.0),
            "max_tokens": options.get("num_predict", 256),
        }
        forced = _forced_tool(body)
        if forced:
            request.update(tools=body["tools"], tool_choice=forced)
        choice = self.llm.create_chat_completion(**request)["choices"][0]
        message = choice["message"]
        reply: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
        if message.get("tool_calls"):
            reply["tool_calls"] = [{"function": {"name": c["function"]["name"],
                                                 "arguments": json.loads(c["function"]["arguments"] or "{}")}}
                                   for c in message["tool_calls"]]
        done = {"model": self.alias, "created_at": _now(), "done": True, "done_reason": "stop"}
        if not body.get("stream", True):
            self._json(200, {**done, "message": reply})
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.end_headers()
        words = reply["content"].split(" ")
        for i, word in enumerate(words):  # one line per word: enough to show streaming end to end
            piece = word if i == len(words) - 1 else word + " "
            self.wfile.write(json.dumps({"model": self.alias, "created_at": _now(), "done": False,
                                         "message": {"role": "assistant", "content": piece}}).encode() + b"\n")
        last = {"role": "assistant", "content": "",
                **({"tool_calls": reply["tool_calls"]} if "tool_calls" in reply else {})}
        self.wfile.write(json.dumps({**done, "message": last}).encode() + b"\n")


def main() -> None:
    from llama_cpp import Llama

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="path of a GGUF file")
    parser.add_argument("--alias", default=OllamaOverLlama.alias, help="the model name clients ask for")
    parser.add_argument("--port", type=int, default=11435)
    args = parser.parse_args()
    OllamaOverLlama.llm = Llama(model_path=args.model, n_ctx=4096, n_threads=2, verbose=False,
                                chat_format="chatml-function-calling")
    OllamaOverLlama.alias = args.alias
    server = HTTPServer(("127.0.0.1", args.port), OllamaOverLlama)  # one request at a time: Llama is not thread-safe
    print(f"http://127.0.0.1:{args.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
