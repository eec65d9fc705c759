"""Chat commands, the same on every channel: ``/new``, ``/model [name]``, ``/help``, ``/whoami``, ``/stop``.

A message whose first word is one of these (``/new@my_bot`` too, as Telegram writes it in groups) never
reaches the model. ``/stop`` acts at once (``TurnService.stop``); the others run in the session's order,
after the turns sent before them, on the sender's own assistant (``GatewayRuntime._run``), and their reply
goes back to the chat as an answer does. A slash-word that is not a command goes to the model as text.
The names and what they do (``COMMANDS``) are in the channels' vocabulary, since channels offer them in
their platform's menu.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from picoora.gateway.channels.links import COMMANDS
from picoora.llm.base import LLMError

if TYPE_CHECKING:
    from picoora.assistant import Assistant
    from picoora.gateway.channels.links import Inbound

_COMMAND = re.compile(r"^/([A-Za-z_]{1,32})(?:@\w+)?(?:\s+(.*))?$", re.DOTALL)
# PicoOraClaw's (Go) chat commands, as its users type them: (command, target) -> picoora's command.
# Go's /switch model changed the model for every chat; here it is this chat's, as /model is.
GO_COMMANDS = {("show", "model"): "model", ("list", "models"): "model", ("switch", "model"): "model",
               ("show", "channel"): "whoami"}
_GO_SWITCH = re.compile(r"^model\s+to\s+(\S.*)$", re.IGNORECASE | re.DOTALL)


def parse_command(text: str) -> tuple[str, str] | None:
    """(command, argument) when ``text`` is one of ``COMMANDS`` or a Go command (``GO_COMMANDS``; its other
    forms get the help), else None."""
    match = _COMMAND.match(text.strip())
    if match is None:
        return None
    name, argument = match.group(1).lower(), (match.group(2) or "").strip()
    if name in COMMANDS:
        return name, argument
    if name not in {go for go, _ in GO_COMMANDS}:
        return None
    if name == "switch":
        switch = _GO_SWITCH.match(argument)
        return ("model", switch.group(1).strip()) if switch else ("help", "")
    return GO_COMMANDS.get((name, argument.lower()), "help"), ""


def help_text() -> str:
    return ("Commands:\n" + "\n".join(f"/{name}: {what}" for name, what in COMMANDS.items())
            + "\nFrom PicoOraClaw: /show model, /list models, /switch model to NAME (this chat's), /show channel")


async def run_command(assistant: Assistant, inbound: Inbound, command: str, argument: str) -> str:
    """The reply to a command other than ``/stop``."""
    if command == "new":
        await assistant.new_session(inbound.session)
        return "Started a new conversation. Your memories stay; ask me what I remember about you."
    if command == "model":
        return await _model(assistant, inbound, argument)
    if command == "whoami":
        await assistant.tools.refresh()  # what a turn would offer now (search_docs looks for documents)
        return _whoami(assistant, inbound)
    return help_text()


async def _model(assistant: Assistant, inbound: Inbound, name: str) -> str:
    if not name:
        current = await assistant.model_source(inbound.session)
        return f"This chat answers with {current.provider}/{current.model} ({current.source}). Switch: /model NAME"
    if inbound.person is not None and not inbound.person.owner:
        return "Only the owner can switch the model."
    provider, _, model = name.partition("/") if "/" in name else ("", "", name)
    try:
        choice = await assistant.set_session_model(inbound.session, model, provider or None)
    except LLMError as exc:
        return f"I kept the model as it was: {exc}"
    return f"This chat now answers with {choice.label}."


def _whoami(assistant: Assistant, inbound: Inbound) -> str:
    person = inbound.person
    identity = f"{inbound.channel}:{inbound.sender_id}"
    tools = ", ".join(sorted(assistant.tools.names())) or "none"
    if person is None or person.owner:
        who = f"You are the owner ({identity}): your memories are the assistant's own."
    elif person.name.startswith("guest-"):
        who = f"You are a guest ({identity}, as {person.name}): your memories and conversations are yours alone."
    else:
        who = f"You are {person.name} ({identity}): your memories and conversations are yours alone."
    return f"{who}\nTools I may use for you: {tools}."
