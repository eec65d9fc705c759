"""The interactive ``picoora agent`` session: prompt_toolkit line editing, history, slash commands.

Ctrl+C while a turn runs cancels that turn (the REPL stays); at the prompt it clears the line.
Ctrl+D, ``exit`` or ``quit`` leave.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from picoora.assistant import Assistant
    from picoora.config import Config
    from picoora.llm.pool import ModelChoice
    from picoora.session_models import SessionModel

HELP = """\
Commands:
  /help            show this help
  /new             start the current session afresh (its history is cleared; memories and
                   its model stay)
  /session [KEY]   show the session, or switch to KEY
  /model [NAME]    show the model and where it comes from, or use NAME for this session
                   from now on (kept across restarts, whatever the config says)
  /model default   go back to the configured default model
  exit, quit       leave (or press Ctrl+D)
Ctrl+C cancels a running answer."""

PROMPT = "you> "
DEFAULT_MODEL = "default"  # /model default: the session's choice is taken back


@dataclass
class ReplState:
    assistant: Assistant
    session: str
    stream: bool


async def run_repl(config: Config, session: str, stream: bool, *, config_path: Path | None = None,
                   pt_input: Any = None, pt_output: Any = None) -> None:
    """Run the REPL until the user leaves. ``pt_input``/``pt_output`` let tests drive prompt_toolkit."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory

    from picoora.cli.opening import open_assistant
    from picoora.config import picoora_home
    from picoora.llm.pool import ModelChoice

    history_file = picoora_home() / "history"
    history_file.parent.mkdir(parents=True, exist_ok=True)
    history_file.touch(mode=0o600, exist_ok=True)  # what people type is as private as the transcripts
    prompt: PromptSession[str] = PromptSession(history=FileHistory(str(history_file)), input=pt_input, output=pt_output)
    async with open_assistant(config, config_path) as assistant:
        state = ReplState(assistant, session, stream)
        described = await assistant.model_source(session)
        print(f"picoora: model {described.model} ({described.provider}, {_short_source(described)}), session "
              f"{session}. /help for commands, Ctrl+D to leave.")
        if described.source == "session":
            print(_default_note(described))
        await _say_if_unusable(assistant, ModelChoice(described.provider, described.model))
        await _show_arrived(assistant, session)
        while True:
            try:
                line = (await prompt.prompt_async(PROMPT)).strip()
            except KeyboardInterrupt:
                continue
            except EOFError:
                break
            if line in ("exit", "quit", "/exit", "/quit"):
                break
            if line.startswith("/"):
                await handle_command(state, line)
            elif line:
                await run_cancellable_turn(state, line)


async def _say_if_unusable(assistant: Assistant, choice: ModelChoice) -> None:
    """One line under the banner when the model cannot answer now (Ollama down, model not pulled). A check
    that only timed out or met a busy server says nothing: the chat waits longer and retries, and a
    warning followed by an answer teaches people to ignore the warnings."""
    from picoora.llm.base import LLMError, RetryableError

    try:
        await assistant.check_model(choice)
    except RetryableError:
        return
    except LLMError as err:
        print(f"Note: the first message will fail: {err}", file=sys.stderr)


async def _show_arrived(assistant: Assistant, session: str) -> None:
    """What scheduled jobs and the heartbeat delivered to this terminal chat while nobody was watching."""
    arrived = await assistant.arrived(session)
    if arrived:
        print(f"While you were away ({len(arrived)}):")
        for entry in arrived:
            print(f"  {entry.message.content}")


async def handle_command(state: ReplState, line: str) -> None:
    from picoora.llm.base import LLMError
    from picoora.store.base import StoreError

    name, _, arg = line.partition(" ")
    arg = arg.strip()
    if name in ("/show", "/list", "/switch"):  # PicoOraClaw's (Go) forms: /show model, /switch model to NAME
        from picoora.gateway.runtime.commands import parse_command

        about_channels = _go_channel_command(state, line)
        if about_channels is not None:
            print(about_channels)
            return

        go = parse_command(line)
        name, arg = ("/model", go[1]) if go is not None and go[0] == "model" else ("/help", "")
    assistant = state.assistant
    if name == "/help":
        print(HELP)
    elif name == "/new":
        await assistant.new_session(state.session)
        print(f"Session {state.session} starts afresh.")
    elif name == "/session":
        if arg:
            state.session = arg
        print(f"Session: {state.session}")
    elif name == "/model":
        try:
            if arg == DEFAULT_MODEL:
                await assistant.reset_session_model(state.session)
            elif arg:
                await assistant.set_session_model(state.session, arg)
        except (LLMError, StoreError) as err:  # the line below says what is in use now
            print(f"Error: {err}", file=sys.stderr)
        described = await assistant.model_source(state.session)
        print(f"Model: {described.model} ({described.provider}), {_short_source(described)}.")
        if described.source == "session":
            print(_default_note(described))
    else:
        print(f"Unknown command {name}: type /help for the list.", file=sys.stderr)


def _go_channel_command(state: ReplState, line: str) -> str | None:
    """The answer to the Go version's /show channel, /list channels and /switch channel in the terminal."""
    words = line.lower().split()[:2]
    if words == ["/show", "channel"]:
        return f"Current channel: cli (this terminal, session {state.session})"
    if words == ["/list", "channels"]:
        from picoora.gateway.channels import CHANNELS

        channels = state.assistant.config.channels
        enabled = [name for name in CHANNELS if getattr(channels, name).enabled]
        if not enabled:
            return "No channels enabled (set channels.<name>.enabled in the config; `picoora gateway` serves them)"
        return f"Enabled channels: {', '.join(enabled)} (`picoora gateway` serves them)"
    if words == ["/switch", "channel"]:
        return ("This terminal chat stays on cli: a message on a channel is answered there, by `picoora gateway`; "
                "/session KEY switches this terminal's session")
    return None


def _short_source(described: SessionModel) -> str:
    if described.source == "session":
        return "chosen for this session with /model"
    return f"the default, {described.default_why()}"


def _default_note(described: SessionModel) -> str:
    return (f"The default model is {described.default_model} ({described.default_provider}, "
            f"{described.default_why()}): /model {DEFAULT_MODEL} goes back to it.")


async def run_cancellable_turn(state: ReplState, text: str) -> None:
    """One turn; SIGINT (Ctrl+C) cancels it instead of ending the REPL."""
    from picoora.cli.turns import run_terminal_turn

    await run_terminal_turn(state.assistant, text, state.session, state.stream)
    print()
