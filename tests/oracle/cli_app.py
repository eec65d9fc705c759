"""Running the Oracle commands in-process, the way ``picoora.cli.app.main`` runs them."""

from __future__ import annotations

import typer
from typer.testing import CliRunner

from picoora.cli import oracle_cmds
from picoora.cli.errors import CLIError


def app() -> typer.Typer:
    """The Oracle commands under a root that sets ``ctx.obj`` as ``picoora.cli.app`` does."""
    cli = typer.Typer(rich_markup_mode=None, pretty_exceptions_enable=False)

    @cli.callback()
    def root(ctx: typer.Context) -> None:
        ctx.obj = {"config_path": None}

    oracle_cmds.register(cli)
    return cli


def picoora(*args: str) -> tuple[int, str]:
    """Run a command as ``picoora.cli.app.main`` does: exit code and everything printed."""
    result = CliRunner().invoke(app(), list(args))
    if isinstance(result.exception, CLIError):
        return result.exception.exit_code, result.output + f"Error: {result.exception}\n"
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output
