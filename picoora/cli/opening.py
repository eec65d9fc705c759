"""Opening the assistant for a command: start-up failures become one line (``CLIError``), not a traceback."""

from __future__ import annotations

from typing import TYPE_CHECKING

from picoora.cli.errors import CLIError, warn

if TYPE_CHECKING:
    from pathlib import Path

    from picoora.assistant import Assistant
    from picoora.config import Config


def open_assistant(config: Config, path: Path | None = None) -> Assistant:
    """Build the assistant (``path``: the --config file, kept out of the tools' reach)."""
    from picoora.assistant import build_assistant
    from picoora.llm.base import LLMError
    from picoora.store.base import StoreError

    try:
        return build_assistant(config, config_path=path, on_fallback=warn)
    except (StoreError, LLMError) as err:
        raise CLIError(str(err)) from None
