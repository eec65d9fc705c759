"""The web chat: one page and its script and style, served from the package (no build step, no CDN).

The page loads without the token; its script takes the token from ``/?token=...`` (the URL the gateway
prints), keeps it in the browser's storage for this origin and removes it from the address bar. The
headers forbid inline script, framing and referrers (so the token never leaks in a Referer)."""

from __future__ import annotations

import functools
from importlib import resources

from fastapi import APIRouter
from fastapi.responses import Response

router = APIRouter(include_in_schema=False)

_FILES = {"index.html": "text/html; charset=utf-8", "app.js": "text/javascript; charset=utf-8",
          "docs.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8",
          "favicon.svg": "image/svg+xml"}
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                               "img-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


@functools.cache  # four small files that never change while the gateway runs: read once, not per request
def _body(name: str) -> bytes:
    # One name per joinpath: Python 3.10's Traversable.joinpath takes only one.
    return resources.files("picoora.gateway").joinpath("web").joinpath(name).read_bytes()


def _file(name: str) -> Response:
    return Response(_body(name), media_type=_FILES[name], headers=SECURITY_HEADERS)


@router.get("/")
async def page() -> Response:
    return _file("index.html")


@router.get("/static/{name}")
async def static(name: str) -> Response:
    if name not in _FILES or name == "index.html":
        return Response(status_code=404)
    return _file(name)


@router.get("/favicon.ico")
async def favicon() -> Response:
    """Browsers ask for this path whatever the page says; an SVG answers it (every current browser draws it)."""
    return _file("favicon.svg")
