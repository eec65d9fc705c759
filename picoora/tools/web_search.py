"""The ``web_search`` tool: titles, URLs and snippets from one search provider, marked as untrusted.

Providers (``tools.web_search.provider``): ``brave`` and ``tavily`` (with ``api_key``), ``searxng``
(the instance at ``url``) and ``duckduckgo``, which needs no key: its HTML results page is read and
parsed. DuckDuckGo is the default, and the fallback when the configured provider fails
(``duckduckgo_fallback``); when nothing works the model gets one error naming each failure. Answers
are parsed (JSON, or DuckDuckGo's page with lxml) in a worker thread under the search's deadline, never
on the event loop.
``url`` replaces the provider's public endpoint (a SearXNG instance, a proxy, a test server); the
endpoints are the user's choice, so unlike ``web_fetch`` they are not held to public addresses.

Results are wrapped like ``web_fetch`` pages (``wrap_untrusted``): a snippet is text from the web.
"""

from __future__ import annotations

import asyncio
import html
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from pydantic import BaseModel, Field

from picoora.config import WebSearchConfig
from picoora.tls import tls_context
from picoora.tools.base import Tool, ToolContext, ToolResult
from picoora.tools.web import decode_body
from picoora.untrusted import one_line, wrap_untrusted

if TYPE_CHECKING:
    import httpx

BRAVE_URL = "https://api.search.brave.com/res/v1/web/search"
TAVILY_URL = "https://api.tavily.com/search"
DUCKDUCKGO_URL = "https://html.duckduckgo.com/html/"
MAX_RESPONSE_BYTES = 2_000_000
SNIPPET_CHARS = 300
# DuckDuckGo's HTML endpoint turns away clients that do not look like a browser.
BROWSER_AGENT = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
LABELS = {"brave": "Brave", "tavily": "Tavily", "searxng": "SearXNG", "duckduckgo": "DuckDuckGo"}
# "<[^<>]*>", not "<[^>]+>": the latter rescans to the end from every "<" of a text without ">" (quadratic).
_TAG = re.compile(r"<[^<>]*>")
# A field is cut to this many times the snippet before anything else runs over it: providers send up to 2 MB.
FIELD_SCAN_FACTOR = 20


class SearchFailed(Exception):
    """One provider could not answer; the message says why, for the model and the user."""


@dataclass
class Hit:
    title: str
    url: str
    snippet: str


def clean(text: Any, limit: int = SNIPPET_CHARS) -> str:
    """Plain one-line text from a provider's field (Brave marks matches with <strong>)."""
    return one_line(html.unescape(_TAG.sub("", str(text or "")[: limit * FIELD_SCAN_FACTOR])), limit)


def usable(cfg: WebSearchConfig) -> list[str]:
    """The providers to try, in order: the configured one when it has what it needs, then DuckDuckGo."""
    if not cfg.enabled:
        return []
    needs = {"brave": cfg.api_key, "tavily": cfg.api_key, "searxng": cfg.url, "duckduckgo": True}
    chain: list[str] = [cfg.provider] if needs[cfg.provider] else []
    if cfg.provider != "duckduckgo" and cfg.duckduckgo_fallback:
        chain.append("duckduckgo")
    return chain


@dataclass
class _Answer:
    status: int
    body: bytes
    charset: str | None

    def text(self) -> str:
        return decode_body(self.body, self.charset)


async def _get_json(client: httpx.AsyncClient, method: str, url: str, **kwargs: Any) -> Any:
    answer = await _send(client, method, url, **kwargs)
    try:
        return await asyncio.to_thread(json.loads, answer.body)  # up to MAX_RESPONSE_BYTES: not on the loop
    except ValueError:
        raise SearchFailed("the answer was not JSON") from None


async def _send(client: httpx.AsyncClient, method: str, url: str, **kwargs: Any) -> _Answer:
    """The status and body (read with a cap); an HTTP error status is a SearchFailed."""
    async with client.stream(method, url, **kwargs) as response:
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > MAX_RESPONSE_BYTES:
                raise SearchFailed(f"the answer was larger than {MAX_RESPONSE_BYTES} bytes")
        answer = _Answer(response.status_code, bytes(body), response.charset_encoding)
    if answer.status in (401, 403):
        raise SearchFailed(f"HTTP {answer.status}: the key was refused (tools.web_search.api_key)")
    if answer.status >= 400:
        raise SearchFailed(f"HTTP {answer.status}")
    return answer


async def brave(client: httpx.AsyncClient, cfg: WebSearchConfig, query: str, count: int) -> list[Hit]:
    data = await _get_json(client, "GET", cfg.url or BRAVE_URL, params={"q": query, "count": count},
                           headers={"X-Subscription-Token": cfg.api_key, "Accept": "application/json"})
    results = (data.get("web") or {}).get("results") if isinstance(data, dict) else None
    return [Hit(clean(r.get("title")), str(r.get("url", "")), clean(r.get("description")))
            for r in results or [] if isinstance(r, dict) and r.get("url")]


async def tavily(client: httpx.AsyncClient, cfg: WebSearchConfig, query: str, count: int) -> list[Hit]:
    data = await _get_json(client, "POST", cfg.url or TAVILY_URL, json={"query": query, "max_results": count},
                           headers={"Authorization": f"Bearer {cfg.api_key}"})
    return _generic_results(data)


async def searxng(client: httpx.AsyncClient, cfg: WebSearchConfig, query: str, count: int) -> list[Hit]:
    base = cfg.url.rstrip("/")
    endpoint = base if base.endswith("/search") else base + "/search"
    data = await _get_json(client, "GET", endpoint, params={"q": query, "format": "json"})
    return _generic_results(data)


def _generic_results(data: Any) -> list[Hit]:
    """Tavily's and SearXNG's shape: {"results": [{"title", "url", "content"}]}."""
    results = data.get("results") if isinstance(data, dict) else None
    return [Hit(clean(r.get("title")), str(r.get("url", "")), clean(r.get("content")))
            for r in results or [] if isinstance(r, dict) and r.get("url")]


async def duckduckgo(client: httpx.AsyncClient, cfg: WebSearchConfig, query: str, count: int) -> list[Hit]:
    url = cfg.url if cfg.provider == "duckduckgo" and cfg.url else DUCKDUCKGO_URL
    answer = await _send(client, "POST", url, data={"q": query}, headers={"User-Agent": BROWSER_AGENT})
    page = answer.text()
    if answer.status == 202 or "anomaly-modal" in page:
        raise SearchFailed("DuckDuckGo asked for a captcha (too many searches from this address); "
                           "configure Brave, Tavily or SearXNG in tools.web_search")
    return await asyncio.to_thread(parse_duckduckgo, page)


def _result_url(href: str) -> str:
    """The real target of a result link (DuckDuckGo wraps it in /l/?uddg=...); ads have none."""
    parts = urlsplit(href if "://" in href else "https:" + href if href.startswith("//") else href)
    if parts.path.startswith("/l/"):
        target = parse_qs(parts.query).get("uddg", [""])[0]
    else:
        target = href
    if not target.startswith(("http://", "https://")) or "duckduckgo.com/y.js" in target:
        return ""
    return target


def parse_duckduckgo(page: str) -> list[Hit]:
    """Result links (``a.result__a``) and their snippets (``.result__snippet``), in page order.

    lxml, like ``html_text``: ``html.parser`` stalled the gateway 28 s on a hostile endpoint's page.
    Blocking: the caller runs it in a worker thread under the search's deadline."""
    import lxml.html
    from lxml import etree

    if not page.strip():
        return []
    try:
        root = lxml.html.document_fromstring(page, parser=lxml.html.HTMLParser(recover=True, no_network=True))
    except (etree.ParserError, ValueError):
        return []
    hits: list[Hit] = []
    for element in root.iter(etree.Element):  # iterative, in document order; comments and PIs skipped
        classes = (element.get("class") or "").split()
        if element.tag == "a" and "result__a" in classes:
            target = _result_url(element.get("href") or "")
            if target:
                hits.append(Hit(clean("".join(map(str, element.itertext()))), target, ""))
        elif "result__snippet" in classes and hits and not hits[-1].snippet:
            hits[-1].snippet = clean("".join(map(str, element.itertext())))
    return hits


Provider = Callable[["httpx.AsyncClient", WebSearchConfig, str, int], Awaitable[list[Hit]]]
PROVIDERS: dict[str, Provider] = {"brave": brave, "tavily": tavily, "searxng": searxng, "duckduckgo": duckduckgo}


class WebSearchArgs(BaseModel):
    query: str = Field(min_length=1, max_length=400, description="What to search for")
    count: int = Field(5, ge=1, le=10, description="How many results")


class WebSearch(Tool):
    name = "web_search"
    description = "Search the web: titles, URLs and snippets of the results (untrusted text)."
    Args = WebSearchArgs

    def __init__(self, cfg: WebSearchConfig):
        self.cfg = cfg

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        assert isinstance(args, WebSearchArgs)
        import httpx

        query, count = " ".join(args.query.split()), args.count
        failures: list[str] = []
        async with httpx.AsyncClient(timeout=httpx.Timeout(self.cfg.timeout_seconds), trust_env=False,
                                     verify=await tls_context(),
                                     headers={"User-Agent": "picoora/0.1 (web_search)"}) as client:
            for provider in usable(self.cfg):
                label = LABELS[provider]
                try:
                    hits = await asyncio.wait_for(PROVIDERS[provider](client, self.cfg, query, count),
                                                  self.cfg.timeout_seconds)
                except SearchFailed as exc:
                    failures.append(f"{label}: {exc}")
                except asyncio.TimeoutError:
                    failures.append(f"{label}: no answer within {self.cfg.timeout_seconds:g} s")
                except httpx.HTTPError as exc:
                    failures.append(f"{label}: {type(exc).__name__}: {exc or 'no details'}")
                else:
                    return ToolResult(_format(query, hits[:count], label, failures))
        tried = "; ".join(failures) or "no provider is configured (tools.web_search)"
        return ToolResult.error(f"web search failed: {tried}")


def _format(query: str, hits: list[Hit], label: str, failures: list[str]) -> str:
    via = f"via {label}" + (f", after {'; '.join(failures)}" if failures else "")
    if not hits:
        return f"No results for: {query} ({via})"
    lines = []
    for number, hit in enumerate(hits, start=1):
        lines += [f"{number}. {hit.title or hit.url}", f"   {hit.url}"] + ([f"   {hit.snippet}"] if hit.snippet else [])
    return f"Results for: {query} ({via})\n" + wrap_untrusted("\n".join(lines), f"{label} search")
