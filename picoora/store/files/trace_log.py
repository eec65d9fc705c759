"""The file backend's turn traces: JSON Lines in a few generations, each with a hashed index beside it.

``turns.jsonl`` takes the appends. Past ``ROTATE_BYTES``, or once its index is half full, it becomes
``turns.1.jsonl`` (older generations move up one, the oldest of ``KEEP_OLD`` is deleted), so traces take
at most about ``(KEEP_OLD + 1) * ROTATE_BYTES`` on disk. Beside each log, ``<stem>.idx`` is an
open-addressing hash table on disk, from the hash of a turn id, or of a session key, to the offset of its
newest line, under a header that also points at the newest line of all. A lookup is a few ``pread``
calls per generation whatever the number of traces; the newest generation is asked first.

An index is a cache, never the truth. Its header records the log's device and inode, how many bytes of
it are indexed, a hash of the 4 KB before that point and the boot it was written in. A log that no
longer matches (replaced, cut, rewritten, or paired with the wrong index by a crash half-way through a
rotation) gets its index rebuilt, and so does an index of an earlier boot: appends are not fsynced (a
lost trace is harmless), so a power cut may have kept some pages of the two files and not others. A
generation being rotated is fsynced once, its index then marked sealed (valid in any boot), so after a
reboot only the current generation is read again. Within a boot every process sees one page cache,
and slots are written before the header that covers them, so a ``kill -9`` at any point leaves at
worst lines past the indexed point, which the next call indexes first (an append, which ends a turn,
reads at most ``_CATCH_UP_BYTES`` of log for its index and leaves a bigger rebuild to the next lookup).
Every line an index points to is parsed and checked to be the turn or session asked for; one that is
not rebuilds the index and the lookup is asked again, so a torn or stale pointer never hands out
another turn's trace. The caller holds the workspace lock around every method: the appends, rotations
and index updates of several processes are serialised by it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import struct
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from picoora import atomic
from picoora.store.base import TurnTrace

log = logging.getLogger(__name__)

# 8 MB holds ~7,000 turns of ~1.2 KB, three generations the last ~20,000 in 27 MB with their indexes. A
# rebuild parses a whole generation (0.35-0.6 s for 8 MB on a busy 2-core machine); it is needed only
# after a reboot (the current generation), a log edited by hand or a crash mid-rotation.
ROTATE_BYTES = 8 * 2**20
KEEP_OLD = 2  # generations kept beside the current one
SLOTS = 2**16  # a new index's table: 1 MB of 16-byte slots; two keys a turn at most (its id, its session)
_TAIL_BYTES = 4096  # hashed before the indexed point: a log rewritten under the index is noticed
_MAGIC = b"PICOTRC1"
# magic, dev, inode, covered, slots, used, newest line + 1, tail hash, boot
_HEADER = struct.Struct("<8sQQQQQQ16s16s")
_HEADER_BYTES = 128  # the header and its checksum, then the slots
_SLOT = struct.Struct("<QQ")  # key (0: empty), line offset
_PAGE = 4096  # a rebuilt index leaves pages without a key as holes
_EMPTY_PAGE = bytes(_PAGE)
_CATCH_UP_BYTES = 1 << 20  # a longer unindexed tail is a foreign log: rebuilt whole rather than slot by slot
_SEALED = bytes(16)  # the boot of an index made durable with its log when it was rotated: valid in any boot


@functools.cache
def _boot() -> bytes:
    """This boot, hashed (Linux's boot id; elsewhere none, and the other checks remain)."""
    try:
        boot_id = Path("/proc/sys/kernel/random/boot_id").read_bytes()
    except OSError:
        boot_id = b""
    return hashlib.blake2b(boot_id, digest_size=16).digest()


def _hash(kind: bytes, text: str) -> int:
    digest = hashlib.blake2b(kind + text.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") or 1  # 0 marks an empty slot


def turn_key(turn_id: str) -> int:
    return _hash(b"turn\0", turn_id)


def session_key_of(session_key: str) -> int:
    return _hash(b"session\0", session_key)


class _Stale(Exception):
    """An index pointed at a line that is not what it claims: rebuild it."""


class _Deferred(Exception):
    """The index needs a rebuild bigger than this call may do."""


@dataclass(frozen=True)
class _Header:
    dev: int
    ino: int
    covered: int  # bytes of the log indexed: always the end of a line
    slots: int  # a power of two
    used: int
    newest: int  # offset + 1 of the newest trace line, 0 when there is none
    tail: bytes
    boot: bytes

    def pack(self) -> bytes:
        body = _HEADER.pack(_MAGIC, self.dev, self.ino, self.covered, self.slots, self.used, self.newest, self.tail,
                            self.boot)
        return body + hashlib.blake2b(body, digest_size=8).digest()

    @classmethod
    def unpack(cls, data: bytes) -> _Header | None:
        """None for a missing, torn or foreign header."""
        size = _HEADER.size
        if len(data) < size + 8 or hashlib.blake2b(data[:size], digest_size=8).digest() != data[size:size + 8]:
            return None
        magic, dev, ino, covered, slots, used, newest, tail, boot = _HEADER.unpack(data[:size])
        if magic != _MAGIC or slots <= 0 or slots & (slots - 1):
            return None
        return cls(dev, ino, covered, slots, used, newest, tail, boot)


Appended = tuple[int, int, "TurnTrace | None"]  # (start, end, trace) of a line just written


def _parse(line: bytes) -> TurnTrace | None:
    try:
        record = json.loads(line)
        return TurnTrace.from_json(record) if isinstance(record, dict) else None
    except (KeyError, TypeError, ValueError):  # ValueError covers bad JSON and bad UTF-8
        return None


def _traces(handle: Any, offset: int, path: Path) -> Iterator[tuple[int, int, TurnTrace | None]]:
    """(start, end, trace or None) of each line from ``offset``. A last fragment without its newline is
    a line only when it parses (as ``atomic.JsonlReader`` reads it); a torn one ends the walk before it."""
    handle.seek(offset)
    for line in handle:
        trace = _parse(line) if line.strip() else None
        if not line.endswith(b"\n") and trace is None:
            return
        if trace is None and line.strip():
            log.warning("%s: a line at byte %d is not a trace and was skipped", path, offset)
        yield offset, offset + len(line), trace
        offset += len(line)


def _keys(trace: TurnTrace) -> tuple[int, int]:
    return turn_key(trace.turn_id), session_key_of(trace.session_key)


def _tail_hash(fd: int, covered: int) -> bytes:
    start = max(covered - _TAIL_BYTES, 0)
    return hashlib.blake2b(os.pread(fd, covered - start, start), digest_size=16).digest()


def _matches(header: _Header, log_fd: int) -> bool:
    """Whether ``header`` describes the log open as ``log_fd`` (up to its covered point)."""
    status = os.fstat(log_fd)
    return (header.dev, header.ino) == (status.st_dev, status.st_ino) and header.boot in (_boot(), _SEALED) \
        and header.covered <= status.st_size and _tail_hash(log_fd, header.covered) == header.tail


class _Open:
    """A generation's log and index, opened for one operation, the index covering the whole log."""

    def __init__(self, log_fd: int, index_fd: int, header: _Header):
        self.log_fd, self.index_fd, self.header = log_fd, index_fd, header

    def _slot(self, position: int) -> tuple[int, int]:
        return _SLOT.unpack(os.pread(self.index_fd, _SLOT.size, _HEADER_BYTES + position * _SLOT.size))

    def _probe(self, key: int) -> tuple[int, int, int] | None:
        """(position, stored key, offset) of the first slot from ``key``'s home that holds ``key`` or is empty;
        None when the table is full of other keys."""
        mask = self.header.slots - 1
        position = key & mask
        for _ in range(self.header.slots):
            stored, offset = self._slot(position)
            if stored in (0, key):
                return position, stored, offset
            position = (position + 1) & mask
        return None

    def find(self, key: int) -> int | None:
        """The offset stored under ``key``, or None."""
        slot = self._probe(key)
        return slot[2] if slot is not None and slot[1] == key else None

    def put(self, key: int, offset: int) -> bool:
        """Store ``offset`` under ``key`` (a newer line replaces an older one); True when a slot was taken."""
        slot = self._probe(key)
        if slot is None:
            raise _Stale("the index is full")
        position, stored, _ = slot
        os.pwrite(self.index_fd, _SLOT.pack(key, offset), _HEADER_BYTES + position * _SLOT.size)
        return stored == 0

    def line(self, offset: int) -> bytes:
        """The line at ``offset``, read up to its newline or the end of the indexed part."""
        covered, data, step = self.header.covered, b"", 8192
        while offset + len(data) < covered:
            part = os.pread(self.log_fd, min(step, covered - offset - len(data)), offset + len(data))
            if not part:
                break
            newline = part.find(b"\n")
            if newline >= 0:
                return data + part[:newline]
            data += part
            step *= 2
        return data

    def trace_at(self, offset: int, matches: Callable[[TurnTrace], bool]) -> TurnTrace:
        trace = _parse(self.line(offset))
        if trace is None or not matches(trace):
            raise _Stale(f"byte {offset} does not hold the trace the index points to")
        return trace


class Generation:
    """One log file of traces and its index."""

    def __init__(self, log_path: Path, index_path: Path):
        self.log_path, self.index_path = log_path, index_path

    def size(self) -> int:
        try:
            return self.log_path.stat().st_size
        except FileNotFoundError:
            return 0

    def ask(self, question: Callable[[_Open], Any], *, most_bytes: int | None = None,
            appended: Appended | None = None) -> Any:
        """``question`` of the index made to cover the whole log (None without a log). An index found
        pointing at the wrong line is rebuilt and asked once more. ``most_bytes``: the largest log this call
        may read whole to rebuild its index; past it the answer is None, the rebuild left to a lookup.
        ``appended``: the line this process has just written, indexed without reading it back."""
        try:
            log_fd = os.open(self.log_path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        try:
            try:
                return self._ask(log_fd, question, most_bytes, appended)
            except _Stale as exc:
                log.warning("%s: %s; rebuilding it", self.index_path, exc)
            self._rebuild(log_fd, most_bytes)
            try:
                return self._ask(log_fd, question, most_bytes)
            except _Stale:  # two ids or sessions sharing a 64-bit hash: the newer one hides the other
                return None
        except _Deferred:
            return None
        finally:
            os.close(log_fd)

    def _ask(self, log_fd: int, question: Callable[[_Open], Any], most_bytes: int | None,
             appended: Appended | None = None) -> Any:
        opened = self._open_index(log_fd, most_bytes, appended)
        try:
            return question(opened)
        finally:
            os.close(opened.index_fd)

    def _open_index(self, log_fd: int, most_bytes: int | None, appended: Appended | None = None) -> _Open:
        """The index, its header valid for the log as it is now (rebuilt or caught up first if need be)."""
        for attempt in range(2):
            try:
                index_fd = os.open(self.index_path, os.O_RDWR | os.O_CLOEXEC)
            except FileNotFoundError:
                self._rebuild(log_fd, most_bytes)
                continue
            header = _Header.unpack(os.pread(index_fd, _HEADER_BYTES, 0))
            size = os.fstat(log_fd).st_size
            if header is not None and _matches(header, log_fd):
                opened = _Open(log_fd, index_fd, header)
                if header.covered == size or self._catch_up(opened, size, appended):
                    return opened
            elif attempt == 0 and (header is None or header.boot in (_boot(), _SEALED)):  # a reboot needs no warning
                log.warning("%s does not match %s (torn, or the log was replaced); rebuilding it",
                            self.index_path, self.log_path.name)
            os.close(index_fd)
            self._rebuild(log_fd, most_bytes)
        raise _Stale("the index could not be rebuilt")  # not reached while every writer holds the lock

    def seal(self) -> None:
        """Make the log and its index durable, so the index holds in later boots too: done once, when the
        generation is rotated. An index that does not cover its log is left to be rebuilt when asked."""
        try:
            log_fd = os.open(self.log_path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return
        try:
            index_fd = os.open(self.index_path, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            os.close(log_fd)
            return
        try:
            header = _Header.unpack(os.pread(index_fd, _HEADER_BYTES, 0))
            if header is not None and _matches(header, log_fd) and header.covered == os.fstat(log_fd).st_size:
                os.fsync(log_fd)
                os.fsync(index_fd)  # the slots first: a sealed header is never on disk before them
                os.pwrite(index_fd, replace(header, boot=_SEALED).pack(), 0)
                os.fsync(index_fd)
        finally:
            os.close(index_fd)
            os.close(log_fd)

    def _catch_up(self, opened: _Open, size: int, appended: Appended | None = None) -> bool:
        """Index the lines appended since the header's ``covered``; False when a rebuild is the better way.
        When they are just ``appended`` (the usual case: this process's own line), it is not read back."""
        header = opened.header
        if size - header.covered > _CATCH_UP_BYTES:
            return False
        used, newest, covered = header.used, header.newest, header.covered
        with os.fdopen(os.dup(opened.log_fd), "rb") as handle:
            lines = [appended] if appended is not None and appended[:2] == (covered, size) else \
                _traces(handle, header.covered, self.log_path)
            for start, end, trace in lines:
                if trace is not None:
                    if used + 2 > header.slots * 3 // 4:
                        return False
                    used += sum(opened.put(key, start) for key in _keys(trace))
                    newest = start + 1
                covered = end
        opened.header = replace(header, covered=covered, used=used, newest=newest,
                                tail=_tail_hash(opened.log_fd, covered), boot=_boot())  # no longer sealed
        os.pwrite(opened.index_fd, opened.header.pack(), 0)  # after the slots: a crash before it repeats this
        return True

    def _rebuild(self, log_fd: int, most_bytes: int | None = None) -> None:
        """A new index of the whole log, written beside it and renamed over the old one."""
        if most_bytes is not None and os.fstat(log_fd).st_size > most_bytes:
            raise _Deferred
        entries: dict[int, int] = {}
        newest = covered = 0
        with os.fdopen(os.dup(log_fd), "rb") as handle:
            for start, end, trace in _traces(handle, 0, self.log_path):
                if trace is not None:
                    entries.update(dict.fromkeys(_keys(trace), start))
                    newest = start + 1
                covered = end
        slots = SLOTS
        while slots < 2 * len(entries):
            slots *= 2
        table = bytearray(_HEADER_BYTES + slots * _SLOT.size)
        mask = slots - 1
        for key, offset in entries.items():
            position = key & mask
            while _SLOT.unpack_from(table, _HEADER_BYTES + position * _SLOT.size)[0]:
                position = (position + 1) & mask
            _SLOT.pack_into(table, _HEADER_BYTES + position * _SLOT.size, key, offset)
        status = os.fstat(log_fd)
        header = _Header(status.st_dev, status.st_ino, covered, slots, len(entries), newest,
                         _tail_hash(log_fd, covered), _boot())
        table[: len(header.pack())] = header.pack()
        fd, temp = tempfile.mkstemp(prefix=f".{self.index_path.name}.", suffix=atomic.TEMP_SUFFIX,
                                    dir=self.index_path.parent)
        try:
            with os.fdopen(fd, "wb") as out:  # no fsync: an index lost in a power cut is rebuilt like any stale one
                for start in range(0, len(table), _PAGE):
                    if table[start:start + _PAGE] != _EMPTY_PAGE[: len(table) - start]:
                        out.seek(start)
                        out.write(table[start:start + _PAGE])
                out.truncate(len(table))
            os.replace(temp, self.index_path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise


class TraceLog:
    """The traces of one store root: ``turns.jsonl`` and its older generations, in ``directory``."""

    def __init__(self, directory: Path):
        self.directory = directory

    def generation(self, number: int) -> Generation:
        stem = "turns" if number == 0 else f"turns.{number}"
        return Generation(self.directory / f"{stem}.jsonl", self.directory / f"{stem}.idx")

    def _generations(self) -> Iterator[Generation]:
        return (self.generation(n) for n in range(KEEP_OLD + 1))

    def append(self, trace: TurnTrace) -> None:
        current = self.generation(0)
        start = current.size()  # where the line goes, unless a torn tail is cut first (then no index covers it)
        if start >= ROTATE_BYTES:  # before indexing it: a big log from an older picoora is not read
            self._rotate()
            start = 0
        # durable=False: a trace lost in a power cut is harmless, and the fsync costs every turn
        end = atomic.append_jsonl(current.log_path, [trace.to_json()], durable=False)
        # Index the new line; a turn never reads more than _CATCH_UP_BYTES of log for it (after a reboot,
        # the first lookup rebuilds a bigger generation's index).
        appended = (start, end, trace)
        if current.ask(lambda opened: opened.header.used >= opened.header.slots // 2, most_bytes=_CATCH_UP_BYTES,
                       appended=appended):
            self._rotate()

    def _rotate(self) -> None:
        """Each generation moves up one; the oldest is deleted. An index is removed before its log is
        replaced, so no index is ever left beside a log it was not built for (the header would say so too)."""
        self.generation(0).seal()
        for number in range(KEEP_OLD, 0, -1):
            older, newer = self.generation(number), self.generation(number - 1)
            older.index_path.unlink(missing_ok=True)
            older.log_path.unlink(missing_ok=True)
            if newer.log_path.exists():
                os.replace(newer.log_path, older.log_path)
            if newer.index_path.exists():
                os.replace(newer.index_path, older.index_path)
        log.info("turn traces rotated: %s is now %s", self.generation(0).log_path.name,
                 self.generation(1).log_path.name)

    def get(self, turn_id: str) -> TurnTrace | None:
        return self._newest_first(_pointer(turn_key(turn_id), lambda trace: trace.turn_id == turn_id))

    def last(self, session_key: str | None = None) -> TurnTrace | None:
        if session_key is not None:
            return self._newest_first(_pointer(session_key_of(session_key), lambda t: t.session_key == session_key))

        def newest(opened: _Open) -> TurnTrace | None:
            return opened.trace_at(opened.header.newest - 1, lambda trace: True) if opened.header.newest else None

        return self._newest_first(newest)

    def _newest_first(self, question: Callable[[_Open], TurnTrace | None]) -> TurnTrace | None:
        """The first answer to ``question``, asking the current generation first, then the older ones."""
        for generation in self._generations():
            found = generation.ask(question)
            if found is not None:
                return found
        return None


def _pointer(key: int, matches: Callable[[TurnTrace], bool]) -> Callable[[_Open], TurnTrace | None]:
    """The question "which trace does ``key`` point at?", checked with ``matches``."""
    def question(opened: _Open) -> TurnTrace | None:
        offset = opened.find(key)
        return None if offset is None else opened.trace_at(offset, matches)

    return question
