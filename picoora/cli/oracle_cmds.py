"""``picoora setup-oracle`` and ``picoora oracle-inspect``.

setup-oracle prints one ✓/⚠/✗ line per step, as the Go version did, and exits with:
  0  ready;  1  not ready (a required step failed: connect, schema, model, self-test);
  2  bad usage or config;  3  ready, with warnings (an optional step failed: indexes, prompts, import).
Nothing heavy is imported at module level (``picoora --help`` imports this module).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from picoora.cli.errors import EXIT_USAGE, CLIError, load_config

if TYPE_CHECKING:
    from picoora.config import Config
    from picoora.store.oracle.setup import OracleSetup
    from picoora.store.protocol import Store
    from picoora.store.transfer import TransferReport

EXIT_READY, EXIT_FAILED, EXIT_WARNINGS = 0, 1, 3
OK, WARN, FAIL = "✓", "⚠", "✗"


def register(app: typer.Typer) -> None:
    from picoora.cli import oracle_inspect

    app.command("setup-oracle")(setup_oracle)
    app.command("oracle-inspect")(oracle_inspect.oracle_inspect)


class _Steps:
    """Prints step lines and remembers whether any optional step only half-worked."""

    def __init__(self) -> None:
        self.warnings = 0

    def ok(self, text: str) -> None:
        print(f"{OK} {text}")

    def warn(self, text: str) -> None:
        self.warnings += 1
        print(f"{WARN} {text}")

    def fail(self, text: str) -> typer.Exit:
        print(f"{FAIL} {text}")
        print("\nOracle setup did not finish: fix the line marked ✗ and run `picoora setup-oracle` again.")
        return typer.Exit(EXIT_FAILED)


def setup_oracle(
    ctx: typer.Context,
    onnx_file: Path | None = typer.Option(
        None, "--onnx-file", metavar="PATH",
        help="Load the ONNX embedding model from this local file (sent to the database as a BLOB). "
             "With --onnx-dir: the file name inside that directory."),
    onnx_dir: str | None = typer.Option(
        None, "--onnx-dir", metavar="DIRECTORY",
        help="Load the model from a database DIRECTORY object (file: --onnx-file NAME, "
             "default all_MiniLM_L12_v2.onnx)."),
    onnx_url: str | None = typer.Option(
        None, "--onnx-url", metavar="URL",
        help="Let the database fetch the model (DBMS_VECTOR.LOAD_ONNX_MODEL_CLOUD)."),
    hnsw: bool = typer.Option(
        False, "--hnsw", help="HNSW vector indexes (in memory; need vector_memory_size). Default: IVF."),
    rebuild_indexes: bool = typer.Option(
        False, "--rebuild-indexes",
        help="Drop and create the vector indexes that exist (as IVF, or HNSW with --hnsw), from the data now there."),
    import_files: bool = typer.Option(
        False, "--import-files", help="Copy everything the file backend holds into Oracle."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the SQL for a fresh database; connect to nothing."),
    force: bool = typer.Option(
        False, "--force", help="Replace the prompts already in the database with the workspace's files."),
) -> None:
    """Create or upgrade the PICO_ schema, load the ONNX model, check it, create indexes, seed prompts.

    Exit codes: 0 ready, 1 not ready, 2 bad usage or config, 3 ready with warnings."""
    from picoora.store.oracle.connection import validate_identifier

    config = load_config(ctx)
    try:
        validate_identifier(config.oracle.onnx_model)
    except ValueError as err:
        raise CLIError(f"{err}: fix oracle.onnx_model in config.json", EXIT_USAGE) from None
    if onnx_url and (onnx_file or onnx_dir):
        raise CLIError("--onnx-url cannot be combined with --onnx-file or --onnx-dir", EXIT_USAGE)
    if dry_run:
        from picoora.store.oracle.setup import dry_run_script

        print(dry_run_script(config.oracle.onnx_model.upper(), hnsw=hnsw, onnx_file=onnx_file, onnx_dir=onnx_dir,
                             onnx_url=onnx_url), end="")
        return
    if not config.oracle.enabled:
        raise CLIError("Oracle is not enabled in config. Set oracle.enabled = true first "
                       "(or PICO_ORACLE_ENABLED=true), or run scripts/setup-oracle.sh")
    if onnx_file and not onnx_dir and not onnx_file.is_file():
        raise CLIError(f"--onnx-file {onnx_file}: no such file", EXIT_USAGE)
    raise typer.Exit(_run_setup(config, onnx_file, onnx_dir, onnx_url, hnsw, import_files, force, rebuild_indexes))


def _run_setup(config: Config, onnx_file: Path | None, onnx_dir: str | None, onnx_url: str | None,
               hnsw: bool, import_files: bool, force: bool = False, rebuild_indexes: bool = False) -> int:
    from picoora.store.base import StoreError
    from picoora.store.oracle import OracleUnavailable, open_database
    from picoora.store.oracle.setup import OracleSetup

    steps = _Steps()
    print("🔧 Setting up Oracle AI Database for picoora...")
    try:
        db = open_database(config)
    except OracleUnavailable as err:
        raise steps.fail(f"Connection failed: {err}") from None
    setup = OracleSetup(db)
    try:
        try:
            setup.connect()
        except OracleUnavailable as err:
            raise steps.fail(f"Connection failed: {err}") from None
        steps.ok(f"Connected to Oracle AI Database at {db.target} as {config.oracle.user}")
        _schema_step(setup, steps)
        _model_step(setup, steps, onnx_file, onnx_dir, onnx_url)
        _background_step(setup, steps)
        store = _open_store(config, steps)
        try:
            _seed_prompts(config, store, steps, force=force)
            _store_config_snapshot(config, store, steps)
            if import_files:
                _import_files(config, store, steps)
        finally:
            store.close()
        _optional_steps(setup, steps, hnsw, rebuild_indexes)  # after the import: vector indexes are built from the data
    except StoreError as err:  # the database went away between steps
        raise steps.fail(str(err)) from None
    finally:
        db.close()
    if steps.warnings:
        print(f"\nOracle setup complete with {steps.warnings} warning(s): see the ⚠ lines above.")
        return EXIT_WARNINGS
    print("\n🎉 Oracle setup complete! picoora is ready to use Oracle AI Database.")
    return EXIT_READY


def _schema_step(setup: OracleSetup, steps: _Steps) -> None:
    from picoora.store.base import StoreError
    from picoora.store.oracle.schema import LATEST_VERSION

    try:
        before, applied = setup.migrate()
    except StoreError as err:
        raise steps.fail(f"Schema initialization failed: {err}") from None
    if not applied:
        steps.ok(f"Schema up to date (version {LATEST_VERSION}, 12 PICO_ tables)")
    elif before == 0:
        steps.ok(f"Schema created (version {LATEST_VERSION}, 12 tables with PICO_ prefix)")
    else:
        steps.ok(f"Schema upgraded from version {before} to {LATEST_VERSION}: "
                 + "; ".join(m.description for m in applied))


def _model_step(setup: OracleSetup, steps: _Steps, onnx_file: Path | None, onnx_dir: str | None,
                onnx_url: str | None) -> None:
    from picoora.store.base import StoreError
    from picoora.store.oracle.setup import DEFAULT_ONNX_FILE, EMBEDDING_DIMENSIONS

    model = setup.model
    if setup.model_loaded():
        steps.ok(f"ONNX model '{model}' already loaded")
    elif not (onnx_file or onnx_dir or onnx_url):
        raise steps.fail(f"ONNX model '{model}' is not loaded. Load it with --onnx-file PATH (Oracle's augmented "
                         "all_MiniLM_L12_v2.onnx; scripts/setup-oracle.sh downloads it), --onnx-dir DIRECTORY "
                         "or --onnx-url URL")
    else:
        source = (f"directory {onnx_dir.upper()} ({onnx_file.name if onnx_file else DEFAULT_ONNX_FILE})" if onnx_dir
                  else onnx_url if onnx_url else str(onnx_file))
        print(f"  Loading ONNX model '{model}' from {source}...", flush=True)
        try:
            if onnx_dir:
                fresh = setup.load_model_directory(onnx_dir, onnx_file.name if onnx_file else DEFAULT_ONNX_FILE)
            elif onnx_url:
                fresh = setup.load_model_url(onnx_url)
            else:
                assert onnx_file is not None  # the only source left (none given was refused above)
                fresh = setup.load_model_file(onnx_file)
        except (StoreError, ValueError, OSError) as err:
            raise steps.fail(f"ONNX model load failed: {err}") from None
        steps.ok(f"ONNX model '{model}' loaded" if fresh else f"ONNX model '{model}' already loaded")
    try:
        dims = setup.self_test()
    except StoreError as err:
        raise steps.fail(f"Embedding test failed: {err}") from None
    if dims != EMBEDDING_DIMENSIONS:
        raise steps.fail(f"Embedding test: '{model}' returns {dims} dimensions, but picoora's columns are "
                         f"VECTOR({EMBEDDING_DIMENSIONS}, FLOAT32): use a {EMBEDDING_DIMENSIONS}-dimension model "
                         "such as ALL_MINILM_L12_V2 (oracle.onnx_model)")
    steps.ok(f"Embedding test passed: VECTOR_EMBEDDING returns {dims} dimensions")


def _background_step(setup: OracleSetup, steps: _Steps) -> None:
    from picoora.store.base import StoreError

    try:
        embedded = setup.background_questions()
    except StoreError as err:  # optional: automatic recall then decides by the similarity floor alone
        steps.warn(f"Background questions not embedded ({err}); automatic recall uses its similarity floor alone")
        return
    steps.ok(f"Background questions for automatic recall embedded ({embedded})" if embedded
             else "Background questions for automatic recall already embedded")


def _optional_steps(setup: OracleSetup, steps: _Steps, hnsw: bool, rebuild: bool) -> None:
    kind = "HNSW" if hnsw else "IVF"
    for outcome in setup.vector_indexes(hnsw, rebuild):
        if outcome.error:
            hint = (" (HNSW needs a vector pool: ALTER SYSTEM SET vector_memory_size=512M SCOPE=SPFILE as SYSDBA and "
                    "restart, or drop --hnsw for IVF)") if hnsw else ""
            steps.warn(f"Vector index {outcome.name} not created: {outcome.error}{hint}")
        elif hnsw and not outcome.created and not outcome.deferred and outcome.kind != "HNSW":
            # Never a ✓ for an index that is not what was asked: the search would not be what they expect.
            steps.warn(f"Vector index {outcome.name} exists as {outcome.kind or 'an unknown organisation'}, not the "
                       "HNSW asked for; it was kept. To rebuild it as HNSW: picoora setup-oracle --hnsw "
                       "--rebuild-indexes")
        elif outcome.deferred:
            steps.ok(f"Vector index {outcome.name} ({kind}) deferred: no vectors stored yet (searches are exact "
                     "until then; run `picoora setup-oracle` or `picoora memory reindex` once there is data)")
        else:
            steps.ok(f"Vector index {outcome.name} ({outcome.kind or 'organisation unknown'}) "
                     + ("created" if outcome.created else "already exists"))
    text = setup.text_index()
    if text.error:
        steps.warn(f"Oracle Text index not created ({text.error}); keyword recall scans the table instead")
    else:
        steps.ok(f"Oracle Text index {text.name} " + ("created" if text.created else "already exists"))


def _open_store(config: Config, steps: _Steps) -> Store:
    from picoora.store.oracle import OracleUnavailable, open_oracle_store

    try:
        return open_oracle_store(config)
    except OracleUnavailable as err:
        raise steps.fail(str(err)) from None


def _seed_prompts(config: Config, store: Store, steps: _Steps, *, force: bool) -> None:
    """The workspace's prompt files, into the database where it has none of that name (``force``: all). The
    prompts are the fleet's: setup-oracle run again on another node must not overwrite what was edited."""
    from picoora.config import workspace_path
    from picoora.store.base import PROMPT_NAMES

    workspace = workspace_path(config)
    seeded, kept = [], []
    for name in PROMPT_NAMES:
        path = workspace / name
        if not path.is_file():
            continue
        if not force and store.prompts.get(name) is not None:
            kept.append(name)
            continue
        store.prompts.set(name, path.read_text(encoding="utf-8"))
        seeded.append(name)
    if seeded:
        steps.ok(f"Prompts seeded from workspace: {', '.join(seeded)}")
    if kept:
        steps.ok(f"Prompts already in the database kept: {', '.join(kept)} (--force replaces them)")
    if not seeded and not kept:
        steps.warn(f"No prompt files in {workspace}: run `picoora onboard`, then `picoora setup-oracle` again")


def _store_config_snapshot(config: Config, store: Store, steps: _Steps) -> None:
    from picoora.config import redacted

    store.config.set("full_config", json.dumps(redacted(config), ensure_ascii=False))
    steps.ok("Config snapshot stored in PICO_CONFIG (secrets redacted)")


IMPORT_LEASE = "setup.import-files"
IMPORT_LEASE_SECONDS = 3600.0  # longer than any import; released at its end (or it expires after a crash)


def _transfer_everyone(files_only: Config, store: Store) -> TransferReport:
    """The owner's file store, then each person's (``<workspace>/.picoora/people/<name>``) into theirs."""
    from picoora.cli.memory_cmd import progress_bar
    from picoora.config import workspace_path
    from picoora.store import open_file_store, open_store
    from picoora.store.layout import FileLayout
    from picoora.store.scoped import open_person_store
    from picoora.store.transfer import transfer

    source = open_store(files_only)
    try:
        with progress_bar("Importing transcripts") as progress:
            report = transfer(source, store, progress=progress)
    finally:
        source.close()
    people = FileLayout(workspace_path(files_only)).people
    for root in sorted(p for p in people.iterdir() if p.is_dir()) if people.is_dir() else ():
        person_source = open_file_store(files_only, workspace=root)
        try:
            person = transfer(person_source, open_person_store(files_only, store, root.name), shared=False)
        finally:
            person_source.close()
        for family, n in person.copied.items():
            report.count(family, True, n)
        for family, n in person.skipped.items():
            report.count(family, False, n)
    return report


def _import_files(config: Config, store: Store, steps: _Steps) -> None:
    import asyncio

    from picoora.config import workspace_path
    from picoora.store.base import StoreError
    from picoora.store.leases import node_id

    files_only = config.model_copy(update={"oracle": config.oracle.model_copy(update={"enabled": False})})
    workspace = workspace_path(config)
    leases, holder = store.leases, node_id()
    # Two nodes importing at once would both append the same transcripts: one import at a time per database.
    if not asyncio.run(leases.acquire(IMPORT_LEASE, holder, IMPORT_LEASE_SECONDS)):
        steps.warn(f"Import from {workspace} skipped: another picoora is importing into this database now "
                   "(run again once it is done: what it copied is skipped)")
        return
    try:
        report = _transfer_everyone(files_only, store)
    except (StoreError, ValueError, OSError) as err:
        steps.warn(f"Import from {workspace} stopped: {err} (run again: what was copied is skipped next time)")
        return
    finally:
        asyncio.run(leases.release(IMPORT_LEASE, holder))
    copied = ", ".join(f"{n} {family}" for family, n in report.copied.items() if n) or "nothing new"
    skipped = sum(report.skipped.values())
    steps.ok(f"Imported from {workspace}: {copied}" + (" (memories re-embedded in the database)"
                                                        if report.copied.get("memories") else "")
             + (f"; {skipped} already present" if skipped else ""))
