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
the rest. An item that exists in both places (an old version ran after the move) is merged file by
file; a name present in both is left at its old path with a warning, never overwritten.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from picoora.atomic import fsync_dir

log = logging.getLogger(__name__)

PRIVATE_DIR = ".picoora"
LEGACY_LOCK = ".picoora.lock"


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
    def traces(self) -> Path:
        return self.private / "traces"

    @property
    def people(self) -> Path:
        return self.private / "people"

    def person(self, name: str) -> Path:
        """The root of a person's own store (everyone but the owner): private, like the rest."""
        return self.people / name

    @property
    def notes(self) -> Path:
        """Daily notes: people read them, so they stay in the open workspace."""
        return self.workspace / "memory"

    def note_path(self, day: date) -> Path:
        return self.notes / day.strftime("%Y%m") / f"{day.strftime('%Y%m%d')}.md"

    def prompt_path(self, name: str) -> Path:
        return self.workspace / name

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
    """Move a workspace's private files from the old layout; returns what moved. Call under the store
    lock. Idempotent: a second call, or one after a crash half-way, finishes what is left."""
    moved: list[str] = []
    legacy_lock = layout.workspace / LEGACY_LOCK
    if not legacy_lock.exists() and not any(old.exists() for old, _ in layout.legacy_moves()):
        return moved
    import fcntl

    # An older picoora still running on this workspace holds the old lock while it writes.
    fd = os.open(legacy_lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        for old, new in layout.legacy_moves():
            if old.exists() and not old.is_symlink():
                _move(old, new, moved)
        os.unlink(legacy_lock)
    finally:
        os.close(fd)
    if moved:
        log.warning("moved the store's files into %s: %s", layout.private, ", ".join(moved))
    return moved


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

