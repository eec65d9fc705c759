"""Daily notes as Markdown: ``memory/YYYYMM/YYYYMMDD.md``, the Go version's format, one file a day."""

from __future__ import annotations

import builtins
import logging
import re
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from picoora import atomic
from picoora.store.base import DailyNote, DailyNoteRow
from picoora.store.files.context import FileContext, FileFamily, read_text
from picoora.store.fs_errors import report_os_errors

if TYPE_CHECKING:
    from picoora.store.embedder import Embedder

log = logging.getLogger(__name__)

NOTE_SEARCH_DAYS = 366  # notes searched by `oracle-inspect notes -s` on files: about a year


def _read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _similarities(embedder: Embedder | None, query: str, texts: builtins.list[str]) -> builtins.list[float] | None:
    """Cosine similarity of ``query`` to each text, or None when no embedder can run."""
    if embedder is None:
        return None
    try:
        vectors = embedder.embed([query, *texts])
    except Exception as exc:  # an embedder that cannot load: keyword search instead
        log.warning("embedding daily notes failed, searching by keywords: %s", exc)
        return None
    return [float(score) for score in vectors[1:] @ vectors[0]]  # the embedders return unit vectors


@report_os_errors
class FileNotes(FileFamily):
    """``embedder``: what search embeds the notes with on the fly (None: by keywords)."""

    def __init__(self, ctx: FileContext, embedder: Embedder | None):
        super().__init__(ctx)
        self._embedder = embedder

    def _path(self, day: date) -> Path:
        return self.ctx.layout.note_path(day)

    def append(self, content: str, day: date | None = None) -> DailyNote:
        day = day or date.today()  # local date, as a person reads their journal
        path = self._path(day)
        with self.ctx.lock:  # rewritten whole (a note is small), so a crash never leaves half an entry
            existing = _read_bytes(path)  # as bytes: a bad byte someone left in it is kept, not replaced
            data = (f"# {day.isoformat()}\n\n{content}".encode() if existing is None
                    else existing + f"\n{content}".encode())
            atomic.atomic_write_bytes(path, data)
        return DailyNote(day=day, content=data.decode("utf-8", errors="replace"))

    def recent(self, days: int = 3) -> builtins.list[DailyNote]:
        """Notes of today and the ``days - 1`` days before, newest first; days without a note are skipped."""
        today = date.today()
        notes = []
        for back in range(days):
            day = today - timedelta(days=back)
            text = read_text(self._path(day))
            if text is not None:
                notes.append(DailyNote(day=day, content=text))
        return notes

    def days(self) -> builtins.list[date]:
        """The days with a note, newest first."""
        days = []
        for path in self.ctx.layout.notes.glob("[0-9]*/[0-9]*.md"):
            if re.fullmatch(r"\d{8}\.md", path.name):
                try:
                    days.append(datetime.strptime(path.stem, "%Y%m%d").date())
                except ValueError:
                    continue
        return sorted(days, reverse=True)

    def list(self, limit: int) -> builtins.list[DailyNoteRow]:
        rows = []
        for day in self.days()[: max(limit, 0)]:
            path = self._path(day)
            text = read_text(path)
            if text is not None:
                updated = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)
                rows.append(DailyNoteRow(day, day.strftime("%Y%m%d"), text, updated, has_vector=False))
        return rows

    def search(self, query: str, limit: int = 5) -> builtins.list[tuple[DailyNote, float]]:
        """By meaning when an embedder loads (notes are embedded on the fly: there are few), else by keywords."""
        from picoora.store.keywords import KeywordIndex

        notes = [DailyNote(row.day, row.content) for row in self.list(NOTE_SEARCH_DAYS)]
        if not notes or not query.strip():
            return []
        scores = _similarities(self._embedder, query, [n.content for n in notes])
        if scores is None:
            keywords = KeywordIndex()
            for i, note in enumerate(notes):
                keywords.add(str(i), note.content)
            by_id, codes = keywords.match(query)
            scores = [max(by_id.get(str(i), 0.0), codes.get(str(i), 0.0)) for i in range(len(notes))]
        ranked = sorted(zip(notes, scores, strict=True), key=lambda pair: pair[1], reverse=True)
        return [(note, float(score)) for note, score in ranked if score > 0][:limit]
