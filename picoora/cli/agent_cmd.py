"""``picoora agent``: one message (``-m`` or stdin) or an interactive REPL."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import typer

from picoora.assistant import DEFAULT_SESSION  # a light module: it imports its heavy parts when building
from picoora.cli.errors import EXIT_USAGE, CLIError, config_path, load_config

if TYPE_CHECKING:
    from pathlib import Path

    from picoora.config import Config

EXIT_INTERRUPTED = 130  # the shell's convention for a command ended by Ctrl+C


def register(app: typer.Typer) -> None:
    app.command("agent")(agent)


def agent(
    ctx: typer.Context,
    message: str | None = typer.Option(None, "-m", "--message", help="Send one message, print the answer and exit."),
    session: str = typer.Option(DEFAULT_SESSION, "-s", "--session", help="Conversation to continue."),
    stream: bool | None = typer.Option(
        None, "--stream/--no-stream", help="Show the answer as it is written. Default: on when stdout is a terminal."
    ),
    debug: bool = typer.Option(False, "-d", "--debug", help="picoora's debug log on stderr (PicoOraClaw's flag); "
                                                           "`picoora trace last` shows a turn step by step."),
) -> None:
    """Chat with the assistant: one message with -m (or piped on stdin), else an interactive session.

    Exit status: 0 when the assistant answered, 1 when the turn stopped without an answer
    (model unreachable, a limit reached, ...), 2 for a bad config or bad arguments, 130 when
    interrupted with Ctrl+C (the turn so far is kept).
    """
    import asyncio

    if not session.strip():
        raise CLIError("the session name is empty: pass -s KEY (or leave -s out for the default session)", EXIT_USAGE)
    config = load_config(ctx)
    if debug:
        _debug_log(config, session)
    if stream is None:
        stream = sys.stdout.isatty()
    if message is None and not sys.stdin.isatty():
        message = sys.stdin.read()
    if message is not None:
        message = message.strip()
        if not message:
            raise CLIError("no message: pass one with -m TEXT or on stdin", EXIT_USAGE)
        raise typer.Exit(asyncio.run(_one_shot(config, message, session, stream, config_path(ctx))))
    from picoora.cli.repl import run_repl

    asyncio.run(run_repl(config, session, stream, config_path=config_path(ctx)))


def _debug_log(config: Config, session: str) -> None:
    import logging

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger = logging.getLogger("picoora")  # picoora's own log only: the HTTP libraries' debug output shows headers
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    defaults = config.agents.defaults
    logger.debug("agent: session %s, %s/%s, workspace %s", session, defaults.provider, defaults.model,
                 defaults.workspace or "(default)")


async def _one_shot(config: Config, text: str, session: str, stream: bool, path: Path | None) -> int:
    from picoora.cli.opening import open_assistant
    from picoora.cli.turns import run_terminal_turn

    async with open_assistant(config, path) as assistant:
        result = await run_terminal_turn(assistant, text, session, stream)
    if result is None:
        return EXIT_INTERRUPTED
    return 0 if result.stop_reason == "answer" else 1
