"""The ``picoora`` command: a typer app that only parses, calls the library and renders.

Start-up time matters (``picoora --help`` must stay well under 0.15 s), so this module imports
typer and nothing else heavy. Each command module exposes ``register(app)`` and imports what its
command needs inside the command function. Help is plain click help (``rich_markup_mode=None``):
typer's rich help alone costs ~90 ms of imports.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from picoora.cli import agent_cmd, memory_cmd, onboard, status
from picoora.cli.errors import CLIError, report_and_exit


def _print_version(value: bool) -> None:
    if value:
        from picoora import __version__

        typer.echo(f"picoora {__version__}")
        raise typer.Exit()


def _root(
    ctx: typer.Context,
    config: Optional[Path] = typer.Option(
        None,
        "--config",
        "-c",
        metavar="PATH",
        help="Config file to use (default: $PICOORA_HOME/config.json, PICOORA_HOME defaults to ~/.picoora).",
    ),
    version: bool = typer.Option(
        False, "--version", "-V", callback=_print_version, is_eager=True, help="Print the version and exit."
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
    for module in (onboard, agent_cmd, memory_cmd, status):
        module.register(app)
    return app


def main() -> None:
    try:
        build_app()(prog_name="picoora")
    except CLIError as err:  # raised outside a command's own handling (e.g. while loading config)
        report_and_exit(err)
