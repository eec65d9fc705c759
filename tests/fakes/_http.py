"""Plumbing the fake model servers share: scripted replies, a threaded HTTP server, chunked streams.

Each fake (Ollama, OpenAI-compatible, Anthropic) subclasses ``FakeServer`` and implements ``route``;
replies are consumed in order, then the responder is asked, then a plain "ok" answers.
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl


@dataclass
class Reply:
    content: str = ""
    # (name, arguments); a str as arguments is sent verbatim where the API carries JSON strings
    # (OpenAI), to script a model that produced broken JSON.
    tool_calls: list[tuple[str, dict | str]] = field(default_factory=list)
    thinking: str = ""
    status: int = 200  # non-200: an error body carrying ``error``
    error: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    error_code: str = ""  # OpenAI ``error.code`` / Anthropic ``error.type`` when set
    error_param: str = ""  # OpenAI ``error.param``
    call_ids: list[str] = field(default_factory=list)  # OpenAI: ids for the tool calls (default call_0, call_1, ...)
    cut_after: int = -1  # streams: the connection drops after this many content pieces (-1: never)
    piece_delay: float = 0.0  # streams (Ollama): seconds before each content piece, a model that types slowly
    pieces: list[str] = field(default_factory=list)  # streams (Ollama): these content pieces, not content's words


Responder = Callable[[dict], Reply]


def word_chunks(text: str) -> list[str]:
    """Split text into word-sized pieces (spaces kept) so a stream arrives in several chunks."""
    return re.findall(r"\S+\s*|\s+", text)


def halves(text: str) -> list[str]:
    """Two pieces of a JSON string, so clients must assemble streamed arguments."""
    middle = len(text) // 2
    return [piece for piece in (text[:middle], text[middle:]) if piece]


def closed_port_url() -> str:
    """A loopback URL where nothing listens: connecting is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def free_port() -> int:
    """A loopback port free right now (for a server started in a child process)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, process: Any = None, seconds: float = 30.0) -> None:
    """Return once something accepts on 127.0.0.1:``port`` (or ``process`` has exited, or time is up)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and (process is None or process.poll() is None):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)


def rough_tokens(value: Any) -> int:
    return max(1, len(json.dumps(value)) // 4)


class Exchange:
    """One request as a fake sees it, with ways to answer it."""

    def __init__(self, handler: BaseHTTPRequestHandler, method: str, path: str, body: Any):
        self._handler = handler
        self.method = method
        self.path = path
        self.body = body
        self.headers = {key.lower(): value for key, value in handler.headers.items()}

    def send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self._start(status, "application/json", headers)
        self._handler.send_header("Content-Length", str(len(data)))
        self._handler.end_headers()
        self._handler.wfile.write(data)

    def send_no_content(self) -> None:
        """204, with no body at all (a body would corrupt the next response on the kept-alive connection)."""
        self._handler.send_response(204)
        self._handler.end_headers()

    def send_bytes(self, status: int, data: bytes, content_type: str = "application/octet-stream",
                   chunked: bool = False) -> None:
        """``data`` as the body; ``chunked``: in 64 KiB chunks with no length said beforehand."""
        self._start(status, content_type, None)
        if not chunked:
            self._handler.send_header("Content-Length", str(len(data)))
            self._handler.end_headers()
            self._handler.wfile.write(data)
            return
        self._handler.send_header("Transfer-Encoding", "chunked")
        self._handler.end_headers()
        try:
            for start in range(0, len(data), 65536):
                piece = data[start:start + 65536]
                self._handler.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self._handler.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading (past its limit)

    def send_stream(self, content_type: str, pieces: Iterable[str], headers: dict[str, str] | None = None,
                    cut_after: int = -1) -> None:
        """Chunked transfer encoding, one chunk per piece, flushed as it goes; with ``cut_after`` >= 0 the
        connection drops after that many pieces, mid-stream, as a crashing server's would."""
        self._start(200, content_type, headers)
        self._handler.send_header("Transfer-Encoding", "chunked")
        self._handler.end_headers()
        for sent, piece in enumerate(pieces):
            if sent == cut_after:
                self._handler.close_connection = True
                self._handler.connection.shutdown(socket.SHUT_RDWR)
                return
            data = piece.encode()
            self._handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self._handler.wfile.flush()
        self._handler.wfile.write(b"0\r\n\r\n")

    def _start(self, status: int, content_type: str, headers: dict[str, str] | None) -> None:
        self._handler.send_response(status)
        self._handler.send_header("Content-Type", content_type)
        for key, value in (headers or {}).items():
            self._handler.send_header(key, value)


class FakeServer(ABC):
    """A scripted HTTP server on 127.0.0.1 (port 0: a free one), served from a daemon thread; a context manager."""

    def __init__(
        self,
        replies: Sequence[Reply] | None = None,
        responder: Responder | None = None,
        delay: float = 0.0,
        port: int = 0,
    ):
        self.requests: list[dict] = []  # bodies of the chat requests, in order
        self.request_headers: list[dict[str, str]] = []  # their headers (lower-cased names)
        self.delay = delay
        self._replies = deque(replies or [])
        self._responder = responder
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler_for(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    @abstractmethod
    def route(self, exchange: Exchange) -> None:
        """Answer one request of this fake's API."""

    def record(self, exchange: Exchange) -> None:
        with self._lock:
            self.requests.append(exchange.body)
            self.request_headers.append(exchange.headers)

    def next_reply(self, body: dict) -> Reply:
        if self.delay:
            time.sleep(self.delay)
        with self._lock:
            if self._replies:
                return self._replies.popleft()
        return self._responder(body) if self._responder else Reply(content="ok")

    def start(self) -> FakeServer:
        # A short poll interval: shutdown() waits for the next poll, and tests start and stop many servers.
        serve = lambda: self._server.serve_forever(poll_interval=0.02)  # noqa: E731
        self._thread = threading.Thread(target=serve, name=type(self).__name__, daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._server.serve_forever()

    def stop(self) -> None:
        if self._thread is not None:  # shutdown() waits for a serve loop, so only when one runs
            self._server.shutdown()
            self._thread = None
        self._server.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()


def _handler_for(fake: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, like the real servers
        disable_nagle_algorithm = True  # small stream chunks go out at once (else ~40 ms delayed-ACK stalls)

        def do_GET(self) -> None:
            self._dispatch("GET")

        def do_POST(self) -> None:
            self._dispatch("POST")

        def do_PATCH(self) -> None:
            self._dispatch("PATCH")

        def do_PUT(self) -> None:
            self._dispatch("PUT")

        def _dispatch(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if "application/x-www-form-urlencoded" in (self.headers.get("Content-Type") or ""):
                body = dict(parse_qsl(raw.decode()))  # the Telegram client posts forms
            elif "multipart/form-data" in (self.headers.get("Content-Type") or ""):
                body = raw  # file uploads: the fake parses them (``multipart_fields``)
            else:
                body = json.loads(raw) if raw else {}
            fake.route(Exchange(self, method, self.path.split("?")[0], body))

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            return

    return Handler


def serve_until_killed(fake_class: Callable[..., FakeServer], description: str) -> None:
    """``python -m tests.fakes.<name> [--port N]``: print the URL, serve until killed (for benchmarks)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--port", type=int, default=0)
    fake = fake_class(port=parser.parse_args().port)
    print(fake.url, flush=True)
    try:
        fake.serve_forever()
    except KeyboardInterrupt:
        fake.stop()
