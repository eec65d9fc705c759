"""The ``picoora`` command: a typer app that only parses, calls the library and renders.

Start-up time matters (``picoora --help`` must stay well under 0.15 s), so this module imports
typer and nothing else heavy. Each command module exposes ``register(app)`` and imports what its
command needs inside the command function. Help is plain click help (``rich_markup_mode=None``):
typer's rich help alone costs ~90 ms of imports.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NoReturn

import typer

from picoora.cli import (
    agent_cmd,
    cron_cmd,
    docs_cmd,
    gateway_cmd,
    mcp_cmd,
    memory_cmd,
    migrate_cmd,
    onboard,
    oracle_cmds,
    pair_cmd,
    skills_cmd,
    status,
    token_cmd,
    trace_cmd,
    version_cmd,
)
from picoora.cli.errors import EXIT_FAILURE, CLIError, report


def _print_version(ctx: typer.Context, value: bool) -> None:
    if value:
        # eager: runs before --config is parsed when -V comes first, so read it from the raw arguments
        typer.echo("\n".join(version_cmd.version_lines(_config_argument(ctx))))
        raise typer.Exit()


def _config_argument(ctx: typer.Context) -> Path | None:
    given = ctx.params.get("config")
    if given is None:
        args = sys.argv[1:]
        for flag in ("--config", "-c"):
            if flag in args[:-1]:
                given = args[args.index(flag) + 1]
    return Path(given) if given else None


def _root(
    ctx: typer.Context,
    config: Path | None = typer.Option(
        None,
        "--config",
        "-c",
        metavar="PATH",
        help="Config file to use (default: $PICOORA_HOME/config.json, PICOORA_HOME defaults to ~/.picoora).",
    ),
    version: bool = typer.Option(
        False, "--version", "-V", "-v", callback=_print_version, is_eager=True,
        help="Print the versions (picoora, Python, provider libraries) and the backend, and exit.",
    ),
) -> None:
    """picoora: a small, local-first assistant that remembers by meaning."""
    ctx.obj = {"config_path": config}


def build_app() -> typer.Typer:
    app = typer.Typer(
        name="picoora",
        rich_markup_mode=None,
        pretty_exceptions_enable=False,
        add_completion=False,
        no_args_is_help=True,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(_root)
    commands = (onboard, agent_cmd, gateway_cmd, memory_cmd, docs_cmd, status, oracle_cmds, trace_cmd, cron_cmd,
                pair_cmd, skills_cmd, mcp_cmd, token_cmd, migrate_cmd, version_cmd)
    for module in commands:
        module.register(app)
    return app


def main() -> None:
    # httpx imports its own command-line tool whenever click, rich and pygments are installed (typer
    # brings them): ~50 ms and 6 MB on every run that talks to a model, for a tool picoora never runs.
    # A None entry makes that optional import fail exactly as it does when they are missing.
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
    try:
        build_app()(prog_name="picoora")
        code: int | str | None = 0
    except CLIError as err:
        code = report(err)
    except SystemExit as done:  # typer ends every command this way
        code = done.code
    exit_now(code)


def exit_now(code: int | str | None) -> NoReturn:
    """End the process without the interpreter's teardown.

    Every command has closed its store and clients and flushed its files by now (writes are atomic
    and fsynced). What is left is tearing down ~600 modules, numpy and the ``ollama`` module's
    import-time HTTP client: 0.05-0.1 s of a 0.6 s one-shot turn (measured), for nothing.
    """
    if isinstance(code, str):  # SystemExit("message") means: print it, fail
        print(code, file=sys.stderr)
        code = EXIT_FAILURE
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader that went away (`picoora memory list | head -1`)
            pass
    if "logging" in sys.modules:
        sys.modules["logging"].shutdown()
    os._exit(code or 0)
