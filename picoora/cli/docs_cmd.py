"""``picoora docs``: the knowledge base without a model in the loop (add, list, remove, reindex, search).

``--as PERSON`` acts for that person (their own documents and the shared ones); ``--shared`` is the
owner's alone. ``--json`` prints one JSON array; ``search --json`` objects have ``text``, ``source``,
``title``, ``score`` (0-1), ``chunk`` and ``page`` (PDFs; null otherwise).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import typer

from picoora.cli.errors import EXIT_USAGE, CLIError, load_config, warn

if TYPE_CHECKING:
    from picoora.config import Config
    from picoora.docs.adding import Outcome
    from picoora.store.protocol import Store

AS_HELP = "Act for this person (configured or paired): their own documents and the shared ones."


def register(app: typer.Typer) -> None:
    docs = typer.Typer(name="docs", help="A knowledge base: add documents, search them, list, remove, reindex.",
                       no_args_is_help=True)
    for name, command in (("add", add), ("list", list_), ("remove", remove), ("reindex", reindex),
                          ("search", search)):
        docs.command(name)(command)
    app.add_typer(docs)


@contextmanager
def _store(config: Config, person: str) -> Iterator[Store]:
    """The owner's store, or ``person``'s view of it (``--as``)."""
    from picoora.cli.opening import command_store
    from picoora.identities import check_person_name, owner_name

    with command_store(config) as store:
        if not person or person == owner_name(config):
            yield store
            return
        from picoora.store.scoped import open_person_store

        try:
            check_person_name(person)
        except ValueError as exc:
            raise CLIError(str(exc), EXIT_USAGE) from None
        scoped = open_person_store(config, store, person)
        try:
            yield scoped
        finally:
            scoped.close()


def add(
    ctx: typer.Context,
    sources: list[str] = typer.Argument(..., metavar="PATH_OR_URL...",
                                        help="Files, folders (recursive) or http(s) URLs."),
    person: str = typer.Option("", "--as", metavar="PERSON", help=AS_HELP),
    shared: bool = typer.Option(False, "--shared", help="Everyone may search it (the owner only)."),
) -> None:
    """Add documents (.txt .md .html .pdf .docx); unchanged ones are skipped, changed ones replaced."""
    from picoora.cli.memory_cmd import progress_bar
    from picoora.docs.adding import add_sources

    config = load_config(ctx)
    if shared and person:
        from picoora.identities import owner_name

        if person != owner_name(config):
            raise CLIError("only the owner shares documents: drop --as or --shared", EXIT_USAGE)
    with _store(config, person) as store, progress_bar("Adding") as progress:
        outcomes = add_sources(store, config.tools.web_fetch, sources, shared=shared, on_outcome=_report,
                               progress=progress)
    failed = sum(o.status == "failed" for o in outcomes)
    counts = {status: sum(o.status == status for o in outcomes) for status in ("added", "replaced", "unchanged")}
    print(", ".join(f"{n} {status}" for status, n in counts.items()) + (f", {failed} failed" if failed else ""))
    if failed and failed == len(outcomes):
        raise typer.Exit(1)


def _report(outcome: Outcome) -> None:
    if outcome.status == "failed":
        warn(f"cannot add {outcome.source}: {outcome.error}")


def list_(
    ctx: typer.Context,
    person: str = typer.Option("", "--as", metavar="PERSON", help=AS_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON array instead of a table."),
) -> None:
    """List the documents (yours and the shared ones)."""
    with _store(load_config(ctx), person) as store:
        documents = store.documents.list()
    if as_json:
        _print_json([d.to_json() for d in documents])
        return
    if not documents:
        print("No documents yet. Add some with `picoora docs add PATH_OR_URL`.")
        return
    from picoora.cli.memory_cmd import _print_table

    _print_table(["Id", "Title", "Chunks", "Shared", "Source"],
                 [[d.id, d.title, str(d.chunks), "yes" if d.shared else "", d.source] for d in documents])


def remove(
    ctx: typer.Context,
    target: str = typer.Argument(..., metavar="ID_OR_PATH", help="Id from `docs list`, or the path or URL added."),
    person: str = typer.Option("", "--as", metavar="PERSON", help=AS_HELP),
) -> None:
    """Remove one of your documents and its chunks."""
    from pathlib import Path

    from picoora.docs.adding import is_url

    with _store(load_config(ctx), person) as store:
        removed = store.documents.remove(target)
        if removed is None and not is_url(target):
            removed = store.documents.remove(str(Path(target).expanduser().absolute()))
    if removed is None:
        raise CLIError(f"no document of yours is {target}: see `picoora docs list`")
    print(f"Removed {removed.id} ({removed.source})")


def reindex(ctx: typer.Context) -> None:
    """Re-chunk (with the docs.chunk_* settings) and re-embed every document."""
    from picoora.cli.memory_cmd import progress_bar

    with _store(load_config(ctx), "") as store, progress_bar("Reindexing") as progress:
        count = store.documents.reindex(progress=progress)
    print(f"Reindexed {count} chunks.")


def search(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="A question or keywords."),
    limit: int = typer.Option(5, "-n", "--limit", min=1, max=100, help="At most this many chunks."),
    person: str = typer.Option("", "--as", metavar="PERSON", help=AS_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON array instead of text."),
) -> None:
    """The chunks that best answer QUERY (nothing when no document does)."""
    with _store(load_config(ctx), person) as store:
        hits = store.documents.search(query, limit)
    if as_json:
        _print_json([h.to_json() for h in hits])
        return
    if not hits:
        print("Nothing in the documents answers that.")
        return
    for hit in hits:
        where = f"page {hit.page}" if hit.page else f"chunk {hit.chunk + 1}"
        print(f"[{hit.score * 100:.0f}%] {hit.document.title} ({where}) {hit.document.source}")
        print(f"    {hit.text[:300]}{'...' if len(hit.text) > 300 else ''}\n")


def _print_json(items: list[dict[str, Any]]) -> None:
    print(json.dumps(items, ensure_ascii=False, indent=2))
    sys.stdout.flush()
