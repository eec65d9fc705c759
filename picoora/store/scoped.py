"""A person's view of the store: their memories, daily notes, sessions, transcripts, traces and state are
theirs alone; the assistant's config and meta are shared (read from the owner's store), and of its prompt
files only the persona (``PERSONA_PROMPTS``): ``USER.md`` is about the owner and ``AGENT(S).md`` about the
owner's machine, neither is for someone else's turns.

Scoping is by storage, not by filtering results: on Oracle a person's rows carry their own ``agent_id``
(``<agent_id>.<person>``), so every query's WHERE clause selects only them before any vector ranking; on
files a person has their own store root under the workspace's private directory. A query for one person
cannot see another's rows, whatever the ranking or the tool asks.
"""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any

from picoora.store.base import DocumentCounts, StoreError, newest_first

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from picoora.config import Config
    from picoora.store.base import (
        AddDocumentResult,
        BackendDetails,
        DocPage,
        DocumentHit,
        DocumentRecord,
        NewDocument,
        Prompt,
        StoreStats,
    )
    from picoora.store.families.documents import Documents, Progress
    from picoora.store.families.prompts import Prompts
    from picoora.store.protocol import Store

AGENT_ID_BYTES = 64  # PICO_ tables' agent_id is VARCHAR2(64)
PERSONA_PROMPTS = ("IDENTITY.md", "SOUL.md")  # who the assistant is: the only prompt files a person sees


class PersonaPrompts:
    """The owner's prompt files as a person sees them: only the persona. Setting one sets the owner's."""

    def __init__(self, prompts: Prompts):
        self._prompts = prompts
        self.set = prompts.set

    def list(self) -> builtins.list[Prompt]:
        return [prompt for prompt in self._prompts.list() if prompt.name in PERSONA_PROMPTS]

    def get(self, name: str) -> Prompt | None:
        return self._prompts.get(name) if name in PERSONA_PROMPTS else None


class PersonDocuments:
    """The owner's documents as a person sees them. Documents live in the owner's store, each marked with who
    added it: a person's search sees their own and the shared ones (filtered before ranking); sharing and
    reindexing are the owner's alone."""

    def __init__(self, documents: Documents, person: str):
        self._documents, self.person = documents, person

    def add(self, source: str, title: str, pages: builtins.list[DocPage], *, shared: bool = False,
            person: str = "", progress: Progress | None = None) -> AddDocumentResult:
        if shared:
            raise StoreError("only the owner can share documents (--shared)")
        return self._documents.add(source, title, pages, person=self.person, progress=progress)

    def add_many(self, documents: builtins.list[NewDocument], *, shared: bool = False, person: str = "",
                 progress: Progress | None = None) -> builtins.list[AddDocumentResult]:
        if shared:
            raise StoreError("only the owner can share documents (--shared)")
        return self._documents.add_many(documents, person=self.person, progress=progress)

    def list(self, *, person: str = "") -> builtins.list[DocumentRecord]:
        return self._documents.list(person=self.person)

    def remove(self, id_or_source: str, *, person: str = "") -> DocumentRecord | None:
        return self._documents.remove(id_or_source, person=self.person)

    def reindex(self, *, progress: Progress | None = None) -> int:
        raise StoreError("only the owner can reindex the documents")

    def search(self, query: str, limit: int = 5, *, person: str = "") -> builtins.list[DocumentHit]:
        return self._documents.search(query, limit, person=self.person)

    def has_any(self, *, person: str = "") -> bool:
        return self._documents.has_any(person=self.person)

    def all(self, limit: int | None = None) -> builtins.list[DocumentRecord]:
        """What this person sees (their own and the shared), newest first: never another person's."""
        return newest_first(self.list(), limit)

    def counts(self) -> DocumentCounts:
        return DocumentCounts.of(self.list())


class PersonStore:
    """A person's families are their own store's; config and meta are the owner's, prompts the persona."""

    def __init__(self, own: Store, shared: Store, person: str):
        self._own, self._shared, self.person = own, shared, person
        self.state = own.state
        self.traces = own.traces
        self.tool_outputs = own.tool_outputs
        self.notes = own.notes
        self.sessions = own.sessions
        self.transcripts = own.transcripts
        self.memories = own.memories
        self.leases = own.leases
        self.config = shared.config
        self.meta = shared.meta
        self.prompts = PersonaPrompts(shared.prompts)
        self.documents = PersonDocuments(shared.documents, person)

    @property
    def backend(self) -> str:
        return self._shared.backend

    @property
    def display_name(self) -> str:
        return self._shared.display_name

    def details(self) -> BackendDetails:
        return self._shared.details()

    def stats(self) -> StoreStats:
        return self._own.stats()

    def ping(self) -> None:
        self._own.ping()

    def exclusive_service_lock(self, service: str, details: dict[str, Any]) -> AbstractContextManager[Any] | None:
        return self._own.exclusive_service_lock(service, details)

    def close(self) -> None:
        self._own.close()  # the shared store belongs to its opener


def person_agent_id(agent_id: str, person: str) -> str:
    """``<agent_id>.<person>``, within the 64-byte column; a longer one ends in a hash of the person's name,
    so two long names never share a scope."""
    import hashlib

    scoped = f"{agent_id}.{person}"
    if len(scoped.encode("utf-8")) <= AGENT_ID_BYTES:
        return scoped
    digest = hashlib.sha256(person.encode("utf-8")).hexdigest()[:16]
    head = agent_id.encode("utf-8")[: AGENT_ID_BYTES - len(digest) - 1].decode("utf-8", "ignore")
    return f"{head}.{digest}"


def open_person_store(config: Config, owner_store: Store, person: str) -> Store:
    """``person``'s store beside ``owner_store``, on the same backend the owner's store really uses (after a
    fallback to files, a person's data goes to files too). People are cheap: on Oracle a person's store is
    the owner's database (its pool) under their ``agent_id``; on files it embeds with the owner's embedder
    (``embedder.shared_embedder``: one per process)."""
    from picoora.store import open_file_store

    if owner_store.backend == "oracle":
        own: Store = owner_store.for_agent(person_agent_id(config.oracle.agent_id, person))  # type: ignore[attr-defined]
    else:
        from picoora.store.layout import FileLayout

        root = FileLayout(owner_store.workspace).person(person)  # type: ignore[attr-defined]  # a FileStore here
        own = open_file_store(config, workspace=root)
    return PersonStore(own, owner_store, person)
