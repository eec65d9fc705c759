"""Opening the assistant or the store for a command: start-up failures become one line (``CLIError``),
not a traceback."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from picoora.cli.errors import EXIT_USAGE, CLIError, warn

if TYPE_CHECKING:
    from pathlib import Path

    from picoora.assistant import Assistant
    from picoora.config import Config
    from picoora.store.protocol import Store


def open_assistant(config: Config, path: Path | None = None) -> Assistant:
    """Build the assistant (``path``: the --config file, kept out of the tools' reach)."""
    from picoora.assistant import build_assistant
    from picoora.cli.messenger import TerminalMessenger
    from picoora.llm.base import LLMError

    if config.tools.mcp_servers:
        from picoora.tools.mcp_client import quiet_failures_told_elsewhere

        quiet_failures_told_elsewhere()  # a turn's notice says it on this screen already
    with _opening_errors(LLMError):
        assistant = build_assistant(config, config_path=path, on_fallback=warn)
    assistant.enable_messaging(TerminalMessenger(assistant, sys.stdout))
    return assistant


@contextmanager
def command_store(config: Config) -> Iterator[Store]:
    """The configured store for a command that needs no model; store failures become one line."""
    from picoora.store import open_store
    from picoora.store.base import StoreError

    with _opening_errors():
        store = open_store(config, on_fallback=warn)
    try:
        yield store
    except StoreError as err:
        raise CLIError(str(err)) from None
    finally:
        store.close()


@contextmanager
def _opening_errors(*also: type[BaseException]) -> Iterator[None]:
    """A store (or ``also``) failure while opening as one line; an unusable workspace is a setting to change."""
    from picoora.store.base import StoreError
    from picoora.store.fs_errors import UnusableWorkspace

    caught: tuple[type[BaseException], ...] = (StoreError, *also)
    try:
        yield
    except UnusableWorkspace as err:
        raise CLIError(str(err), EXIT_USAGE) from None
    except caught as err:
        raise CLIError(str(err)) from None
