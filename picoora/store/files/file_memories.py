"""The file backend's memories: an append-only op log, its fold (a snapshot plus the lines after it), and
the search index fed from it.

``memory/memories.jsonl`` holds one operation per line:
  add      {"op":"add","id","content","importance","category","created_at","accessed_at","access_count","model","vec",
            "provenance","expires_at","superseded_by"}   (the last three only when known or set)
  forget   {"op":"forget","id","at"}
  touch    {"op":"touch","ids":[...],"at"}          recall accessed these memories
  update   {"op":"update","id","importance","at"}   a duplicate remember raised the importance
  supersede {"op":"supersede","id","by","at"}       a newer memory states this one's subject anew
  reembed  {"op":"reembed","id","model","vec"}      reindex replaced the vector
``vec`` is the float32 vector, little-endian, base64 (2 KB for 384 dims); ``model`` is the embedder that
made it, so vectors of different models are never compared. When dead lines outnumber live memories the
log is compacted by an atomic rewrite into one ``add`` per live memory.

Another process may append at any time, so every operation first catches up with the file while holding
the workspace lock: new lines are read from the last known offset; a different file (another process
compacted: another inode, or different bytes before our offset) or a shorter one means a full reload.
A process does not fold the whole log to start: ``memory_snapshot`` keeps a memory-mapped image of it
beside the log, and only the lines after the image are replayed (``MemoryLog``).
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import Callable, Container, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from picoora.atomic import JsonlReader, append_jsonl, atomic_write_bytes, encode_jsonl
from picoora.store.base import AddMemoryResult, MemoryRecord, Provenance, time_from_json, time_to_json
from picoora.store.files.memory_ops import add_op, decode_vector, encode_vector, record_from_add
from picoora.store.ranking import normalise_text

if TYPE_CHECKING:
    import numpy as np

    from picoora.store.anchors import Anchors
    from picoora.store.files.log_index import LogIndex, Overlay
    from picoora.store.files.memory_index import MemoryIndex
    from picoora.store.files.memory_snapshot import ChangedRow, LogPosition, NewRow, Snapshot

log = logging.getLogger(__name__)

COMPACT_MIN_DEAD_LINES = 500  # below this, a rewrite costs more than the lines it saves
SNAPSHOT_TAIL_OPS = 1000  # log lines after the snapshot before it is rewritten (each process replays them)
_ID_HEX_CHARS = 12  # short enough to type in `picoora memory forget ID`; collisions are checked


def now_utc() -> datetime:
    return datetime.now(timezone.utc)


@dataclass
class _Entry:
    record: MemoryRecord
    vec: str | None  # the encoded vector; dropped once the index holds it, kept when folding for a rewrite


def _fold(ops: Iterable[dict[str, Any]]) -> tuple[dict[str, _Entry], int]:
    """The memories the ops leave, and how many ops there were."""
    entries: dict[str, _Entry] = {}
    count = 0
    for count, op in enumerate(ops, start=1):  # noqa: B007 (read after the loop: how many ops there were)
        for _ in _apply(entries, op):
            pass
    return entries, count


def _apply(entries: dict[str, _Entry] | _Memories, op: dict[str, Any]) -> Iterable[str]:
    """Fold one op into ``entries``; yields the ids it changed. Unknown ops are skipped (newer writers)."""
    kind = op.get("op")
    try:
        if kind == "add":
            entries[str(op["id"])] = _Entry(record_from_add(op), op.get("vec"))
            yield str(op["id"])
        elif kind == "forget":
            if entries.pop(str(op["id"]), None) is not None:
                yield str(op["id"])
        elif kind == "touch":
            at = time_from_json(op.get("at"))
            for memory_id in op.get("ids") or []:
                entry = entries.get(memory_id)
                if entry is not None:
                    entry.record.access_count += 1
                    entry.record.accessed_at = at
                    yield memory_id
        elif kind == "update":
            entry = entries.get(str(op["id"]))
            if entry is not None:
                entry.record.importance = float(op["importance"])
                yield entry.record.id
        elif kind == "supersede":
            entry = entries.get(str(op["id"]))
            if entry is not None:
                entry.record.superseded_by = str(op["by"])
                yield entry.record.id
        elif kind == "reembed":
            entry = entries.get(str(op["id"]))
            if entry is not None:
                entry.record.embedding_model = str(op["model"])
                entry.vec = str(op["vec"])
                yield entry.record.id
        else:
            log.warning("memory log: unknown op %r skipped (written by a newer picoora?)", kind)
    except (KeyError, TypeError, ValueError) as exc:
        log.warning("memory log: malformed %r op skipped (%s)", kind, exc)


class _Memories:
    """The live memories as one mapping of id -> _Entry: snapshot rows (read when asked for, changes kept in
    the overlay) plus the tail, the memories added or re-embedded since. ``_apply`` folds ops into it as
    into a plain dict; a snapshot row it touches is read into ``_read`` and its change copied to the
    overlay by ``settle``."""

    def __init__(self, base: Snapshot | None, overlay: Overlay):
        self.base = base
        self.overlay = overlay
        self.tail: dict[str, _Entry] = {}
        self._read: dict[int, _Entry] = {}  # snapshot rows looked at since loading, by row
        self._base_rows: dict[str, int | None] = {}  # id -> its row in ``base`` (which never changes)
        # Tail memories that replaced a snapshot row (re-embedded, or added again under their id): a fold of
        # the log keeps such a memory where it was first added, so a rewrite puts it back at that row.
        self.moved: dict[str, int] = {}

    def row(self, memory_id: str) -> int | None:
        if self.base is None:
            return None
        if memory_id not in self._base_rows:  # a lookup parses the record (hash collisions): once per id
            self._base_rows[memory_id] = self.base.row_of(memory_id)
        row = self._base_rows[memory_id]
        return None if row is None or row in self.overlay.dead else row

    def get(self, memory_id: str, default: _Entry | None = None) -> _Entry | None:
        entry = self.tail.get(memory_id)
        if entry is not None:
            return entry
        row = self.row(memory_id)
        if row is None or self.base is None:  # a row is only found in a snapshot
            return default
        if row not in self._read:
            self._read[row] = _Entry(replace(self.overlay.changed.get(row) or self.base.record(row)), None)
        return self._read[row]

    def __getitem__(self, memory_id: str) -> _Entry:
        entry = self.get(memory_id)
        if entry is None:
            raise KeyError(memory_id)
        return entry

    def __contains__(self, memory_id: object) -> bool:
        return isinstance(memory_id, str) and self.get(memory_id) is not None

    def __setitem__(self, memory_id: str, entry: _Entry) -> None:
        row = self._kill_row(memory_id)
        if row is not None:
            self.moved[memory_id] = row
        self.tail[memory_id] = entry

    def pop(self, memory_id: str, default: _Entry | None = None) -> _Entry | None:
        if memory_id in self.tail:
            self.moved.pop(memory_id, None)  # added again later, it goes to the end, as in a fold
            return self.tail.pop(memory_id)
        entry = self.get(memory_id)
        if entry is None:
            return default
        self._kill_row(memory_id)
        return entry

    def _kill_row(self, memory_id: str) -> int | None:
        row = self.row(memory_id)
        if row is not None:
            with self.overlay.lock:
                self.overlay.dead.add(row)
                self.overlay.changed.pop(row, None)
            self._read.pop(row, None)
        return row

    def settle(self, memory_id: str) -> bool:
        """After ``_apply`` changed ``memory_id``: a snapshot row's new record goes to the overlay; a new
        vector moves it to the tail. True when it is (now) in the tail."""
        if memory_id in self.tail:
            return True
        row = self.row(memory_id)
        if row is None or row not in self._read:
            return False
        entry = self._read[row]
        if entry.vec is not None:  # re-embedded: the snapshot's vector is stale
            self[memory_id] = entry
            return True
        with self.overlay.lock:
            self.overlay.changed[row] = replace(entry.record)
        return False

    def __len__(self) -> int:
        return (self.base.rows - len(self.overlay.dead) if self.base else 0) + len(self.tail)

    def without_vector(self, model: str) -> int:
        """How many live memories have no vector of ``model``. A snapshot of that model says so in
        ``has_vector`` (its matrix holds exactly that model's vectors, and a re-embedded row moves to the tail),
        so no record is decoded; only a snapshot of another model's (a store opened with a different
        embedder) has its records read."""
        tail = sum(1 for entry in self.tail.values() if entry.record.embedding_model != model)
        base = self.base
        if base is None:
            return tail
        dead = sorted(self.overlay.dead)
        if base.model != model:
            return tail + sum(1 for row in range(base.rows) if row not in self.overlay.dead
                              and (self.overlay.changed.get(row) or base.record(row)).embedding_model != model)
        return tail + base.rows - len(dead) - (base.vector_rows - base.vector_rows_among(dead))

    def values(self) -> Iterator[_Entry]:
        if self.base is not None:
            for row in range(self.base.rows):
                if row not in self.overlay.dead:
                    yield self._read.get(row) or _Entry(self.overlay.changed.get(row) or self.base.record(row), None)
        yield from self.tail.values()

    def snapshot_rows(self, vector_of: Callable[[_Entry], np.ndarray | None]) -> list[range | ChangedRow | NewRow]:
        """The live memories in the order a fold of the log leaves them, for ``Snapshot.write``: runs of
        unchanged snapshot rows, rows whose record changed, and the tail (``vector_of`` gives its vectors)."""
        from picoora.store.files.memory_snapshot import ChangedRow, NewRow

        pieces: list[range | ChangedRow | NewRow] = []
        moved_to = {row: memory_id for memory_id, row in self.moved.items()}
        start = 0
        for row in sorted(self.overlay.dead | self.overlay.changed.keys()):
            pieces.append(range(start, row))
            if row in self.overlay.changed:
                pieces.append(ChangedRow(row, self.overlay.changed[row]))
            elif row in moved_to:
                entry = self.tail[moved_to[row]]
                pieces.append(NewRow(entry.record, vector_of(entry)))
            start = row + 1
        pieces.append(range(start, self.base.rows if self.base else 0))
        pieces.extend(NewRow(entry.record, vector_of(entry)) for memory_id, entry in self.tail.items()
                      if memory_id not in self.moved)
        return pieces


class MemoryLog:
    """Memories of one workspace. Callers hold the workspace lock around every method; the index that
    ``searchable`` returns may then be used without it (embedding may load a model, which takes a while).

    State: the snapshot (``memory_snapshot``, beside the log) plus the log lines after it. A process reads
    the snapshot's manifest and those lines, never the whole log, unless the snapshot is missing or does
    not match the log; then it folds the log once and writes a new snapshot. When ``SNAPSHOT_TAIL_OPS``
    lines have accumulated after it, the snapshot is rewritten from what is in memory (the snapshot, its
    overlay and the tail: together the fold of the log), not from the log.
    """

    def __init__(self, path: Path, index_factory: Callable[..., MemoryIndex], model: str | None):
        """``model``: the embedder whose vectors the snapshot holds (None: keyword-only)."""
        self.path = path
        self._index_factory = index_factory
        self._model = model
        self._loaded = False
        # Which file, up to where, and a digest of the bytes before that: a compaction by another process
        # is a new file, but its inode number may be the old one's (reused), so identity alone is not enough.
        self._position: LogPosition | None = None
        self._offset = 0
        self._lines = 0  # lines in the log, to decide when to compact
        self._tail_ops = 0  # lines after the snapshot, to decide when to rewrite it
        self._anchors: Anchors | None = None  # kept across reloads, like the embedder
        self._bulk = False  # during an import or reindex the snapshot is rewritten once, at the end
        self._set_base(None)

    def _set_base(self, base: Snapshot | None) -> None:
        from picoora.store.files.log_index import Overlay

        self._base = base
        self._overlay = Overlay()
        self._entries = _Memories(base, self._overlay)
        self._tail_index: MemoryIndex | None = None  # built on first need: listing memories never pays for it
        self._index: LogIndex | None = None

    def _tail(self) -> MemoryIndex:
        if self._tail_index is None:
            self._tail_index = self._index_factory(anchors=self._anchors)
            self._anchors = self._tail_index.anchors
            for entry in self._entries.tail.values():
                self._tail_index.add(replace(entry.record), self._take_vector(entry))
        return self._tail_index

    # ---- catching up with the file -------------------------------------------------------------

    def refresh(self) -> None:
        try:
            status = os.stat(self.path)
        except FileNotFoundError:
            if not self._loaded or self._position is not None:  # first load, or someone deleted the log
                self._set_base(None)
                self._lines, self._tail_ops, self._loaded, self._position, self._offset = 0, 0, True, None, 0
            return
        if not self._loaded or status.st_size < self._offset or self._moved():
            self._load()
        elif status.st_size > self._offset:
            self._read_tail()
        if self._tail_ops > SNAPSHOT_TAIL_OPS and not self._bulk:
            # Another process may have rewritten it already: take that one rather than write another.
            self._load(newer_than=self._base.position.offset if self._base else 0)

    @contextmanager
    def bulk(self, lock: AbstractContextManager) -> Iterator[None]:
        """Many appends in a row (import, reindex), each under ``lock``: rewriting the snapshot every
        ``SNAPSHOT_TAIL_OPS`` lines would rewrite the growing snapshot again and again, so it waits for the end."""
        self._bulk = True
        try:
            yield
        finally:
            self._bulk = False
            with lock:
                self.refresh()

    def _load(self, *, newer_than: int = -1) -> None:
        """Take the snapshot on disk if it matches the log and folds more than ``newer_than`` bytes of it;
        otherwise fold the log and write one."""
        from picoora.store.files.memory_snapshot import Snapshot

        snapshot = Snapshot.load(self.path, self._model)
        if snapshot is None or snapshot.position.offset <= newer_than:
            if newer_than < 0:
                self._rebuild()
            else:  # caught up with the log: what is in memory is its fold
                self._rewrite()
            return
        self._take_snapshot(snapshot)
        self._read_tail()

    def _moved(self) -> bool:
        """Whether the log is no longer the file (or the bytes) we read up to ``_offset``."""
        from picoora.store.files.memory_snapshot import LogPosition

        try:
            return LogPosition.of(self.path, self._offset) != self._position
        except FileNotFoundError:
            return True

    def _read_tail(self) -> None:
        from picoora.store.files.memory_snapshot import LogPosition

        reader = JsonlReader(self.path, self._offset)
        ops = list(reader)
        self._offset = reader.offset
        self._position = LogPosition.of(self.path, self._offset)
        self._lines += len(ops)
        self._tail_ops += len(ops)
        self._apply_ops(ops)

    def _rebuild(self, entries: dict[str, _Entry] | None = None, lines: int | None = None) -> None:
        """Fold the whole log (or take ``entries`` folded from it) and write a snapshot of it."""
        from picoora.store.files.memory_snapshot import NewRow, Snapshot

        if entries is None:
            reader = JsonlReader(self.path)
            entries, lines = _fold(reader)
            offset = reader.offset
        else:
            offset = os.stat(self.path).st_size
        # Entries folded here still hold their encoded vectors; the snapshot has them now.
        self._take_snapshot(Snapshot.write(self.path, offset,
                                           [NewRow(e.record, _log_vector(e)) for e in entries.values()],
                                           self._model, lines or 0))

    def _rewrite(self) -> None:
        """Write a snapshot of the memories in memory: the current snapshot's unchanged rows are copied, only
        the overlay and the tail are encoded. A failure (a full disk) keeps the current one and the tail."""
        from picoora.store.files.memory_snapshot import Snapshot

        held = {record.id: vector for record, vector in self._tail_index.items()} if self._tail_index else {}

        def vector_of(entry: _Entry) -> np.ndarray | None:  # still encoded until the tail index took it
            return _log_vector(entry) if entry.vec is not None else held.get(entry.record.id)

        try:
            snapshot = Snapshot.write(self.path, self._offset, self._entries.snapshot_rows(vector_of), self._model,
                                      self._lines, self._base)
        except OSError as exc:
            log.warning("memory index of %s not rewritten (%s): the lines after it are replayed until it is",
                        self.path, exc)
            return
        except ValueError as exc:  # its arrays contradict each other (damaged in place): the log decides
            log.warning("memory index of %s inconsistent (%s): rebuilding it from the log", self.path, exc)
            self._rebuild()
            return
        self._take_snapshot(snapshot)

    def _take_snapshot(self, snapshot: Snapshot) -> None:
        self._set_base(snapshot)
        self._loaded = True
        self._position = snapshot.position
        self._offset, self._lines, self._tail_ops = snapshot.position.offset, snapshot.lines, 0

    def searchable(self) -> LogIndex:
        """Catch up with the file and return the index; embedding and searching with it need no lock."""
        from picoora.store.files.log_index import LogIndex

        self.refresh()
        if self._index is None:
            self._index = LogIndex(self._base, self._overlay, self._tail())
        return self._index

    @staticmethod
    def _take_vector(entry: _Entry) -> np.ndarray | None:
        vector, entry.vec = _log_vector(entry), None  # the index keeps the decoded copy; the text is not needed again
        return vector

    def _apply_ops(self, ops: list[dict[str, Any]]) -> None:
        changed: dict[str, bool] = {}  # id -> whether its vector changed (insertion-ordered)
        for op in ops:
            for memory_id in _apply(self._entries, op):
                changed[memory_id] = changed.get(memory_id, False) or op.get("op") in ("add", "reembed")
        for memory_id, new_vector in changed.items():
            in_tail = self._entries.settle(memory_id)
            if self._tail_index is None:  # new vectors wait in their entries until the index is built
                continue
            entry = self._entries.tail.get(memory_id)
            if not in_tail or entry is None:
                self._tail_index.remove(memory_id)  # forgotten, or a snapshot row (the overlay has it)
            elif new_vector or memory_id not in self._tail_index:
                self._tail_index.add(replace(entry.record), self._take_vector(entry))
            else:
                self._tail_index.update(replace(entry.record))

    def _append(self, ops: list[dict[str, Any]], *, durable: bool = True) -> None:
        """Write ops (after ``refresh``, under the lock) and fold them in; compacts when dead lines dominate."""
        if not ops:
            return
        from picoora.store.files.memory_snapshot import LogPosition

        self._offset = append_jsonl(self.path, ops, durable=durable)
        self._position = LogPosition.of(self.path, self._offset)
        self._lines += len(ops)
        self._tail_ops += len(ops)
        self._apply_ops(ops)
        if self._lines - len(self._entries) > max(COMPACT_MIN_DEAD_LINES, len(self._entries)):
            self.compact()

    def compact(self) -> None:
        """Rewrite the log as one ``add`` per live memory, then snapshot it. Re-reads the file to get the
        encoded vectors, which are not kept in memory."""
        entries, _ = _fold(JsonlReader(self.path))
        atomic_write_bytes(self.path, encode_jsonl([add_op(e.record, e.vec) for e in entries.values()]), 0o600)
        self._rebuild(entries, len(entries))

    # ---- operations ----------------------------------------------------------------------------

    def _new_id(self, taken: Container[str]) -> str:
        while True:
            memory_id = uuid.uuid4().hex[:_ID_HEX_CHARS]
            if memory_id not in taken and memory_id not in self._entries:
                return memory_id

    def add(
        self, content: str, importance: float, category: str, vector: np.ndarray | None, model: str | None, *,
        provenance: Provenance | None = None, expires_at: datetime | None = None,
    ) -> AddMemoryResult:
        duplicate = self.searchable().find_duplicate(content, vector)
        # Told again after it was superseded (the code changed back), it is a new memory, not a duplicate.
        if duplicate is not None:
            repeated = self.repeat(duplicate.id, importance)
            if repeated is not None:
                return repeated
        record = MemoryRecord(
            id=self._new_id(()),
            content=content,
            importance=importance,
            category=category,
            created_at=now_utc(),
            embedding_model=model if vector is not None else None,
            provenance=provenance or Provenance(),
            expires_at=expires_at,
        )
        self._append([add_op(record, encode_vector(vector) if vector is not None else None)])
        return AddMemoryResult(replace(self._entries[record.id].record), created=True)

    def import_records(self, records: list[MemoryRecord], vectors: list, model: str | None) -> int:
        """Add records that are not already here (by text, or by vector when there is one), keeping their
        ids unless taken; returns how many were added."""
        import numpy as np

        index = self.searchable()
        contents = [source.content.strip() for source in records]
        # Callers embed every record or none (keyword-only), so the vectors are one matrix or no matrix.
        matrix = np.stack(vectors) if vectors and all(v is not None for v in vectors) else None
        duplicates = index.find_duplicates(contents, matrix)
        ops: list[dict[str, Any]] = []
        batch_texts: set[str] = set()  # the index cannot see duplicates inside this batch
        batch_ids: set[str] = set()
        now = now_utc()
        for source, content, vector, duplicate in zip(records, contents, vectors, duplicates, strict=True):
            text = normalise_text(content)
            if not content or text in batch_texts or duplicate is not None:
                continue
            batch_texts.add(text)
            taken = source.id in batch_ids or source.id in self._entries
            memory_id = source.id if source.id and not taken else self._new_id(batch_ids)
            batch_ids.add(memory_id)
            record = replace(
                source,
                id=memory_id,
                content=content,
                created_at=source.created_at or now,
                embedding_model=model if vector is not None else None,
            )
            ops.append(add_op(record, encode_vector(vector) if vector is not None else None))
        self._append(ops)
        return len(ops)

    def repeat(self, memory_id: str, importance: float) -> AddMemoryResult | None:
        """A current memory told again: its importance raised to ``importance`` if that is higher; None when
        it is gone or no longer current (then the repeat is a new memory)."""
        self.refresh()
        entry = self._entries.get(memory_id)
        if entry is None or not entry.record.is_current():
            return None
        if importance > entry.record.importance:
            self._append([{"op": "update", "id": memory_id, "importance": importance, "at": time_to_json(now_utc())}])
        return AddMemoryResult(replace(self._entries[memory_id].record), created=False)

    def supersede(self, memory_ids: list[str], by: str) -> list[MemoryRecord]:
        """Mark the current ones of ``memory_ids`` superseded by ``by``; returns them as they are now."""
        self.refresh()
        live = [m for m in memory_ids if m in self._entries and self._entries[m].record.is_current()]
        at = time_to_json(now_utc())
        self._append([{"op": "supersede", "id": memory_id, "by": by, "at": at} for memory_id in live])
        return [replace(self._entries[memory_id].record) for memory_id in live]

    def touch(self, memory_ids: list[str]) -> dict[str, MemoryRecord]:
        """Record an access; returns copies of the touched records that still exist."""
        self.refresh()
        live = [memory_id for memory_id in memory_ids if memory_id in self._entries]
        if live:
            # An access count is not worth an fsync per recall: losing one in a power cut is harmless.
            self._append([{"op": "touch", "ids": live, "at": time_to_json(now_utc())}], durable=False)
        return {memory_id: replace(self._entries[memory_id].record) for memory_id in live if memory_id in self._entries}

    def forget(self, memory_id: str) -> bool:
        self.refresh()
        if memory_id not in self._entries:
            return False
        self._append([{"op": "forget", "id": memory_id, "at": time_to_json(now_utc())}])
        return True

    def get(self, memory_id: str) -> MemoryRecord | None:
        self.refresh()
        entry = self._entries.get(memory_id)
        return replace(entry.record) if entry else None

    def records(self) -> list[MemoryRecord]:
        self.refresh()
        return [replace(entry.record) for entry in self._entries.values()]

    def count(self) -> int:
        self.refresh()
        return len(self._entries)

    # ---- reindex: chunk by chunk, resumable ---------------------------------------------------

    @property
    def _reindex_progress_path(self) -> Path:
        return self.path.with_name(self.path.stem + ".reindex.json")  # beside the log, wherever it lives

    def _reindex_done(self, model: str) -> set[str]:
        """Ids an interrupted reindex to ``model`` already stored vectors for."""
        try:
            progress = json.loads(self._reindex_progress_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return set()
        except (OSError, ValueError) as exc:
            log.warning("reindex progress %s unreadable (%s): starting over", self._reindex_progress_path, exc)
            return set()
        if not isinstance(progress, dict) or progress.get("model") != model:
            return set()  # another model's run: its vectors are not ours
        return {str(i) for i in progress.get("done") or []}

    def reindex_pending(self, model: str) -> dict[str, str]:
        """id -> content of the memories this reindex still has to embed (call after ``refresh``)."""
        done = self._reindex_done(model)
        return {
            entry.record.id: entry.record.content
            for entry in self._entries.values()
            if not (entry.record.id in done and entry.record.embedding_model == model)
        }

    def store_reembedded(self, expected: dict[str, str], vectors: list[np.ndarray], model: str) -> None:
        """Store new vectors for memories whose content is still ``expected[id]``, then record them as done
        (after the vectors are durable: a crash in between only re-embeds them again)."""
        self.refresh()
        ops = [
            {"op": "reembed", "id": memory_id, "model": model, "vec": encode_vector(vector)}
            for (memory_id, content), vector in zip(expected.items(), vectors, strict=True)
            if memory_id in self._entries and self._entries[memory_id].record.content == content
        ]
        self._append(ops)
        done = self._reindex_done(model) | {op["id"] for op in ops}
        atomic_write_bytes(self._reindex_progress_path, json.dumps({"model": model, "done": sorted(done)}).encode(),
                           0o600)

    def finish_reindex(self, model: str) -> int:
        """Rewrite the log (every old vector is now dead), forget the progress; returns how many memories
        carry a vector of ``model``."""
        self.refresh()
        self.compact()  # also rebuilds the snapshot with the new vectors
        self._reindex_progress_path.unlink(missing_ok=True)
        return len(self._entries) - self._entries.without_vector(model)

    def without_vector(self, model: str) -> int:
        """How many memories have no vector of ``model`` (found by keywords only until a reindex)."""
        self.refresh()
        return self._entries.without_vector(model)

    def holds(self, record: MemoryRecord) -> bool:
        """Whether a memory with this id and this content is already here (an import being rerun)."""
        entry = self._entries.get(record.id)
        return entry is not None and entry.record.content == record.content.strip()


def _log_vector(entry: _Entry) -> np.ndarray | None:
    return decode_vector(entry.vec) if entry.vec is not None and entry.record.embedding_model else None


def embed(index: MemoryIndex | LogIndex, texts: list[str]) -> tuple[list[np.ndarray | None], str | None]:
    """Vectors for ``texts`` (all None when no embedder works) and the model that made them."""
    vectors = index.embed(texts) if texts else None
    if vectors is None:
        return [None] * len(texts), None
    return list(vectors), index.model_id
