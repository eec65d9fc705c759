"""Adding documents from what a user names: files, folders (recursively, the readable formats only) and
http(s) URLs (fetched through ``web_fetch``'s guarded fetcher: no private addresses, bounded size). Each
source ends as one ``Outcome``; a source that cannot be read is an outcome with its reason, and the
rest goes on. Every front door (CLI, HTTP) adds through here."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from picoora.docs.parsers import SUFFIXES, UnreadableDocument, parse_bytes, parse_file
from picoora.store.base import DocumentRecord, NewDocument, StoreError
from picoora.store.chunker import chunk_pages

if TYPE_CHECKING:
    from picoora.config import DocsConfig, WebFetchConfig
    from picoora.store.base import DocPage
    from picoora.store.protocol import Store

MAX_FILE_BYTES = 50_000_000  # a bigger file is refused before it is read
BATCH_CHARS = 2_000_000  # text stored per batch: enough chunks for the bulk workers, bounded memory
# A guest's document, in chunks (each embedded, on this machine's CPU): a 990 KB text file made 2,995 and took
# 9 minutes of both cores. 300 is about 100 KB of prose, a minute or so.
GUEST_MAX_CHUNKS = 300

PagesCheck = Callable[[list["DocPage"]], None]  # raises UnreadableDocument for a document not to be added


def chunk_limit(docs: DocsConfig, max_chunks: int) -> PagesCheck:
    """A check refusing a document that the store would cut into more than ``max_chunks`` chunks (counted by
    words, as the store cuts them; its token bound can only add more)."""

    def check(pages: list[DocPage]) -> None:
        count = len(chunk_pages(pages, docs.chunk_by, docs.chunk_size, docs.chunk_overlap))
        if count > max_chunks:
            raise UnreadableDocument(f"it would make {count} chunks to index, more than the {max_chunks} a guest's "
                                     "document may have: send a shorter part of it")

    return check


@dataclass
class Outcome:
    source: str
    status: str  # "added", "replaced", "unchanged" or "failed"
    document: DocumentRecord | None = None
    error: str = ""


def is_url(text: str) -> bool:
    return text.lower().startswith(("http://", "https://"))


def expand(sources: list[str]) -> Iterator[tuple[str, Path | None]]:
    """(source as stored, its path; None for a URL), folders opened into their document files in order."""
    for source in sources:
        if is_url(source):
            yield source, None
            continue
        path = Path(source).expanduser().absolute()
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES
                           and not any(part.startswith(".") for part in p.relative_to(path).parts))
            yield from ((str(p), p) for p in files)
        else:
            yield str(path), path


def read_source(source: str, path: Path | None, fetching: WebFetchConfig) -> tuple[str, list[DocPage]]:
    """(title, pages) of one source; UnreadableDocument when it cannot be read."""
    if path is not None:
        if not path.exists():
            raise UnreadableDocument("no such file or folder")
        return parse_file(path, MAX_FILE_BYTES)
    return fetch_url(source, fetching)


def fetch_url(url: str, cfg: WebFetchConfig) -> tuple[str, list[DocPage]]:
    """The page at ``url`` through web_fetch's fetcher and its settings (a guest's have no allow_hosts).
    Runs its own event loop: call it from a worker thread, never on a running loop."""
    import httpx

    from picoora.tools.netguard import AddressRefused
    from picoora.tools.web import FetchRefused, fetch

    try:
        fetched = asyncio.run(asyncio.wait_for(fetch(url, cfg), cfg.timeout_seconds))
    except (FetchRefused, AddressRefused) as exc:
        raise UnreadableDocument(str(exc)) from None
    except asyncio.TimeoutError:
        raise UnreadableDocument(f"took longer than {cfg.timeout_seconds:g}s") from None
    except (httpx.HTTPError, httpx.InvalidURL, ValueError) as exc:
        raise UnreadableDocument(f"fetching failed: {exc or type(exc).__name__}") from None
    if fetched.status >= 400:
        raise UnreadableDocument(f"the server answered {fetched.status}")
    if fetched.truncated:
        raise UnreadableDocument(f"larger than tools.web_fetch.max_bytes ({cfg.max_bytes})")
    html = "html" in fetched.content_type or (not fetched.content_type and b"<html" in fetched.body[:1000].lower())
    return parse_bytes(fetched.body, ".html" if html else ".txt", url)


def add_sources(store: Store, fetching: WebFetchConfig, sources: list[str], *, shared: bool = False,
                on_outcome: Callable[[Outcome], None] | None = None,
                progress: Callable[[int, int], None] | None = None,
                check: PagesCheck | None = None) -> list[Outcome]:
    """Add every document ``sources`` name; ``progress`` gets (documents done, documents in all). Documents are
    read one by one and stored in batches (``BATCH_CHARS`` of text), whose chunks are embedded together.
    ``check`` (a guest's ``chunk_limit``) may refuse a document once it is read."""
    todo = list(expand(sources))
    outcomes: list[Outcome] = []
    batch: list[NewDocument] = []

    def report(outcome: Outcome) -> None:
        outcomes.append(outcome)
        if on_outcome:
            on_outcome(outcome)
        if progress:
            progress(len(outcomes), len(todo))

    def flush() -> None:
        if batch:
            for doc, result in zip(batch, store.documents.add_many(batch, shared=shared), strict=True):
                report(Outcome(doc.source, result.status, result.document, result.error))
            batch.clear()

    for source, path in todo:
        try:
            title, pages = read_source(source, path, fetching)
            if check is not None:
                check(pages)
        except UnreadableDocument as exc:
            report(Outcome(source, "failed", error=str(exc)))
            continue
        batch.append(NewDocument(source, title, pages))
        if sum(len(p.text) for d in batch for p in d.pages) >= BATCH_CHARS:
            flush()
    flush()
    return outcomes


def add_upload(store: Store, name: str, data: bytes, *, shared: bool = False,
               check: PagesCheck | None = None) -> Outcome:
    """An uploaded file (the HTTP door): its name says the format and is its source."""
    source = Path(name).name or "upload"
    try:
        title, pages = parse_bytes(data, Path(source).suffix, Path(source).stem)
        if check is not None:
            check(pages)
        result = store.documents.add(f"upload:{source}", title, pages, shared=shared)
    except (UnreadableDocument, StoreError, ValueError) as exc:
        return Outcome(source, "failed", error=str(exc))
    return Outcome(source, result.status, result.document)
