"""Copy everything one store holds into another through the Store protocol (``setup-oracle --import-files``).

Nothing the target already has is overwritten, so running it twice adds nothing: memories go through
``import_memories`` (ids kept, duplicates skipped, re-embedded by the target's own model), a day's note,
a session or a key/value entry is copied only when the target has none for it. A transcript goes in
batches of ``TRANSCRIPT_BATCH`` messages, each its own bounded transaction, continuing after the entries the
target already holds: a long transcript over a slow link imports, and an import cut off half-way resumes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from picoora.store.base import DailyNote
from picoora.store.families.keyvalues import KeyValues
from picoora.store.protocol import Store

ALL_DAYS = 36500  # "every daily note": the protocol reads notes by a window of days
TRANSCRIPT_BATCH = 200  # messages per transaction: one array insert when they fit, well inside a call timeout


@dataclass
class TransferReport:
    copied: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)

    def count(self, family: str, copied: bool, n: int = 1) -> None:
        bucket = self.copied if copied else self.skipped
        bucket[family] = bucket.get(family, 0) + n


def _note_body(note: DailyNote) -> str:
    """A note's text without the ``# YYYY-MM-DD`` header that ``append_daily_note`` writes again."""
    header = f"# {note.day.isoformat()}\n\n"
    return note.content[len(header):] if note.content.startswith(header) else note.content


def transfer(source: Store, target: Store, *, shared: bool = True,
             progress: Callable[[int, int], None] | None = None) -> TransferReport:
    """``shared=False`` for a person's store: their own families only (prompts, config and meta are the
    owner's, copied with the owner's store). ``progress(done, total)`` after each transcript batch."""
    report = TransferReport()

    memories = source.memories.list()
    added = target.memories.import_records(memories)
    report.count("memories", True, added)
    report.count("memories", False, len(memories) - added)

    have_days = {note.day for note in target.notes.recent(ALL_DAYS)}
    for note in reversed(source.notes.recent(ALL_DAYS)):  # oldest first
        fresh = note.day not in have_days
        if fresh:
            target.notes.append(_note_body(note), day=note.day)
        report.count("daily notes", fresh)

    have_sessions = {s.key for s in target.sessions.list()}
    sessions = source.sessions.list()
    for session in reversed(sessions):  # oldest first, so the target lists them in the same order
        fresh = session.key not in have_sessions
        if fresh:
            target.sessions.append(session.key, session.messages)
            if session.summary:
                target.sessions.set_summary(session.key, session.summary)
        report.count("sessions", fresh)

    for key in source.transcripts.keys():  # reset sessions keep their transcripts: copy those too
        entries = source.transcripts.read(key)
        last = target.transcripts.read(key, limit=1)
        held = last[0].seq if last else 0  # seqs run 1..n: the target has the first ``held`` entries
        for start in range(held, len(entries), TRANSCRIPT_BATCH):
            target.transcripts.append(key, [entry.message for entry in entries[start:start + TRANSCRIPT_BATCH]])
            if progress is not None:
                progress(min(start + TRANSCRIPT_BATCH, len(entries)), len(entries))
        report.count("transcript entries", True, max(len(entries) - held, 0))
        report.count("transcript entries", False, min(held, len(entries)))

    families: list[tuple[str, KeyValues, KeyValues]] = [("state", source.state, target.state)]
    if shared:
        families += [("config", source.config, target.config), ("meta", source.meta, target.meta)]
    for family, values, into in families:
        for key, value in values.all().items():
            fresh = into.get(key) is None
            if fresh:
                into.set(key, value)
            report.count(family, fresh)

    for prompt in source.prompts.list() if shared else ():
        fresh = target.prompts.get(prompt.name) is None
        if fresh:
            target.prompts.set(prompt.name, prompt.content)
        report.count("prompts", fresh)
    return report
