"""Predictable failures end the command with one clear line and an exit code, never a traceback."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from picoora.secrets import redact_dsn, scrub

if TYPE_CHECKING:
    from picoora.config import Config

EXIT_FAILURE = 1
EXIT_USAGE = 2  # bad config or bad arguments, as click uses for usage errors
EXIT_CANNOT_WRITE = 73  # sysexits' EX_CANTCREAT: a folder picoora must write to is read-only or missing


class CLIError(Exception):
    """A failure the user can act on; ``str(err)`` says what failed and what to run."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILURE):
        super().__init__(message)
        self.exit_code = exit_code


# Secret values of the config this command loaded: every line printed here is scrubbed of them
# (a driver's error can quote a DSN or a key back).
_known_secrets: list[str] = []


def shown(text: str) -> str:
    """``text`` fit to print: DSN passwords and the loaded config's secrets hidden."""
    return scrub(redact_dsn(text), _known_secrets)


def report(err: CLIError) -> int:
    """Print the failure for people; returns the exit code to end with."""
    print(shown(f"Error: {err}"), file=sys.stderr)
    return err.exit_code


def warn(text: str) -> None:
    """One line the user should see that is not a failure (storage fell back to files, ...)."""
    print(shown(text), file=sys.stderr)


def config_path(ctx: typer.Context) -> Path | None:
    """The ``--config`` given to the root command, if any."""
    root = ctx.find_root()
    return (root.obj or {}).get("config_path")


def load_config(ctx: typer.Context) -> Config:
    """Load the config the user pointed at; a bad file becomes a CLIError with exit code 2."""
    from picoora.config import ConfigError, env_override_warnings, go_env_notices, secret_values
    from picoora.config import load_config as _load

    path = config_path(ctx)
    if path is not None and not path.expanduser().exists():  # a typo in --config must not mean "all defaults"
        raise CLIError(f"the config file {path} does not exist: check the path, or create it with "
                       f"`picoora --config {path} onboard`", EXIT_USAGE)
    try:
        config = _load(path)
    except ConfigError as err:
        raise CLIError(str(err), EXIT_USAGE) from None
    _known_secrets[:] = secret_values(config)
    for line in env_override_warnings() + go_env_notices():
        warn(line)
    return config
