"""The knowledge base's contract, run on both backends (tests/test_docs_store.py on files,
tests/oracle/test_oracle_docs.py on the recording fake Oracle): what a person's search and list may see."""

from __future__ import annotations

import pytest

from picoora.store.base import DocPage, DocumentCounts, StoreError
from picoora.store.protocol import Store

MANUAL = "The boiler shows error E42 when the water pressure is low; refill it to 1.5 bar."
DIARY = "Alice keeps her spare house key under the blue flowerpot by the door."
NOTES = "Bob parks his bicycle in the courtyard shed behind the bakery."


def check_isolation(owner: Store, alice: Store, bob: Store) -> None:
    manual = owner.documents.add("/owner/manual.md", "Boiler manual", [DocPage(MANUAL)], shared=True).document
    diary = alice.documents.add("/alice/diary.md", "Diary", [DocPage(DIARY)]).document
    bob.documents.add("/bob/notes.md", "Notes", [DocPage(NOTES)])

    assert [h.document.title for h in alice.documents.search("spare house key blue flowerpot")] == ["Diary"]
    assert bob.documents.search("spare house key blue flowerpot") == []
    assert owner.documents.search("spare house key blue flowerpot") == []  # the owner is a person too
    assert [h.document.title for h in bob.documents.search("boiler error E42 water pressure")] == ["Boiler manual"]
    assert {d.title for d in alice.documents.list()} == {"Diary", "Boiler manual"}
    assert {d.title for d in bob.documents.list()} == {"Notes", "Boiler manual"}
    assert {d.title for d in owner.documents.list()} == {"Boiler manual"}
    assert alice.documents.has_any() and bob.documents.has_any()

    assert bob.documents.remove(diary.id) is None  # not his
    assert bob.documents.remove(manual.id) is None  # shared, but the owner's
    assert [h.document.id for h in alice.documents.search("spare house key blue flowerpot")] == [diary.id]
    with pytest.raises(StoreError, match="only the owner"):
        alice.documents.add("/alice/open.md", "Open", [DocPage("for everyone")], shared=True)
    removed = alice.documents.remove(diary.id)
    assert removed is not None and removed.id == diary.id
    assert alice.documents.search("spare house key blue flowerpot") == []
    assert {d.title for d in alice.documents.list()} == {"Boiler manual"}


def check_readd_and_remove(store: Store) -> None:
    first = store.documents.add("/docs/a.md", "A", [DocPage(MANUAL)])
    assert first.status == "added" and first.document.chunks >= 1
    again = store.documents.add("/docs/a.md", "A", [DocPage(MANUAL)])
    assert again.status == "unchanged" and again.document.id == first.document.id
    changed = store.documents.add("/docs/a.md", "A", [DocPage(NOTES)])
    assert changed.status == "replaced" and changed.document.id == first.document.id
    assert store.documents.search("boiler error E42 water pressure") == []  # the old chunks are gone
    assert [h.document.id for h in store.documents.search("bicycle courtyard shed bakery")] == [first.document.id]
    assert [d.source for d in store.documents.list()] == ["/docs/a.md"]
    removed = store.documents.remove("/docs/a.md")
    assert removed is not None and removed.id == first.document.id
    assert store.documents.list() == [] and not store.documents.has_any()
    assert store.documents.search("bicycle courtyard shed bakery") == []
    assert store.documents.remove("/docs/a.md") is None


def check_pages_and_codes(store: Store) -> None:
    pages = [DocPage("Installing the server: run the setup script first.", 1),
             DocPage("If CREATE TABLE fails with ORA-00955 the table exists already; nothing to do.", 2)]
    store.documents.add("/docs/guide.pdf", "Guide", pages)
    hits = store.documents.search("ORA-00955")
    assert hits and hits[0].page == 2 and "ORA-00955" in hits[0].text
    assert 0.0 <= hits[0].score <= 1.0
    data = hits[0].to_json()
    assert {"text", "source", "title", "score", "chunk", "page"} <= set(data)
    assert data["source"] == "/docs/guide.pdf" and data["title"] == "Guide"


def check_counts_and_listing(owner: Store, alice: Store) -> None:
    """What status and the inspector show: the owner's store counts and lists every person's documents, newest
    first; a person's store only what that person sees."""
    assert owner.documents.counts() == DocumentCounts(0, 0, 0) and owner.documents.all() == []
    manual = owner.documents.add("/owner/manual.md", "Boiler manual", [DocPage(MANUAL)], shared=True).document
    diary = alice.documents.add("/alice/diary.md", "Diary", [DocPage(DIARY)]).document
    long_text = " ".join(f"Sentence {n} is about the allotment shed and its padlock." for n in range(40))
    notes = owner.documents.add("/owner/notes.md", "Notes", [DocPage(long_text)]).document
    assert notes.chunks > 1
    chunks = manual.chunks + diary.chunks + notes.chunks
    assert owner.documents.counts() == DocumentCounts(documents=3, chunks=chunks, shared=1)
    listed = owner.documents.all()
    assert [d.id for d in listed] == [notes.id, diary.id, manual.id]  # newest first
    assert [d.person for d in listed] == ["", "alice", ""] and [d.shared for d in listed] == [False, False, True]
    assert [d.id for d in owner.documents.all(2)] == [notes.id, diary.id]
    assert alice.documents.counts() == DocumentCounts(2, manual.chunks + diary.chunks, 1)
    assert {d.id for d in alice.documents.all()} == {manual.id, diary.id}
    assert alice.documents.remove(diary.id) is not None
    assert owner.documents.counts() == DocumentCounts(2, manual.chunks + notes.chunks, 1)
