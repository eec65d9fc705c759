"""``picoora migrate``: bring a PicoOraClaw (Go) home into picoora, once or as often as asked.

    report = migrate_home(Path("~/.picooraclaw").expanduser(), config_path=default_config_path(),
                          open_store=my_store_opener, dry_run=True)
    print("\\n".join(report.lines()))

The config is converted key by key (``config_map``; every key with no equivalent is listed with why), the
workspace's prompts, HEARTBEAT.md, TOOLS.md and skills are copied (``workspace``), and sessions, daily notes,
MEMORY.md, the cron store and the last chat go through the store API (``records``, ``cron``), so they reach
whichever backend the config names. Nothing is overwritten without ``force``, and what ``force`` replaces is
kept as ``.bak`` first. A dry run writes nothing: it reads the store picoora already has, to say what a real
run would keep or skip, and opens none before picoora is set up.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from picoora.atomic import atomic_write_text
from picoora.config import Config, load_config, picoora_home, save_config, workspace_path
from picoora.migrate.config_map import Conversion, convert, dotted
from picoora.migrate.config_merge import merge, untouched
from picoora.migrate.cron import migrate_cron
from picoora.migrate.records import Ledger, migrate_last_chat, migrate_long_term_memory, migrate_notes, migrate_sessions
from picoora.migrate.report import Report, Section
from picoora.migrate.source import MAX_JSON_DEPTH, find_go_home, read_go_home
from picoora.migrate.workspace import migrate_files, migrate_prompts, migrate_skills
from picoora.store.protocol import Store
from picoora.templates import backup_path

__all__ = ["find_go_home", "go_home_notice", "migrate_home", "Report"]

MARKER = ".migrated-from-go.json"  # beside picoora's config: which Go home was brought over, and when

StoreOpener = Callable[[Config], AbstractContextManager[Store]]


def migrate_home(source: Path, *, config_path: Path, open_store: StoreOpener, dry_run: bool = False,
                 force: bool = False) -> Report:
    """Migrate the Go home at ``source`` into the picoora config at ``config_path`` and its store.
    Raises ``ConfigError`` when picoora's own config (kept, not replaced) cannot be loaded."""
    go = read_go_home(source)
    report = Report(source=str(source), target=str(config_path.parent), dry_run=dry_run)
    report.notes += go.problems
    config = _migrate_config(go.config, config_path, dry_run, force, report)
    for key in go.config_cut:  # listed with the config's keys, so it is seen beside what did come
        report.dropped.append((key, f"nested deeper than {MAX_JSON_DEPTH} levels: left out, the rest of "
                                    "config.json was read"))
    workspace = workspace_path(config)

    files = report.section("Workspace files")
    if not dry_run:  # picoora's templates first, where the Go home has no file of that name
        _install_templates(workspace, files)
    migrate_files(go.workspace, workspace, dry_run, force, files)
    skills = report.section("Skills")
    builtin = {p.name for p in _builtin_skills().iterdir() if p.is_dir()}
    migrate_skills(go.workspace / "skills", workspace / "skills", builtin, dry_run, force, skills)
    migrate_skills(source / "skills", picoora_home() / "skills", builtin, dry_run, force, skills)

    # A dry run reads the store picoora already has (what it holds is kept, what came before is unchanged),
    # and opens none on a first run, so it writes nothing.
    exists = config_path.exists() and workspace.is_dir()
    opened: AbstractContextManager[Store | None] = nullcontext() if dry_run and not exists else open_store(config)
    with opened as store:
        ledger = Ledger(store)
        migrate_prompts(go.workspace, store, workspace, force, report.section("Prompts"), dry_run)
        migrate_sessions(go.workspace, store, ledger, force, report.section("Sessions"), dry_run)
        migrate_notes(go.workspace, store, ledger, report.section("Daily notes"), dry_run)
        migrate_long_term_memory(go.workspace, store, ledger, report.section("Memories (MEMORY.md)"), dry_run)
        migrate_last_chat(go.workspace, store, report.section("State"), dry_run)  # before the jobs: their default
        migrate_cron(go.workspace, store, ledger, config.agents.defaults.timezone, report.section("Cron jobs"),
                     dry_run)
        oracle_note = _oracle_note(config, store, dry_run)
        if oracle_note:
            report.notes.append(oracle_note)
    if not dry_run:
        _write_marker(config_path.parent / MARKER, source)
    if (go.root / "auth.json").exists() or (go.root / "auth.json").is_symlink():
        report.notes.append("auth.json (what `auth login` kept: OAuth or a pasted session token) is not read: "
                            "picoora uses API keys; set providers.<name>.api_key or the provider's key variable")
    oracle = go.config.get("oracle")
    if isinstance(oracle, dict) and oracle.get("enabled"):
        report.notes.append("The Go version kept sessions, memories and notes in Oracle: picoora reads the same "
                            "PICO_ tables (`picoora setup-oracle` upgrades the schema in place)")
    return report


def _oracle_note(config: Config, store: Store | None, dry_run: bool) -> str:
    """Where the records went when the config turns Oracle on and the store is not Oracle's."""
    if not config.oracle.enabled or (store is not None and store.backend == "oracle"):
        return ""
    from picoora.store.oracle.connection import target_of

    where = target_of(config.oracle)
    if store is None:
        return (f"The dry run did not connect to Oracle ({where}): the real run stores the records there, or in "
                "file storage when it does not answer (and says so)")
    return (f"Oracle ({where}) did not answer, so the sessions, notes, memories and jobs "
            f"{'would go' if dry_run else 'went'} to file storage, where every command finds them until Oracle "
            "answers; then they are not in Oracle: run `picoora migrate` again to bring them there")


def go_home_notice(config_path: Path, user_home: Path | None = None) -> str | None:
    """One line for ``status`` and ``onboard`` when a Go home is there: migrate it, or when it was."""
    home = find_go_home(user_home)
    if home is None:
        return None
    try:
        done = json.loads((config_path.parent / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        done = None
    if isinstance(done, dict) and done.get("source") == str(home):
        return f"{home} migrated {str(done.get('at', ''))[:16]}; `picoora migrate` again brings what changed since"
    return f"{home} found: bring its config, memories, sessions and jobs over with `picoora migrate` (--dry-run first)"


def _write_marker(path: Path, source: Path) -> None:
    from datetime import datetime

    atomic_write_text(path, json.dumps({"source": str(source), "at": datetime.now().isoformat(timespec="minutes")}))


def _migrate_config(go_config: dict[str, Any], path: Path, dry_run: bool, force: bool, report: Report) -> Config:
    """picoora's config after the migration: the converted Go config, laid over the one there (config_merge)."""
    section = report.section("Config")
    conversion = convert(go_config) if go_config else Conversion()
    report.dropped, report.notes = conversion.dropped, report.notes + conversion.notes
    config = _validated(conversion)
    if not path.exists():
        if not config.gateway.token:
            import secrets

            config.gateway.token = secrets.token_urlsafe(32)
        detail = f"{len(conversion.carried)} settings carried"
        if dry_run:
            section.would(str(path), detail)
            return config
        save_config(config, path)
        section.done(str(path), detail)
        return load_config(path)  # with the PICO_* environment over it, as every command sees it
    current = load_config(path)  # a broken file stops here (ConfigError), before anything is changed
    file_tree = json.loads(path.read_text(encoding="utf-8-sig"))
    fresh = untouched(file_tree)
    merged = merge(file_tree, conversion, go_wins=force or fresh)
    for key in merged.kept:
        section.kept(key, "edited in picoora; the Go config has another value (--force takes it)")
    mixed = _mixed_model(merged.tree, merged.from_go, merged.kept)
    if mixed:
        report.notes.append(mixed)
    if not merged.from_go:
        section.unchanged(str(path), "every Go setting is there already" if not merged.kept else "")
        return current
    how = ("onboard's unedited config: " if fresh and not force else "") + "from the Go config: " + \
        ", ".join(merged.from_go)
    try:
        Config.model_validate(merged.tree)
    except ValidationError as err:
        first = err.errors()[0]
        section.skipped(str(path), f"with the Go settings it would not load ({dotted(tuple(map(str, first['loc'])))}: "
                                   f"{first['msg']}); left as it is")
        return current
    if dry_run:
        section.would(str(path), how)
        return current
    backup = backup_path(path)
    shutil.copy2(path, backup)  # keeps its 0600
    atomic_write_text(path, json.dumps(merged.tree, indent=2, ensure_ascii=False) + "\n", mode=0o600)
    section.replaced(str(path), f"{how}; the previous one saved as {backup.name}")
    return load_config(path)


def _mixed_model(tree: dict[str, Any], from_go: list[str], kept: list[str]) -> str:
    """A warning when the merged provider and model came from different sides: picoora's model at the
    Go provider (groq with qwen3:8b) is most likely a model that provider does not serve."""
    provider, model = "agents.defaults.provider", "agents.defaults.model"
    if not ((provider in from_go and model in kept) or (model in from_go and provider in kept)):
        return ""
    defaults = tree.get("agents", {}).get("defaults", {})
    return (f"agents.defaults.provider {defaults.get('provider')!r} and agents.defaults.model "
            f"{defaults.get('model')!r} came from different configs and may not go together: set the model "
            "the provider serves (or run `picoora migrate --force` to take both from the Go config)")


def _validated(conversion: Conversion) -> Config:
    """The converted config; a value picoora refuses is taken out and listed as not carried, with why."""
    for _ in range(len(conversion.carried) + 1):
        try:
            return Config.model_validate(conversion.tree)
        except ValidationError as err:
            for error in err.errors():
                key = tuple(str(part) for part in error["loc"])
                _remove(conversion.tree, key)
                go_keys = [go for go, ours in conversion.carried if key[: len(ours.split("."))] ==
                           tuple(ours.split("."))] or [dotted(key)]
                conversion.carried = [(go, ours) for go, ours in conversion.carried if go not in go_keys]
                for go_key in go_keys:
                    conversion.dropped.append((go_key, f"picoora refuses its value: {error['msg']}"))
    return Config()


def _remove(tree: dict[str, Any], key: tuple[str, ...]) -> None:
    node: Any = tree
    for part in key[:-1]:
        if not isinstance(node, dict) or part not in node:
            return
        node = node[part]
    if isinstance(node, dict):
        node.pop(key[-1], None)


def _install_templates(workspace: Path, section: Section) -> None:
    from picoora.templates import install_workspace

    created = [r.path for r in install_workspace(workspace) if r.outcome == "created"]
    if created:
        section.done("picoora's templates", ", ".join(created))


def _builtin_skills() -> Path:
    from picoora.skills.catalog import BUILTIN_DIR

    return BUILTIN_DIR
