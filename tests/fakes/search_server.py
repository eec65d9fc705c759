"""A fake search service on 127.0.0.1: Brave's, Tavily's and SearXNG's JSON APIs and DuckDuckGo's HTML page.

Paths: ``/brave`` (GET, ``X-Subscription-Token``), ``/tavily`` (POST JSON, ``Authorization: Bearer``),
``/searxng/search`` (GET, ``format=json``), ``/ddg`` (POST form: the saved page in tests/data),
``/ddg-captcha`` (DuckDuckGo's 202 anomaly answer), ``/broken`` (500). Every request is recorded.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

KEY = "test-search-key"
PAGE = (Path(__file__).resolve().parent.parent / "data" / "duckduckgo_results.html").read_bytes()


def _hits(query: str, count: int, text_field: str) -> list[dict]:
    return [{"title": f"Result {i} for <strong>{query}</strong>", "url": f"https://example.org/{i}",
             text_field: f"Snippet {i} about {query}"} for i in range(1, count + 1)]


class FakeSearch:
    def __init__(self) -> None:
        self.requests: list[dict] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                fake._answer(self, "GET")

            def do_POST(self) -> None:
                fake._answer(self, "POST")

            def log_message(self, *args: object) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def _answer(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        parts = urlsplit(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length).decode() if length else ""
        params = {k: v[0] for k, v in parse_qs(parts.query).items()}
        if handler.headers.get("Content-Type", "").startswith("application/x-www-form-urlencoded"):
            params.update({k: v[0] for k, v in parse_qs(raw).items()})
        body = json.loads(raw) if raw and handler.headers.get("Content-Type", "").startswith("application/json") else {}
        headers = {k.lower(): v for k, v in handler.headers.items()}
        self.requests.append({"method": method, "path": parts.path, "params": params, "json": body, "headers": headers})
        status, content_type, payload = self._route(parts.path, params, body, headers)
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)

    def _route(self, path: str, params: dict, body: dict, headers: dict) -> tuple[int, str, bytes]:
        if path == "/brave":
            if headers.get("x-subscription-token") != KEY:
                return 401, "application/json", b'{"error": "bad key"}'
            count = int(params.get("count", 20))
            return (200, "application/json",
                    json.dumps({"web": {"results": _hits(params["q"], count, "description")}}).encode())
        if path == "/tavily":
            if headers.get("authorization") != f"Bearer {KEY}":
                return 401, "application/json", b'{"detail": "Unauthorized"}'
            return (200, "application/json",
                    json.dumps({"results": _hits(body["query"], body["max_results"], "content")}).encode())
        if path == "/searxng/search" and params.get("format") == "json":
            return 200, "application/json", json.dumps({"results": _hits(params["q"], 12, "content")}).encode()
        if path == "/ddg" and params.get("q"):
            return 200, "text/html; charset=utf-8", PAGE
        if path == "/ddg-captcha":
            return (202, "text/html",
                    b'<html><div class="anomaly-modal">Unfortunately, bots use DuckDuckGo too.</div></html>')
        return 500, "text/plain", b"broken"

    def __enter__(self) -> FakeSearch:
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
