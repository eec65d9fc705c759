"""What the Go workspace kept as records (sessions, daily notes, MEMORY.md, the cron store, the last chat),
written through picoora's store API, so it lands on whichever backend the config uses.

Idempotent: each item migrated is remembered in the store's state (``migrate.go.<digest of its source path>``
holding the digest of its content), so a second run skips what it already brought and takes a changed file
again (a daily note only from where the last run stopped, when its start is unchanged). A session picoora
already holds is kept unless ``force``; a forced one is reset first, which keeps its transcript (transcripts
are append-only), so nothing is lost.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

from picoora.messages import Message
from picoora.migrate.go_templates import GO_MEMORY_TEMPLATE_ITEMS
from picoora.migrate.report import Section, one_item
from picoora.migrate.source import MAX_JSON_BYTES, parse_json, read_bytes, read_json, read_listed
from picoora.store.base import MemoryRecord, Provenance, Session, StoreError, time_from_json
from picoora.store.protocol import Store

LEDGER_PREFIX = "migrate.go."
NOTE_NAME = re.compile(r"^(\d{4})(\d{2})(\d{2})\.md$")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


class Ledger:
    """Which source items this store already received, by content digest."""

    def __init__(self, store: Store | None):
        self._store = store

    @staticmethod
    def _key(path: Path) -> str:
        return LEDGER_PREFIX + hashlib.sha256(str(path.absolute()).encode()).hexdigest()[:24]

    def value(self, path: Path) -> str | None:
        return self._store.state.get(self._key(path)) if self._store is not None else None

    def done(self, path: Path, digest: str) -> bool:
        return self.value(path) == digest

    def record(self, path: Path, digest: str) -> None:
        if self._store is not None:
            self._store.state.set(self._key(path), digest)


def digest(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


# ---- sessions -------------------------------------------------------------------------------------

def migrate_sessions(workspace: Path, store: Store | None, ledger: Ledger, force: bool, section: Section,
                     dry_run: bool = False) -> None:
    for path in sorted((workspace / "sessions").glob("*.json")):
        raw, problem = read_bytes(path, MAX_JSON_BYTES)
        data, problem = parse_json(path, raw) if raw is not None else (None, problem or "cannot be read")
        if problem:
            section.skipped(path.name, problem.split(": ", 1)[-1])
            continue
        parsed = _session(data, path)
        if isinstance(parsed, str):
            section.skipped(path.name, parsed)
            continue
        session = parsed
        key, messages = session.key, session.messages
        stamp = digest(raw or b"")
        if ledger.done(path, stamp):
            section.unchanged(key, "already migrated")
            continue
        with one_item(section, key):  # a key or role the store refuses ends this session only
            held = len(store.sessions.load(key).messages) if store is not None else 0
            if held and not force:
                section.kept(key, f"picoora already has this session ({held} messages); --force replaces its "
                                  "model view (its transcript stays)")
            elif store is None or dry_run:
                section.would(key, f"{len(messages)} messages")
            else:
                _write_session(store, session, section)
                ledger.record(path, stamp)  # a kept session is not recorded: --force may still replace it


def _write_session(store: Store, session: Session, section: Section) -> None:
    """Write the session whole, with Go's created/updated times (picoora's own, which only ``force`` lets
    this replace, goes)."""
    store.transcripts.append(session.key, session.messages)  # first: a refused message leaves no half session
    store.sessions.restore(session)
    section.done(session.key, f"{len(session.messages)} messages")


def _session(data: Any, path: Path) -> Session | str:
    """The session of a Go session file (its ``created``/``updated`` times kept), or why it cannot be used."""
    if not isinstance(data, dict) or not isinstance(data.get("messages", []), list):
        return "not a session file (no messages list)"
    # The file name is the key with ':' written as '_' (cli_default.json); the key inside wins.
    given = data.get("key")
    key = given if isinstance(given, str) and given else path.stem.replace("_", ":", 1)
    messages = []
    for raw in data.get("messages") or []:
        if not isinstance(raw, dict) or not isinstance(raw.get("role"), str):
            return "a message without a role"
        if raw["role"] == "system":
            continue  # the Go system prompt; picoora builds its own each turn
        calls = raw.get("tool_calls")
        calls = calls if isinstance(calls, list) else []
        try:
            messages.append(Message.from_dict({**raw, "tool_calls": [_tool_call(c) for c in calls]}))
        except (TypeError, ValueError, AttributeError) as err:
            return f"a message picoora cannot read ({err})"
    if not messages:
        return "no messages"
    summary = data.get("summary")
    try:
        created, updated = time_from_json(data.get("created")), time_from_json(data.get("updated"))
    except (TypeError, ValueError):
        created = updated = None  # a time picoora cannot read: the migration's own
    return Session(key, messages, summary if isinstance(summary, str) else "", created, updated)


def _tool_call(call: Any) -> dict[str, Any]:
    """Go kept a call as OpenAI's {"id", "function": {"name", "arguments"}} (and sometimes name/arguments
    beside it); picoora's shape is {"id", "name", "arguments"}."""
    call = call if isinstance(call, dict) else {}
    function = call.get("function") if isinstance(call.get("function"), dict) else {}
    return {"id": str(call.get("id") or ""), "name": str(function.get("name") or call.get("name") or ""),
            "arguments": function.get("arguments", call.get("arguments") or {})}


# ---- daily notes and MEMORY.md --------------------------------------------------------------------

def migrate_notes(workspace: Path, store: Store | None, ledger: Ledger, section: Section,
                  dry_run: bool = False) -> None:
    for path, day in _note_files(workspace / "memory"):
        text = read_listed(path, section)
        if text is None:
            continue
        # The ledger keeps the digest and length brought; a note Go appended to since brings only its new lines.
        stamp = f"{digest(text)}:{len(text)}"
        earlier = ledger.value(path)
        body = _without_heading(text[_migrated_length(earlier, text):], day)
        if earlier == stamp:
            section.unchanged(day.isoformat(), "already migrated")
        elif not body:
            continue
        elif store is None or dry_run:
            section.would(day.isoformat(), f"{len(body)} characters" + (", added since" if earlier else ""))
        else:
            with one_item(section, day.isoformat()):
                store.notes.append(body, day)
                ledger.record(path, stamp)
                section.done(day.isoformat(), f"{len(body)} characters" + (", added since" if earlier else ""))


def _migrated_length(earlier: str | None, text: str) -> int:
    """How much of ``text`` an earlier run brought: its length when the start is unchanged, else 0 (all again)."""
    sha, _, length = (earlier or "").partition(":")
    if not length.isdigit() or int(length) > len(text):
        return 0
    return int(length) if digest(text[: int(length)]) == sha else 0


def _note_files(folder: Path) -> Iterator[tuple[Path, date]]:
    for path in sorted(folder.glob("[0-9][0-9][0-9][0-9][0-9][0-9]/*.md")):
        match = NOTE_NAME.match(path.name)
        if match:  # a linked note is refused by read_listed, and listed
            try:
                yield path, date(int(match[1]), int(match[2]), int(match[3]))
            except ValueError:
                continue  # 20261399.md is not a day


def _without_heading(text: str, day: date) -> str:
    """The note without the "# YYYY-MM-DD" line Go wrote first (picoora dates notes itself)."""
    lines = text.strip().splitlines()
    if lines and lines[0].strip() == f"# {day.isoformat()}":
        lines = lines[1:]
    return "\n".join(lines).strip()


def migrate_long_term_memory(workspace: Path, store: Store | None, ledger: Ledger, section: Section,
                             dry_run: bool = False) -> None:
    """MEMORY.md (Go's whole-file memory) as one picoora memory per bullet or paragraph, embedded by the
    store as it imports; the ids come from the text, so a rerun finds what it already imported. A line
    that is new on a rerun is added as the assistant adds a memory, so one that states a fact anew
    (the gate code is 5532) supersedes the memory of the old line (4421), which recall stops offering."""
    path = workspace / "memory" / "MEMORY.md"
    text = read_listed(path, section)
    if text is None:
        return
    items = memory_items(text)
    written = [(category, item) for category, item in items if item not in GO_MEMORY_TEMPLATE_ITEMS]
    if len(written) < len(items):
        section.skipped("MEMORY.md template", f"{len(items) - len(written)} lines of the Go version's own "
                                              "template (its placeholders and examples) left behind")
    records = [MemoryRecord(id="go-" + digest(item)[:16], content=item, category=category,
                            provenance=Provenance(how="imported", session="MEMORY.md"))
               for category, item in written]
    new = [r for r in records if store is None or store.memories.get(r.id) is None]
    if not records:
        return
    if store is None or dry_run:
        if new:
            section.would("MEMORY.md", f"{len(new)} memories")
    else:
        try:
            added, superseded = _add_memories(store, records, new, rerun=ledger.value(path) is not None)
            ledger.record(path, digest(text))
        except (StoreError, ValueError) as err:  # a rerun continues where it stopped: ids come from the text
            section.skipped("MEMORY.md", f"the store refused it: {err}")
            return
        if added:
            section.done("MEMORY.md", f"{added} memories, embedded as they were stored"
                         + (f"; {superseded} earlier ones superseded" if superseded else ""))
        new = new[:added]
    if len(new) < len(records):
        section.unchanged("MEMORY.md", f"{len(records) - len(new)} memories already there")


def _add_memories(store: Store, records: list[MemoryRecord], new: list[MemoryRecord], *,
                  rerun: bool) -> tuple[int, int]:
    """(memories added, earlier ones superseded): all at once the first time, one by one on a rerun."""
    if not rerun:
        return store.memories.import_records(records), 0
    added = superseded = 0
    for record in new:
        result = store.memories.add(record.content, category=record.category, provenance=record.provenance)
        added += result.created
        superseded += len(result.replaced)
    return added, superseded


def memory_items(text: str) -> list[tuple[str, str]]:
    """(category, text) per bullet or paragraph; a heading names the category of what follows it."""
    items: list[tuple[str, str]] = []
    category, paragraph = "general", list[str]()

    def flush() -> None:
        if paragraph:
            items.append((category, " ".join(paragraph)))
            paragraph.clear()

    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("##"):  # the file's own title ("# Long-term Memory") names no category
            flush()
            name = re.sub(r"[^a-z0-9]+", "-", stripped.lstrip("#").strip().lower()).strip("-")
            category = name[:40] or "general"
        elif stripped.startswith("#"):
            flush()
        elif not stripped:
            flush()
        elif _BULLET.match(line):
            flush()
            paragraph.append(_BULLET.sub("", line).strip())
        else:
            paragraph.append(stripped)
    flush()
    return items




# ---- the last chat ----------------------------------------------------------------------------------

def migrate_last_chat(workspace: Path, store: Store | None, section: Section, dry_run: bool = False) -> None:
    """Go's state/state.json last_channel ("telegram:123"): where the heartbeat and jobs deliver by default."""
    data, problem = read_json(workspace / "state" / "state.json")
    last = data.get("last_channel") if isinstance(data, dict) else None
    if problem or not isinstance(last, str) or ":" not in last:
        return
    if last.partition(":")[2].startswith("-"):  # a Telegram group: jobs and the heartbeat never answer there
        section.skipped("last chat", f"{last} is a group chat; picoora delivers only to a private one")
        return
    from picoora.owner_chat import LAST_CHAT

    held = store.state.get(LAST_CHAT) if store is not None else None
    if held == last:
        section.unchanged("last chat", last)
    elif held:
        section.kept("last chat", f"picoora's own ({held}) stays")
    elif store is None or dry_run:
        section.would("last chat", last)
    else:
        store.state.set(LAST_CHAT, last)
        section.done("last chat", last)

