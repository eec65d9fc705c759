"""web_fetch against hostile servers and resolvers: compression bombs, quadratic pages, malformed
responses, and an SSRF guard that must check every address and connect to the one it checked."""

from __future__ import annotations

import asyncio
import functools
import gzip
import socket
import threading
import tracemalloc
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from picoora.tools.web import BoundedDecoder, FetchRefused, WebFetch
from tests.tools_support import call, make_ctx

ZEROS = 200 * 1024 * 1024


@functools.cache
def two_layer_bomb() -> bytes:
    """200 MiB of zeros, gzipped twice: about 1 KiB on the wire (built on first use)."""
    return gzip.compress(gzip.compress(b"\0" * ZEROS, compresslevel=9), compresslevel=9)


@functools.cache
def quadratic_page() -> bytes:
    return gzip.compress(b"<a" * 1_000_000)


class _Hostile(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        for key, value in {"Content-Length": str(len(body)), **headers}.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        routes = {
            "/bomb": (200, two_layer_bomb(), {"Content-Type": "text/plain", "Content-Encoding": "gzip, gzip"}),
            "/quadratic": (200, quadratic_page(), {"Content-Type": "text/html", "Content-Encoding": "gzip"}),
            "/no-location": (302, b"", {"Content-Type": "text/plain"}),
            "/corrupt-gzip": (200, b"\x1f\x8b\x08\x00not really gzip",
                              {"Content-Type": "text/plain", "Content-Encoding": "gzip"}),
            "/brotli": (200, b"\x0b\x02\x80hello\x03", {"Content-Type": "text/plain", "Content-Encoding": "br"}),
            "/host": (200, (self.headers["Host"] or "").encode(), {"Content-Type": "text/plain"}),
        }
        status, body, headers = routes.get(self.path, (404, b"no route", {"Content-Type": "text/plain"}))
        self._send(status, body, headers)


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def ctx_for(tmp_path, allow=("127.0.0.1",), **web):
    return make_ctx(tmp_path, settings={"web_fetch": {"allow_hosts": list(allow), "timeout_seconds": 10, **web}})


@pytest.mark.slow
def test_a_two_layer_gzip_bomb_stops_at_the_decoded_byte_cap(tmp_path, server):
    two_layer_bomb(), quadratic_page()  # built before measuring: the server's side is not the tool's
    tracemalloc.start()
    try:
        result = call(WebFetch(), ctx_for(tmp_path, max_bytes=1_000_000), url=f"http://127.0.0.1:{server}/bomb")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not result.is_error and "body cut at 1000000 bytes" in result.content
    assert peak < 40 * 1024 * 1024  # the whole body would be 200 MiB


def test_a_page_that_was_quadratic_to_parse_comes_back_in_time(tmp_path, server):
    """2 MB of ``<a<a<a...``: html.parser needed minutes; the tool's own deadline is the judge here."""
    result = call(WebFetch(), ctx_for(tmp_path, max_bytes=2_000_000), url=f"http://127.0.0.1:{server}/quadratic")
    assert not result.is_error, result.content[:300]


@pytest.mark.parametrize(
    "path, expected",
    [
        ("/no-location", "without saying where to"),
        ("/corrupt-gzip", "not valid compressed data"),
        ("/brotli", "content-encoding br"),
    ],
)
def test_malformed_responses_are_clear_errors(tmp_path, server, path, expected):
    result = call(WebFetch(), ctx_for(tmp_path), url=f"http://127.0.0.1:{server}{path}")
    assert result.is_error and expected in result.content and "failed: " not in result.content


def test_the_decoder_caps_every_layer():
    inner = zlib.compress(b"x" * 100_000)
    decoder = BoundedDecoder("deflate", 1000)
    out = decoder.feed(inner)
    assert len(out) <= 1001 and decoder.exceeded
    with pytest.raises(FetchRefused):
        BoundedDecoder("gzip, zstd", 1000)
    assert BoundedDecoder("identity", 10).feed(b"plain") == b"plain"


class _Resolver:
    """Stands in for DNS: each call answers the next list of addresses (the last one repeats)."""

    def __init__(self, *answers: list[str]):
        self.answers = list(answers)
        self.calls = 0

    def __call__(self, host, port, *args, **kwargs):
        answer = self.answers[min(self.calls, len(self.answers) - 1)]
        self.calls += 1
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port)) for address in answer]


@pytest.fixture
def resolver(monkeypatch):
    """Install a fake resolver for both the event loop's and the socket module's look-ups."""

    def install(*answers: list[str]) -> _Resolver:
        fake = _Resolver(*answers)

        async def loop_getaddrinfo(self, host, port, *args, **kwargs):
            return fake(host, port)

        monkeypatch.setattr(asyncio.base_events.BaseEventLoop, "getaddrinfo", loop_getaddrinfo)
        monkeypatch.setattr(socket, "getaddrinfo", fake)
        return fake

    return install


@pytest.mark.parametrize("answer", [["127.0.0.1", "127.0.0.3"], ["127.0.0.3", "127.0.0.1"]])
def test_the_guard_checks_every_resolved_address(tmp_path, server, resolver, answer):
    """Only 127.0.0.1 is allowed; a name that also resolves to 127.0.0.3 is refused, whatever the order."""
    resolver(answer)
    result = call(WebFetch(), ctx_for(tmp_path, allow=("127.0.0.1/32",)), url=f"http://two-faced.test:{server}/host")
    assert result.is_error and "127.0.0.3" in result.content and "loopback" in result.content


def test_the_fetch_connects_to_the_address_it_checked(tmp_path, server, resolver):
    """DNS rebinding: the first answer (checked) is the server, every later one another address
    where nothing listens. The request must reach the checked one, with the real host name."""
    fake = resolver(["127.0.0.1"], ["127.0.0.2"])
    result = call(WebFetch(), ctx_for(tmp_path, allow=("127.0.0.0/8",)), url=f"http://rebind.test:{server}/host")
    assert not result.is_error, result.content
    assert f"rebind.test:{server}" in result.content
    assert fake.calls == 1
