"""Opening the assistant or the store for a command: start-up failures become one line (``CLIError``),
not a traceback."""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

from picoora.cli.errors import EXIT_USAGE, CLIError, warn

if TYPE_CHECKING:
    from pathlib import Path

    from picoora.assistant import Assistant
    from picoora.config import Config
    from picoora.store.base import Store


def open_assistant(config: Config, path: Path | None = None) -> Assistant:
    """Build the assistant (``path``: the --config file, kept out of the tools' reach)."""
    from picoora.assistant import build_assistant
    from picoora.llm.base import LLMError
    from picoora.store.base import StoreError
    from picoora.store.fs_errors import UnusableWorkspace

    import sys

    from picoora.messengers import TerminalMessenger, enable_messaging

    try:
        assistant = build_assistant(config, config_path=path, on_fallback=warn)
    except UnusableWorkspace as err:  # a setting to change, like any other bad config
        raise CLIError(str(err), EXIT_USAGE) from None
    except (StoreError, LLMError) as err:
        raise CLIError(str(err)) from None
    enable_messaging(assistant, TerminalMessenger(assistant, sys.stdout))
    return assistant


@contextmanager
def command_store(config: Config) -> Iterator[Store]:
    """The configured store for a command that needs no model; store failures become one line."""
    from picoora.store import open_store
    from picoora.store.base import StoreError
    from picoora.store.fs_errors import UnusableWorkspace

    try:
        store = open_store(config, on_fallback=warn)
    except UnusableWorkspace as err:
        raise CLIError(str(err), EXIT_USAGE) from None
    except StoreError as err:
        raise CLIError(str(err)) from None
    try:
        yield store
    except StoreError as err:
        raise CLIError(str(err)) from None
    finally:
        store.close()
