"""``picoora memory``: long-term memory without a model in the loop.

``--json`` prints one JSON array; ``export``/``import`` speak JSON Lines (one memory per line, the
same fields as ``--json``), and import keeps ids and timestamps so a round trip is lossless.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from picoora.cli.errors import CLIError, load_config, warn

if TYPE_CHECKING:
    from picoora.store.base import MemoryRecord, RecallResult
    from picoora.store.protocol import Store

def register(app: typer.Typer) -> None:
    memory = typer.Typer(
        name="memory",
        help="Add, search, list, forget, export and import long-term memories (no model involved).",
        no_args_is_help=True,
    )
    for name, command in (
        ("add", add),
        ("search", search),
        ("list", list_),
        ("forget", forget),
        ("reindex", reindex),
        ("export", export),
        ("import", import_),
    ):
        memory.command(name)(command)
    app.add_typer(memory)


def _store(ctx: typer.Context) -> AbstractContextManager[Store]:
    from picoora.cli.opening import command_store

    return command_store(load_config(ctx))


def add(
    ctx: typer.Context,
    text: str = typer.Argument(..., help="What to remember, as one self-contained sentence."),
    importance: float = typer.Option(0.7, min=0.0, max=1.0, help="How much it matters, 0 to 1."),
    category: str = typer.Option("general", help="A short label: preference, person, project, fact, ..."),
    until: str | None = typer.Option(None, help="When it stops being true: a date, tomorrow, friday, ..."),
) -> None:
    """Remember TEXT. A new value for what a memory states (a new door code) supersedes that memory."""
    from picoora.store.base import Provenance
    from picoora.store.until import parse_until

    if not text.strip():
        raise CLIError("nothing to remember: TEXT is empty", 2)
    try:
        expires_at = parse_until(until) if until else None
    except ValueError as err:
        raise CLIError(f"--until: {err}", 2) from None
    with _store(ctx) as store:
        result = store.memories.add(text.strip(), importance=importance, category=category, expires_at=expires_at,
                                  provenance=Provenance(how="by hand", person="owner", session="cli"))
        vectors = store.memories.vector_status()
    if result.created and vectors.embedder and result.memory.embedding_model is None:
        warn(f"Note: no vector was stored for it: the embedder {vectors.embedder} could not be used"
             f"{f' ({vectors.note})' if vectors.note else ''}. Until you run `picoora memory reindex` with it "
             "working, this memory is found by keywords only.")
    if result.created:
        print(f"Remembered {result.memory.id}" + (f" until {_short_time(expires_at)}" if expires_at else ""))
        for old in result.replaced:
            print(f"It supersedes {old.id}: {old.content}")
    else:
        print(f"Already remembered as {result.memory.id}: {result.memory.content}")


def search(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="What to look for; matched by meaning and by keywords."),
    limit: int = typer.Option(5, "-n", "--limit", min=1, help="At most this many results."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON array instead of a table."),
) -> None:
    """Find the memories closest to QUERY (weaker matches too). Looking does not count as an access."""
    with _store(ctx) as store:
        result = store.memories.recall(query, limit=limit, touch=False)
        vectors = store.memories.vector_status()
    _warn_if_degraded(result)
    if vectors.missing and not result.degraded:
        warn(f"Note: {vectors.missing} of the memories lack a vector from {vectors.embedder}, so they are found by "
             "keywords only: run `picoora memory reindex`.")
    if as_json:
        _print_json(
            [{**m.memory.to_json(), "score": round(m.score, 4), "similarity": m.similarity} for m in result.matches]
        )
        return
    if not result.matches:
        print("No matching memories.")
        return
    _print_table(
        ["Match", "Id", "Category", "Content", "Source"],
        [[f"[{m.score * 100:5.1f}% match]", m.memory.id, m.memory.category, m.memory.content,
          m.memory.provenance.describe()] for m in result.matches],
    )


def list_(
    ctx: typer.Context,
    limit: int = typer.Option(20, "-n", "--limit", min=1, help="At most this many memories."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON array instead of a table."),
    everything: bool = typer.Option(False, "--all", help="Also superseded and expired memories."),
) -> None:
    """List current memories, newest first (--all: also those superseded by a newer one or expired)."""
    with _store(ctx) as store:
        records = store.memories.list(limit=None if not everything else limit)
    hidden = 0
    if not everything:
        current = [r for r in records if r.is_current()]
        hidden, records = len(records) - len(current), current[:limit]
    if as_json:
        _print_json([{**r.to_json(), "status": r.status()} for r in records])
        return
    if not records:
        print("No memories yet. Add one with `picoora memory add TEXT` or tell the assistant something."
              if not hidden else f"No current memories ({hidden} superseded or expired: `picoora memory list --all`).")
        return
    columns = ["Id", "Created", "Category", "Importance", "Content", "Until", "Source"]
    rows = [[r.id, _short_time(r.created_at), r.category, f"{r.importance:.2f}", r.content,
             _short_time(r.expires_at), r.provenance.describe()] for r in records]
    if everything:
        columns.append("Status")
        for row, record in zip(rows, records, strict=True):
            row.append(record.status())
    _print_table(columns, rows)


def forget(
    ctx: typer.Context,
    memory_id: str = typer.Argument(..., metavar="ID", help="Id from `memory list` or `memory search`."),
) -> None:
    """Delete the memory with this ID."""
    with _store(ctx) as store:
        found = store.memories.forget(memory_id)
    if not found:
        raise CLIError(f"no memory with id {memory_id}: see `picoora memory list`")
    print(f"Forgot {memory_id}")


def reindex(ctx: typer.Context) -> None:
    """Re-embed every memory with the configured embedder (after changing memory.embedder).
    An interrupted reindex continues where it stopped when run again."""
    with _store(ctx) as store, progress_bar("Re-embedding") as progress:
        count = store.memories.reindex(progress=progress)
    print(f"Re-embedded {count} memories.")


def export(
    ctx: typer.Context,
    file: Path | None = typer.Argument(None, help="Where to write (JSON Lines); default or '-': stdout."),
) -> None:
    """Write every memory as JSON Lines."""
    with _store(ctx) as store:
        records = store.memories.list()
    lines = "".join(json.dumps(r.to_json(), ensure_ascii=False) + "\n" for r in records)
    if file is None or str(file) == "-":
        sys.stdout.write(lines)
        return
    try:
        file.write_text(lines, encoding="utf-8")
    except OSError as err:
        raise CLIError(f"cannot write {file}: {err.strerror or err}") from None
    print(f"Exported {len(records)} memories to {file}", file=sys.stderr)


def import_(
    ctx: typer.Context,
    file: Path = typer.Argument(..., help="A JSON Lines file from `picoora memory export` ('-': stdin)."),
) -> None:
    """Add memories from a JSON Lines file ({"content": ...} at least), keeping their ids and times (a line
    without an id gets one); known ones are skipped (so an interrupted import continues when run again)."""
    records = _read_records(file)
    with _store(ctx) as store, progress_bar("Importing") as progress:
        added = store.memories.import_records(records, progress=progress)
    skipped = len(records) - added
    print(f"Imported {added} memories" + (f" ({skipped} already present)" if skipped else "") + ".")


@contextmanager
def progress_bar(label: str) -> Iterator[Callable[[int, int], None] | None]:
    """A rich progress bar on stderr when it is a terminal; no callback otherwise (pipes, tests)."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


def record_from_dict(data: dict[str, Any]) -> MemoryRecord:
    from dataclasses import replace

    from picoora.store.base import MemoryRecord

    if not isinstance(data, dict) or not str(data.get("content") or "").strip():
        raise ValueError('each line needs at least "content" (a JSON object, e.g. {"content": "..."})')
    from picoora.store.base import UNKNOWN, Provenance

    # No id: the store gives one (a rerun still adds nothing twice: it skips texts it holds).
    # Vectors are not exported: the importing store embeds with its own model.
    record = replace(MemoryRecord.from_json({**data, "id": str(data.get("id") or "")}), embedding_model=None)
    if record.provenance.how == UNKNOWN and "provenance" not in data:  # from elsewhere: say so
        record = replace(record, provenance=Provenance(how="imported"))
    return record


def _read_records(file: Path) -> list[MemoryRecord]:
    try:
        text = sys.stdin.read() if str(file) == "-" else file.read_text(encoding="utf-8")
    except OSError as err:
        raise CLIError(f"cannot read {file}: {err.strerror or err}") from None
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(record_from_dict(json.loads(line)))
        except (ValueError, TypeError) as err:  # JSONDecodeError is a ValueError
            raise CLIError(f"{file}, line {number}: {err}; nothing was imported") from None
    return records


def _short_time(value: datetime | None) -> str:
    return value.astimezone().strftime("%Y-%m-%d %H:%M") if value else ""


def _warn_if_degraded(result: RecallResult) -> None:
    if result.degraded:
        print(f"Note: keyword-only search ({result.note or 'no embedding model available'}).", file=sys.stderr)


def _print_json(items: list[dict[str, Any]]) -> None:
    print(json.dumps(items, ensure_ascii=False, indent=2))


def _print_table(columns: list[str], rows: list[list[str]]) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(*columns, header_style="bold")
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))  # Text: memory content is never read as rich markup
    Console().print(table)
