"""``picoora oracle-inspect [TABLE] [NAME] [-n N] [-s QUERY] [--json] [--files]``: what the assistant stored.

The layout is the Go version's (overview dashboard, then one view per table), read through the Store
protocol so it works on either backend; the title says which one. Oracle adds what only it has (vector
flags, ONNX models, vector indexes; notes are searched by meaning on both). Documents are every person's (the
knowledge base lives in the owner's store, each marked with who added it). Secrets never reach the output:
config values are redacted again here, and every known secret value is scrubbed from the final text.
Looking does not count as an access: ``-s`` searches without touching access counts.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import typer

from picoora.cli.errors import EXIT_USAGE, CLIError, load_config
from picoora.cli.status_report import count
from picoora.identities import OWNER  # a document's person shown when the owner added it

if TYPE_CHECKING:
    from picoora.config import Config
    from picoora.store.protocol import Store

TABLES = ("memories", "sessions", "transcripts", "state", "notes", "prompts", "config", "meta", "documents")
BANNER = "=" * 61
RULE = "  " + "─" * 57
RECENT = 5
SHORT = 100  # characters of a value shown in the overview


def oracle_inspect(
    ctx: typer.Context,
    table: str | None = typer.Argument(None, help=f"One of: {', '.join(TABLES)}. Omit for the overview."),
    name: str | None = typer.Argument(None, help="With `prompts`: the prompt to show in full (e.g. SOUL)."),
    limit: int = typer.Option(20, "-n", "--limit", min=1, help="At most this many rows."),
    search: str | None = typer.Option(
        None, "-s", "--search", metavar="TEXT",
        help="Semantic search (memories; on Oracle also notes); looking does not count as an access."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of text."),
    files: bool = typer.Option(False, "--files", help="Inspect the file backend even when Oracle is enabled."),
) -> None:
    """Show what picoora stored: an overview, or one table (memories, sessions, transcripts, state, notes,
    prompts [NAME], config, meta, documents)."""
    from picoora.config import secret_values
    from picoora.secrets import scrub
    from picoora.store.base import StoreError

    config = load_config(ctx)
    if table is not None and table not in TABLES:
        raise CLIError(f"Unknown table: {table}. Tables: {', '.join(TABLES)}", EXIT_USAGE)
    if search is not None and (table or "memories") not in ("memories", "notes"):
        raise CLIError("-s/--search works on `memories` (the default) and `notes`", EXIT_USAGE)
    if name is not None and table != "prompts":
        raise CLIError("a NAME argument only goes with `prompts`", EXIT_USAGE)
    store = _open(config, files)
    try:
        view = Inspector(store, config, limit=limit, search=search, name=name)
        data, lines = view.render(table if table or search is None else "memories")
    except StoreError as err:
        raise CLIError(str(err)) from None
    finally:
        store.close()
    text = json.dumps(data, ensure_ascii=False, indent=2, default=str) if as_json else "\n".join(lines)
    print(scrub(text, secret_values(config)))


def _open(config: Config, files: bool) -> Store:
    from picoora.store import open_store
    from picoora.store.base import StoreError

    if files:  # the user asked for the workspace files whatever the config says
        config = config.model_copy(update={"oracle": config.oracle.model_copy(update={"enabled": False})})
    try:
        return open_store(config, inspect_only=True)
    except StoreError as err:
        raise CLIError(f"{err}\n(to look at the file backend instead: picoora oracle-inspect --files)") from None


TIME_FORMAT = "%Y-%m-%d %H:%M:%S"  # one format in every table, so columns line up
TIME_WIDTH = 19


def _when(value: datetime | None) -> str:
    if value is None:
        return "-".ljust(TIME_WIDTH)
    return value.astimezone().strftime(TIME_FORMAT)


def _one_line(text: str, limit: int = 0) -> str:
    """Whitespace collapsed; with ``limit``, cut there with an ellipsis (overview rows stay one line)."""
    line = " ".join(text.split())
    return line if not limit or len(line) <= limit else line[: limit - 1] + "…"


def _block(label: str, text: str) -> str:
    """``  Label: first line`` with further lines indented under it."""
    indent = "\n" + " " * (len(label) + 4)
    return f"  {label}: " + indent.join(text.splitlines() or [""])


def _note_text(day: Any, content: str) -> str:
    """A daily note without its ``# YYYY-MM-DD`` header line (the date is shown beside it)."""
    header = f"# {day.isoformat()}"
    return content[len(header):].lstrip("\n") if content.startswith(header) else content


@dataclass
class Inspector:
    store: Store
    config: Config
    limit: int = 20
    search: str | None = None
    name: str | None = None

    def render(self, table: str | None) -> tuple[Any, list[str]]:
        views: dict[str | None, Callable[[], tuple[Any, list[str]]]] = {
            None: self.overview, "memories": self.memories, "sessions": self.sessions,
            "transcripts": self.transcripts, "state": self.state, "notes": self.notes,
            "prompts": self.prompts, "config": self.config_view, "meta": self.meta, "documents": self.documents,
        }
        return views[table]()

    def _title(self, heading: str, location: str | None = None) -> list[str]:
        return [BANNER, f"  picoora {self.store.display_name} Inspector{': ' + heading if heading else ''}",
                f"  {location or self.store.stats().location}", BANNER, ""]

    # ---- overview --------------------------------------------------------------------------------

    def overview(self) -> tuple[Any, list[str]]:
        stats = self.store.stats()
        meta = self._meta_rows()
        docs = self.store.documents.counts()
        counts = {"Memories": stats.memories, "Sessions": stats.sessions, "Transcripts": stats.transcript_entries,
                  "State": stats.state_keys, "Daily Notes": stats.daily_notes, "Prompts": stats.prompts,
                  "Config": stats.config_keys, "Meta": len(meta), "Documents": docs.documents,
                  "Document Chunks": docs.chunks}
        lines = self._title("", stats.location) + ["  Table                  Rows", "  ─────────────────────  ────"]
        for label, n in counts.items():
            lines.append(f"  {label:<23s}{n:4d}  " + ("█" * min(n, 40) if n else "(empty)"))
        lines += ["  ─────────────────────  ────", f"  {'Total':<23s}{sum(counts.values()):4d}", ""]

        memories = self.store.memories.list(RECENT)
        transcripts = self._recent_transcripts(RECENT)
        sessions = self.store.sessions.list()[:RECENT]
        state = list(self.store.state.all().items())[:RECENT]
        notes = self.store.notes.list(RECENT)
        prompts = self.store.prompts.list()[:RECENT]
        config = list(self._config_rows().items())[:RECENT]
        documents = self.store.documents.all(RECENT)
        sections = [
            ("Recent Memories (last 5):", "(no memories stored yet)",
             [f"  {_when(m.created_at)}  {m.importance:.1f} [{m.category}]  {m.content}"
              + ("" if m.is_current() else f"  ({m.status()})") for m in memories]),
            ("Recent Transcripts (last 5):", "(no transcripts yet)",
             [f"  {_when(e.created_at)}  {e.message.role:<10s}  {_one_line(e.message.content)}" for e in transcripts]),
            ("Recent Sessions (last 5):", "(no sessions yet)",
             [f"  {_when(s.updated_at)}  {s.key:<30s}  {s.summary or '(no summary)'}" for s in sessions]),
            ("Recent State Entries (last 5):", "(no state entries yet)",
             [f"  {k:<25s} = {_one_line(v, SHORT)}" for k, v in state]),
            ("Recent Daily Notes (last 5):", "(no daily notes yet)",
             [f"  {n.day.isoformat()}  {_one_line(_note_text(n.day, n.content), SHORT)}" for n in notes]),
            ("System Prompts (last 5):", "(no prompts stored yet)",
             [f"  {p.name:<25s}  {len(p.content)} chars" for p in prompts]),
            ("Config Entries (last 5):", "(no config entries stored yet)",
             [f"  {k:<25s} = {_one_line(v, SHORT)}" for k, v in config]),
            ("Schema Metadata:", "(no metadata yet)", [f"  {k:<30s} = {v}" for k, v in meta.items()]),
            ("Recent Documents (last 5):", "(no documents yet)",
             [f"  {_when(d.added_at)}  [{d.person or OWNER}]  {_one_line(d.title or d.source, SHORT)}  "
              f"({count(d.chunks, 'chunk')}{', shared' if d.shared else ''})" for d in documents]),
        ]
        for heading, empty, rows in sections:
            lines += [RULE, f"  {heading}", ""] + (rows or [f"  {empty}"]) + [""]
        lines += [RULE, "  Tip: Run 'picoora oracle-inspect <table>' for details",
                  "       Run 'picoora oracle-inspect memories -s \"query\"' for semantic search"]
        data = {
            "backend": self.store.backend, "location": stats.location, "counts": counts,
            "recent": {
                "memories": [_memory(m) for m in memories],
                "transcripts": [_entry(e) for e in transcripts],
                "sessions": [{"key": s.key, "updated_at": s.updated_at, "summary": s.summary} for s in sessions],
                "state": dict(state), "daily_notes": [{"day": n.day, "content": n.content} for n in notes],
                "prompts": [{"name": p.name, "chars": len(p.content)} for p in prompts], "config": dict(config),
                "documents": [_document(d) for d in documents],
            },
            "meta": meta, "shared_documents": docs.shared,
        }
        return data, lines

    # ---- one table each ----------------------------------------------------------------------------

    def memories(self) -> tuple[Any, list[str]]:
        if self.search is not None:
            return self._memory_search()
        records = self.store.memories.list(self.limit)
        lines = self._title("All Memories") + [RULE]
        for m in records:
            lines += ["", f"  ID: {m.id}  Vector: {'yes' if m.embedding_model else 'no'}",
                      f"  Created: {_when(m.created_at)}  Importance: {m.importance:.1f}  Category: {m.category}  "
                      f"Accessed: {m.access_count}x", f"  Content: {m.content}", *_memory_lines(m)]
        return [_memory(m) for m in records], lines + ([] if records else ["  No memories stored yet."])

    def _memory_search(self) -> tuple[Any, list[str]]:
        query = self.search or ""
        result = self.store.memories.recall(query, self.limit, touch=False)
        lines = self._title("") + [f"  Semantic Search: \"{query}\""]
        if result.degraded:
            lines.append(f"  (keyword matching only: {result.note})")
        lines.append(RULE)
        for match in result.matches:
            m = match.memory
            lines += ["", f"  [{match.score * 100:5.1f}% match]  ID: {m.id}",
                      f"  Created: {_when(m.created_at)}  Importance: {m.importance:.1f}  Category: {m.category}  "
                      f"Accessed: {m.access_count}x", f"  Content: {m.content}", *_memory_lines(m)]
        if not result.matches:
            lines.append("  No matching memories found.")
        data = [{**_memory(m.memory), "match": round(m.score, 4), "similarity": m.similarity} for m in result.matches]
        return data, lines

    def sessions(self) -> tuple[Any, list[str]]:
        sessions = self.store.sessions.list()[: self.limit]
        lines = self._title("Sessions") + [RULE]
        data = []
        for s in sessions:
            size = len(json.dumps([m.to_dict() for m in s.messages], ensure_ascii=False).encode("utf-8"))
            lines += ["", f"  Session: {s.key}",
                      f"  Created: {_when(s.created_at)}  Updated: {_when(s.updated_at)}  Messages: {len(s.messages)} "
                      f"(size: {size} bytes)", f"  Summary: {s.summary or '(no summary)'}"]
            data.append({"key": s.key, "created_at": s.created_at, "updated_at": s.updated_at,
                         "messages": len(s.messages), "bytes": size, "summary": s.summary})
        return data, lines + ([] if sessions else ["  No sessions stored yet."])

    def transcripts(self) -> tuple[Any, list[str]]:
        entries = self._recent_transcripts(self.limit)
        lines = self._title("Transcripts (newest first)") + [RULE] + [
            f"  {_when(e.created_at)}  {'#' + str(e.seq):<6s}  {e.message.role:<10s}  [{e.session_key}]  "
            f"{_one_line(e.message.content) or self._tool_calls(e)}" for e in entries]
        return [_entry(e) for e in entries], lines + ([] if entries else ["  No transcripts yet."])

    @staticmethod
    def _tool_calls(entry: Any) -> str:
        return ", ".join(f"→ {call.name}({json.dumps(call.arguments, ensure_ascii=False)})"
                         for call in entry.message.tool_calls)

    def state(self) -> tuple[Any, list[str]]:
        rows = dict(list(self.store.state.all().items())[: self.limit])
        lines = self._title("State") + [RULE] + [f"  {k:<30s} = {v}" for k, v in rows.items()]
        return rows, lines + ([] if rows else ["  No state entries yet."])

    def notes(self) -> tuple[Any, list[str]]:
        if self.search is not None:
            return self._note_search()
        lines = self._title("Daily Notes") + [RULE]
        rows = self.store.notes.list(self.limit)
        for n in rows:
            lines += ["", f"  Date: {n.day.isoformat()}  ID: {n.note_id}  Vector: {'yes' if n.has_vector else 'no'}  "
                          f"Updated: {_when(n.updated_at)}", _block("Content", _note_text(n.day, n.content))]
        data = [{"day": n.day, "id": n.note_id, "vector": n.has_vector, "updated_at": n.updated_at,
                 "content": n.content} for n in rows]
        return data, lines + ([] if data else ["  No daily notes yet."])

    def _note_search(self) -> tuple[Any, list[str]]:
        found = self.store.notes.search(self.search or "", self.limit)
        lines = self._title("") + [f"  Semantic Search of Daily Notes: \"{self.search}\"", RULE]
        for note, similarity in found:
            lines += ["", f"  [{similarity * 100:5.1f}% match]  Date: {note.day.isoformat()}",
                      _block("Content", _note_text(note.day, note.content))]
        if not found:
            lines.append("  No matching daily notes found.")
        return [{"day": n.day, "match": round(s, 4), "content": n.content} for n, s in found], lines

    def prompts(self) -> tuple[Any, list[str]]:
        prompts = self.store.prompts.list()
        if self.name is not None:
            wanted = self.name if self.name.lower().endswith(".md") else f"{self.name}.md"
            prompt = next((p for p in prompts if p.name.lower() == wanted.lower()), None)
            if prompt is None:
                raise CLIError(f"Not found: no prompt named {self.name} (have: "
                               f"{', '.join(p.name for p in prompts) or 'none'})")
            return {"name": prompt.name, "content": prompt.content}, [f"  Prompt: {prompt.name}", "", prompt.content]
        lines = self._title("System Prompts") + ["  (use: oracle-inspect prompts <name>  to view full content)", RULE]
        lines += [f"  {p.name:<25s}  {len(p.content):5d} chars" for p in prompts]
        return ([{"name": p.name, "chars": len(p.content)} for p in prompts],
                lines + ([] if prompts else ["  No prompts stored yet."]))

    def config_view(self) -> tuple[Any, list[str]]:
        rows = dict(list(self._config_rows().items())[: self.limit])
        lines = self._title("Config (secrets redacted)") + [RULE]
        for key, value in rows.items():
            try:
                parsed = json.loads(value)
            except ValueError:
                parsed = None
            if isinstance(parsed, (dict, list)):  # a config snapshot: readable, one setting per line
                lines += [f"  {key}:"] + ["    " + line for line in json.dumps(parsed, indent=2).splitlines()]
            else:
                lines.append(f"  {key:<30s} = {value}")
        return rows, lines + ([] if rows else ["  No config entries stored yet."])

    def documents(self) -> tuple[Any, list[str]]:
        docs = self.store.documents.counts()
        records = self.store.documents.all(self.limit)
        lines = self._title("Documents") + [
            f"  {count(docs.documents, 'document')} ({docs.shared} shared), {count(docs.chunks, 'chunk')}", RULE]
        for d in records:
            lines += ["", f"  ID: {d.id}  Chunks: {d.chunks}  Shared: {'yes' if d.shared else 'no'}",
                      f"  Added: {_when(d.added_at)}  Person: {d.person or OWNER}", f"  Title: {d.title}",
                      f"  Source: {d.source}"]
        return [_document(d) for d in records], lines + ([] if records else ["  No documents stored yet."])

    def meta(self) -> tuple[Any, list[str]]:
        meta = self._meta_rows()
        lines = self._title("Meta") + [RULE] + [f"  {k:<30s} = {v}" for k, v in meta.items()]
        lines += [] if meta else ["  No metadata yet."]
        details = self.store.details()
        if details.note:
            lines += ["", f"  ({details.note})"]
        if details.models or not details.note:
            lines += ["", "  ONNX Models", RULE]
            lines += [f"  {n:<25s}  {f:<15s}  {a}" for n, f, a in details.models] or ["  No ONNX models loaded."]
            lines += ["", "  Vector Indexes", RULE]
            lines += [f"  {name:<30s}  on {table}" for name, table, _ in details.indexes] or [
                "  No vector indexes (run picoora setup-oracle)."]
        data = {"meta": meta, "onnx_models": [{"name": n, "function": f, "algorithm": a} for n, f, a in details.models],
                "vector_indexes": [{"name": n, "table": t, "status": st} for n, t, st in details.indexes]}
        return data, lines

    # ---- helpers -----------------------------------------------------------------------------------

    def _meta_rows(self) -> dict[str, str]:
        return {**self.store.details().schema, **self.store.meta.all()}

    def _config_rows(self) -> dict[str, str]:
        from picoora.config import secret_values
        from picoora.secrets import redact_text

        secrets = secret_values(self.config)
        return {k: redact_text(v, secrets) for k, v in self.store.config.all().items()}

    def _recent_transcripts(self, n: int) -> list[Any]:
        return self.store.transcripts.recent(n)


def _memory(m: Any) -> dict[str, Any]:
    return {"id": m.id, "content": m.content, "importance": m.importance, "category": m.category,
            "created_at": m.created_at, "accessed_at": m.accessed_at, "access_count": m.access_count,
            "vector": bool(m.embedding_model), "provenance": m.provenance.to_json(), "status": m.status(),
            "superseded_by": m.superseded_by, "expires_at": m.expires_at}


def _memory_lines(m: Any) -> list[str]:
    """Where a memory came from, and whether it is still true (superseded: by which; its end)."""
    status = m.status() + (f" (until {_when(m.expires_at)})" if m.expires_at and m.is_current() else "")
    return [f"  Source: {m.provenance.describe()}  Status: {status}"]


def _document(d: Any) -> dict[str, Any]:
    return {"id": d.id, "source": d.source, "title": d.title, "person": d.person, "shared": d.shared,
            "chunks": d.chunks, "added_at": d.added_at}


def _entry(e: Any) -> dict[str, Any]:
    return {"session": e.session_key, "seq": e.seq, "role": e.message.role, "content": e.message.content,
            "created_at": e.created_at}
