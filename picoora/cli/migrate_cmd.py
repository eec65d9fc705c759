"""``picoora migrate [--from DIR] [--dry-run] [--force]``: a PicoOraClaw (Go) home into picoora."""

from __future__ import annotations

from pathlib import Path

import typer

from picoora.cli.errors import EXIT_USAGE, CLIError, config_path


def register(app: typer.Typer) -> None:
    app.command("migrate")(migrate)


def migrate(
    ctx: typer.Context,
    source: Path | None = typer.Option(None, "--from", metavar="DIR",
                                       help="The Go home (default: ~/.picooraclaw, else ~/.picoclaw)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show what would be migrated; write nothing."),
    force: bool = typer.Option(False, "--force", help="Replace what picoora already has (keeping .bak copies)."),
) -> None:
    """Bring a PicoOraClaw home over: config, prompts, skills, sessions, notes, memories and cron jobs.

    Safe to run again: what was migrated is skipped, and nothing of picoora's is replaced without --force."""
    from picoora.cli.errors import shown
    from picoora.cli.opening import command_store
    from picoora.config import ConfigError, default_config_path
    from picoora.migrate import find_go_home, migrate_home

    home = source.expanduser() if source is not None else find_go_home()
    if home is None:
        raise CLIError("no PicoOraClaw home found (~/.picooraclaw or ~/.picoclaw): give one with --from DIR",
                       EXIT_USAGE)
    if not home.is_dir():
        raise CLIError(f"{home} is not a folder: give the Go home (the folder with config.json and workspace/)",
                       EXIT_USAGE)
    target = config_path(ctx) or default_config_path()
    try:
        report = migrate_home(home, config_path=target, open_store=command_store, dry_run=dry_run, force=force)
    except ConfigError as err:
        raise CLIError(f"{err}\nFix picoora's config first (or replace it: picoora migrate --force).",
                       EXIT_USAGE) from None
    except OSError as err:
        raise CLIError(f"cannot write {err.filename or 'a file'}: {err.strerror or err}") from None
    print(shown("\n".join(report.lines())))
    if dry_run:
        print("Run again without --dry-run to migrate.")
    else:
        print("Next: picoora status, then picoora agent. Running picoora migrate again only brings what changed.")
