"""``search_docs``: the model searches the person's documents (their own and the shared ones).

Offered only while the person has a document, so a user with no knowledge base pays nothing in prompt
tokens. Whether they have one is a store read (a database round trip on Oracle), so it is never made where
the tool list is built, on the event loop: ``refresh`` (awaited before each turn lists its tools) asks the
store in a thread at most every PRESENCE_SECONDS, or at once after ``recheck`` (a document was added or
removed in this process), and ``available`` answers from that. A store that cannot answer: not offered.

Each hit comes back wrapped as untrusted content, as a fetched page is (a document may hold instructions
aimed at the model), under a citation line naming its title and chunk or page; the chunks and their scores
go to the turn's trace.
"""

from __future__ import annotations

import asyncio
import logging
import time

from pydantic import BaseModel, Field

from picoora.store.base import DocumentHit
from picoora.store.protocol import Store
from picoora.tools.base import Tool, ToolContext, ToolResult
from picoora.untrusted import wrap_untrusted

log = logging.getLogger(__name__)

PRESENCE_SECONDS = 10.0


def citation(hit: DocumentHit) -> str:
    """How an answer names its source: the title and the page (PDFs) or chunk."""
    where = f"page {hit.page}" if hit.page else f"chunk {hit.chunk + 1}"
    return f"{hit.document.title or hit.document.source}, {where}"


def format_hits(query: str, hits: list[DocumentHit]) -> str:
    if not hits:
        return f"No document answers: {query}"
    parts = [f"{len(hits)} passages from the documents; cite them as [title, page/chunk]:"]
    for number, hit in enumerate(hits, start=1):
        parts.append(f"{number}. [{citation(hit)}] ({hit.score * 100:.0f}% match)")
        parts.append(wrap_untrusted(hit.text, hit.document.source))
    return "\n".join(parts)


def trace_details(hits: list[DocumentHit]) -> list[dict]:
    return [{"document_id": h.document.id, "title": h.document.title, "source": h.document.source,
             "chunk": h.chunk, "page": h.page, "score": round(h.score, 4)} for h in hits]


class SearchDocsArgs(BaseModel):
    query: str = Field(min_length=1, max_length=1000, description="What to look up")


class SearchDocs(Tool):
    name = "search_docs"
    description = "Search the user's documents. Cite [title, page/chunk] in the answer."
    Args = SearchDocsArgs

    def __init__(self, store: Store | None = None):
        self._store = store  # None: always offered (``picoora mcp``: a client may add documents at any time)
        self._present = False  # the last answer (none yet: not offered)
        self._changes = 0  # documents added or removed here (``recheck``)
        self._looked: tuple[int, float] | None = None  # (changes, monotonic time) when ``_present`` was read

    def recheck(self) -> None:
        """Look again before the next turn (a document was just added or removed here; another process's
        change shows within PRESENCE_SECONDS)."""
        self._changes += 1

    def available(self) -> bool:
        return self._store is None or self._present

    async def refresh(self) -> None:
        if self._store is None:
            return
        changes, now = self._changes, time.monotonic()
        if self._looked is not None and self._looked[0] == changes and now - self._looked[1] <= PRESENCE_SECONDS:
            return
        try:
            self._present = await asyncio.to_thread(self._store.documents.has_any)
        except Exception as exc:  # a store that cannot answer now: offer nothing rather than fail the turn
            log.debug("search_docs not offered: the store could not say whether there are documents: %s", exc)
            self._present = False
        if self._changes == changes:  # a change while the store was asked: look again next turn
            self._looked = (changes, now)

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        assert isinstance(args, SearchDocsArgs)
        hits = await asyncio.to_thread(ctx.store.documents.search, args.query, 4)
        text = await asyncio.to_thread(format_hits, args.query, hits)
        return ToolResult(text, details=trace_details(hits))
