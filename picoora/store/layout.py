"""Where the file backend keeps what: the one place that knows the paths, and the one-time move to it.

A workspace holds two kinds of files:

- what people read and the assistant may edit with its tools: the prompt files (``IDENTITY.md``,
  ``USER.md``, ...) at the top, daily notes under ``memory/YYYYMM/YYYYMMDD.md``;
- what only the store may touch, under ``.picoora/`` (``PRIVATE_DIR``): sessions, transcripts, the
  memory log and anything its index keeps beside it, state/config/meta documents, turn traces and
  the lock file. The tools refuse this directory and the exec sandbox covers it, so no model can
  read, replace, truncate or lock the store's own files.

Workspaces from before this layout kept the private files at the top (``sessions/``,
``transcripts/``, ``state/``, ``traces/``, ``memory/memories.jsonl``, ``.picoora.lock``). :func:`migrate` moves
each with one ``rename`` (atomic on one file system), under the store lock and the old lock file, so
a crash at any point leaves every item either still old or already new, and the next open finishes
the rest. An item that exists in both places is merged file by file; a name present in both is left at
its old path with a warning, never overwritten.

It runs once per workspace, never again: those old paths are ordinary workspace paths that a model
could write (a forged session, a planted memory), so only the old layout's lock file, or old items in a
workspace this layout never opened, prove an old workspace; the first open of any workspace writes
``.picoora/layout`` (``LAYOUT_MARKER``), after which nothing is moved. The file tools refuse the old
paths too (``legacy_paths``).
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from picoora.atomic import fsync_dir

log = logging.getLogger(__name__)

PRIVATE_DIR = ".picoora"
LEGACY_LOCK = ".picoora.lock"
LAYOUT_MARKER = "layout"  # in the private directory: this workspace is on this layout, never migrate again


@dataclass(frozen=True)
class FileLayout:
    workspace: Path

    @property
    def private(self) -> Path:
        """Everything only the store may touch lives under here."""
        return self.workspace / PRIVATE_DIR

    @property
    def lock(self) -> Path:
        return self.private / "store.lock"

    @property
    def sessions(self) -> Path:
        return self.private / "sessions"

    @property
    def transcripts(self) -> Path:
        return self.private / "transcripts"

    @property
    def state(self) -> Path:
        return self.private / "state"

    @property
    def memory(self) -> Path:
        """The memory log's directory; an index kept beside the log belongs here too."""
        return self.private / "memory"

    @property
    def memory_log(self) -> Path:
        return self.memory / "memories.jsonl"

    @property
    def docs(self) -> Path:
        """The knowledge base (``doc_library``): document records, chunks and their vectors."""
        return self.private / "docs"

    @property
    def traces(self) -> Path:
        return self.private / "traces"

    @property
    def tool_outputs(self) -> Path:
        return self.private / "tool_outputs"

    @property
    def people(self) -> Path:
        return self.private / "people"

    def person(self, name: str) -> Path:
        """The root of a person's own store (everyone but the owner): private, like the rest, and always one
        folder inside ``people/`` (a name such as ``..`` or ``.picoora`` would be the owner's store)."""
        from picoora.config import PERSON_NAME_PATTERN

        if not re.fullmatch(PERSON_NAME_PATTERN, name):
            raise ValueError(f"{name[:40]!r} cannot name a person's store")
        return self.people / name

    @property
    def notes(self) -> Path:
        """Daily notes: people read them, so they stay in the open workspace."""
        return self.workspace / "memory"

    def note_path(self, day: date) -> Path:
        return self.notes / day.strftime("%Y%m") / f"{day.strftime('%Y%m%d')}.md"

    def prompt_path(self, name: str) -> Path:
        return self.workspace / name

    @property
    def marker(self) -> Path:
        return self.private / LAYOUT_MARKER

    def legacy_paths(self) -> list[Path]:
        """The old layout's private paths, the lock file included: no tool may write them."""
        return [old for old, _ in self.legacy_moves()] + [self.workspace / LEGACY_LOCK]

    def legacy_moves(self) -> list[tuple[Path, Path]]:
        """(old path, new path) for every private item of the pre-``.picoora/`` layout."""
        ws = self.workspace
        return [
            (ws / "sessions", self.sessions),
            (ws / "transcripts", self.transcripts),
            (ws / "state", self.state),
            (ws / "traces", self.traces),
            (ws / "memory" / "memories.jsonl", self.memory_log),
        ]


def migrate(layout: FileLayout) -> list[str]:
    """Move a workspace's private files from the old layout, once; returns what moved. Call under the store
    lock. A call after a crash half-way finishes what is left (the old lock file is removed last, the
    marker written just before); once the marker exists, nothing is ever moved again."""
    moved: list[str] = []
    if layout.marker.exists():
        return moved
    legacy_lock = layout.workspace / LEGACY_LOCK
    old_items = any(old.exists() for old, _ in layout.legacy_moves())
    # Proof of an old workspace: the old lock file, or old items in a workspace this layout never opened
    # (nothing in the private directory but the lock just taken: the Go version's workspaces look so).
    proven = (legacy_lock.exists() and not legacy_lock.is_symlink()) or (old_items and _first_open(layout))
    if not proven:  # a new workspace, or one already on this layout from before the marker
        _mark(layout)
        return moved
    import fcntl

    # An older picoora still running on this workspace holds the old lock while it writes.
    fd = os.open(legacy_lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        for old, new in layout.legacy_moves():
            if old.exists() and not old.is_symlink():
                _move(old, new, moved)
        _mark(layout)
        os.unlink(legacy_lock)
    finally:
        os.close(fd)
    if moved:
        log.warning("moved the store's files into %s: %s", layout.private, ", ".join(moved))
    return moved


def _first_open(layout: FileLayout) -> bool:
    return all(entry.name == layout.lock.name for entry in layout.private.iterdir())


def _mark(layout: FileLayout) -> None:
    from picoora.atomic import atomic_write_text

    layout.private.mkdir(parents=True, exist_ok=True, mode=0o700)
    atomic_write_text(layout.marker, "picoora file layout 2: the store's files are in this directory\n", 0o600)


def _move(old: Path, new: Path, moved: list[str]) -> None:
    new.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not new.exists():
        os.rename(old, new)
        fsync_dir(new.parent)
        fsync_dir(old.parent)
        moved.append(str(old))
        return
    if not (old.is_dir() and new.is_dir()):
        log.warning("%s exists in the old and the new layout: the old copy is left at %s", new.name, old)
        return
    for child in sorted(old.iterdir()):
        _move(child, new / child.name, moved)
    try:
        old.rmdir()
    except OSError:  # a conflict left something behind
        pass

