"""Some other web server where a model API was expected: every request gets an HTML page (a 404 by
default, or the status given), or a JSON 404 that is not Ollama's."""

from __future__ import annotations

from tests.fakes._http import Exchange, FakeServer

PAGE = ("<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1>"
        + "<p>The requested URL was not found on this server.</p>" * 40 + "</body></html>\n")


class WebPageServer(FakeServer):
    def __init__(self, status: int = 404, page: str = PAGE, as_json: bool = False):
        super().__init__()
        self.status, self.page, self.as_json = status, page, as_json
        self.hits = 0

    def route(self, exchange: Exchange) -> None:
        self.hits += 1
        if self.as_json:
            exchange.send_json(self.status, {"detail": "Not Found"})
            return
        data = self.page.encode()
        exchange._start(self.status, "text/html; charset=utf-8", None)
        exchange._handler.send_header("Content-Length", str(len(data)))
        exchange._handler.end_headers()
        exchange._handler.wfile.write(data)
