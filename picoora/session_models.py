"""Which model a session answers with, and why.

A session answers with the model it chose (``/model`` in the REPL, ``PUT /v1/sessions/{key}/model``), kept in
its state under ``session_model:<session>`` as JSON ``[provider, model]`` so the choice survives restarts.
A session that never chose, or went back with ``/model default``, answers with the config's default:
``agents.defaults.provider`` and ``model`` from the config file, or from a ``PICO_`` variable over it. A
stored ``""`` is no choice: stores written by versions that could not delete a state key hold it for "went back".

Light on purpose (no asyncio, no provider module): ``picoora status`` reads a session's choice with it
without building an assistant, and the assistant describes its sessions with it, so the two say the same.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from picoora.config import Config

MODEL_STATE = "session_model:"  # state key prefix: a session's chosen model survives restarts

Source = Literal["session", "env", "config"]


def state_key(session_key: str) -> str:
    return MODEL_STATE + session_key


def encode_choice(provider: str, model: str) -> str:
    return json.dumps([provider, model])


def parse_choice(stored: str | None) -> tuple[str, str] | None:
    """A stored choice as ``(provider, model)``; None for no choice (nothing, ``""``, or unreadable)."""
    if not stored:
        return None
    try:
        provider, model = json.loads(stored)
    except (ValueError, TypeError):
        return None
    return (str(provider), str(model)) if provider and model else None


@dataclass(frozen=True)
class SessionModel:
    """The model a session answers with, where that comes from, and what the default would be."""

    session_key: str
    provider: str
    model: str
    source: Source  # "session": chosen for it; "env": the default, set by a PICO_ variable; "config": the default
    default_provider: str
    default_model: str
    default_source: Source  # "env" or "config"
    env_vars: tuple[str, ...] = ()  # the PICO_ variables that set the default

    @property
    def label(self) -> str:
        return f"{self.provider}/{self.model}"

    @property
    def default_label(self) -> str:
        return f"{self.default_provider}/{self.default_model}"

    def why(self) -> str:
        """Why the session answers with this model, for people."""
        if self.source != "session":
            return self.default_why()
        same = ", the default too" if self.label == self.default_label else ""
        return (f"chosen for session {self.session_key} with /model{same}; the default is {self.default_label} "
                f"({self.default_why()}), and `/model default` goes back to it")

    def default_why(self) -> str:
        if self.default_source == "env":
            return f"set by {' and '.join(self.env_vars)} over the config file"
        return "from the config file"

    def to_dict(self) -> dict[str, Any]:
        return {
            "session": self.session_key, "provider": self.provider, "model": self.model, "source": self.source,
            "default": {"provider": self.default_provider, "model": self.default_model, "source": self.default_source,
                        "env": list(self.env_vars)},
        }


def describe(config: Config, session_key: str, stored: str | None,
             used: tuple[str, str] | None = None) -> SessionModel:
    """The session's model and its source, from its stored choice (``stored``: the state value).

    ``used`` is what the session's runtime really answers with, when the caller has one (an assistant
    falls back to the default when a stored choice's provider cannot be set up); without it, the stored
    choice answers when its provider is one picoora knows, else the default."""
    from picoora.config import env_override
    from picoora.llm import PROVIDERS

    defaults = config.agents.defaults
    default = (defaults.provider, defaults.model)
    env_vars = tuple(name for name in (env_override(config, "agents", "defaults", "provider"),
                                       env_override(config, "agents", "defaults", "model")) if name)
    default_source: Source = "env" if env_vars else "config"
    chosen = parse_choice(stored)
    if used is None:
        used = chosen if chosen is not None and chosen[0] in PROVIDERS else default
    # A choice equal to the default is still the session's: it stays when the config changes.
    source: Source = "session" if used == chosen or used != default else default_source
    return SessionModel(session_key, used[0], used[1], source, default[0], default[1], default_source, env_vars)
