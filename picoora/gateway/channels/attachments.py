"""How channels announce the files a message carries: the platform's announcement turned into an
``Attachment`` (``links``) that can fetch the bytes later, and the capped download they share.

The channel does not download anything itself: the runtime (``picoora.gateway.runtime.media``) decides
after the sender was admitted, after the announced size and type passed the limits, and then fetches at
most the limit (a file larger than announced is cut off while streaming and refused).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import httpx

from picoora.gateway.channels.links import Attachment, DownloadFailed, Kind, TooLarge
from picoora.secrets import scrub
from picoora.tls import tls_context

DOWNLOAD_SECONDS = 60.0


def kind_of(mime: str) -> Kind:
    """What a file is by its type, for platforms that send every file the same way (Discord, Slack)."""
    if mime.startswith("image/"):
        return "image"
    return "audio" if mime.startswith("audio/") else "document"


def from_host(url: str, roots: tuple[str, ...]) -> bool:
    """``url`` is under one of ``roots`` (a platform's file hosts): a payload's URL is never fetched from
    anywhere else, so a forged one cannot make the gateway read an address inside the network."""
    return any(url.startswith(root.rstrip("/") + "/") for root in roots)


def file_roots(hosts: tuple[str, ...], api_base: str) -> tuple[str, ...]:
    """Where a platform's files may be fetched from: its own file ``hosts``, and the host of a configured
    ``api_base`` (a fake in the tests; the bot token is sent there anyway)."""
    parts = urlsplit(api_base)
    return hosts + ((f"{parts.scheme}://{parts.netloc}",) if api_base else ())


def from_discord(data: dict[str, Any], roots: tuple[str, ...]) -> tuple[Attachment, ...]:
    """A Discord message's ``attachments`` (filename, size, content_type, url on Discord's CDN)."""
    return _listed(data.get("attachments"), roots, url="url", name="filename", mime="content_type", where="Discord")


def from_slack(event: dict[str, Any], roots: tuple[str, ...], token: str) -> tuple[Attachment, ...]:
    """A Slack message's ``files`` (name, mimetype, size, url_private_download, fetched with the bot token:
    which is why only Slack's own file host is ever asked)."""
    return _listed(event.get("files"), roots, url="url_private_download", name="name", mime="mimetype",
                   where="Slack", headers={"Authorization": f"Bearer {token}"}, secret=token)


def _listed(items: Any, roots: tuple[str, ...], *, url: str, name: str, mime: str, where: str,
            headers: dict[str, str] | None = None, secret: str = "") -> tuple[Attachment, ...]:
    found = []
    for item in items if isinstance(items, list) else []:
        address = str(item.get(url) or "") if isinstance(item, dict) else ""
        if not from_host(address, roots):
            continue
        kind = plain_mime(item.get(mime))
        size = item.get("size") if isinstance(item.get("size"), int) else None

        async def fetch(limit: int, address: str = address) -> bytes:
            return await download(address, limit, headers=headers, where=where, secret=secret)

        found.append(Attachment(kind_of(kind), str(item.get(name) or ""), kind, size, fetch))
    return tuple(found)


def plain_mime(value: str | None) -> str:
    """``Audio/OGG; codecs=opus`` -> ``audio/ogg``."""
    return (value or "").split(";")[0].strip().lower()


async def download(url: str, limit: int, *, headers: dict[str, str] | None = None, where: str = "the platform",
                   secret: str = "") -> bytes:
    """GET ``url``, at most ``limit`` bytes; ``secret`` (a token in the URL) never appears in an error."""
    try:
        async with httpx.AsyncClient(timeout=DOWNLOAD_SECONDS, follow_redirects=True,
                                     verify=await tls_context()) as client, \
                client.stream("GET", url, headers=headers) as response:
            if response.status_code >= 400:
                raise DownloadFailed(f"{where} answered {response.status_code} for the file")
            announced = response.headers.get("content-length", "")
            if announced.isdigit() and int(announced) > limit:
                raise TooLarge()
            chunks, taken = [], 0
            async for chunk in response.aiter_bytes():
                taken += len(chunk)
                if taken > limit:
                    raise TooLarge()
                chunks.append(chunk)
            return b"".join(chunks)
    except httpx.HTTPError as exc:
        detail = scrub(str(exc), [secret]) if secret else str(exc)
        raise DownloadFailed(f"could not download the file from {where}: {detail or type(exc).__name__}") from None
