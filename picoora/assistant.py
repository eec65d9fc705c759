"""The library's front door: one call builds a ready assistant from a config.

    from picoora.assistant import build_assistant
    from picoora.config import load_config

    async def main():
        async with build_assistant(load_config()) as assistant:
            result = await assistant.ask("What programming language do I prefer?")
            print(result.text)

``build_assistant`` opens the store, the LLM client, the tool registry and the agent loop; closing
the assistant closes them again. The CLI and the gateway are thin layers over this.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from picoora.agent import Agent, TurnResult
    from picoora.agent.events import EventSink
    from picoora.config import Config
    from picoora.llm.base import LLM
    from picoora.store.base import Store
    from picoora.tools.registry import ToolRegistry

DEFAULT_SESSION = "cli:default"


@dataclass
class Assistant:
    config: Config
    workspace: Path
    store: Store
    llm: LLM
    tools: ToolRegistry
    agent: Agent

    async def ask(self, text: str, session_key: str = DEFAULT_SESSION, on_event: EventSink | None = None) -> TurnResult:
        """Run one turn: the user's ``text`` in, the assistant's answer (and how the turn ended) out."""
        return await self.agent.run_turn(session_key, text, on_event)

    @property
    def model(self) -> str:
        return self.config.agents.defaults.model

    async def switch_model(self, model: str) -> None:
        """Use another model of the same provider from now on (the config file is not changed)."""
        from picoora.llm import create_llm

        config = self.config.model_copy(deep=True)
        config.agents.defaults.model = model
        llm = create_llm(config)
        # Swap the client inside the same Agent: a new Agent would have new per-session locks, letting a
        # turn on the new model overlap one still running on the old.
        old, self.llm, self.config = self.llm, llm, config
        self.agent.llm = llm
        await old.close()

    async def aclose(self) -> None:
        try:
            await self.llm.close()
        finally:
            self.store.close()

    async def __aenter__(self) -> Assistant:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def build_assistant(config: Config, *, config_path: Path | None = None,
                    on_fallback: Callable[[str], None] | None = None) -> Assistant:
    """Open everything an assistant needs. Raises StoreError or LLMError (with a message for people);
    creating the provider never touches the network, so Ollama being down shows on the first turn.
    ``on_fallback`` gets one line when the configured storage (Oracle) cannot be used and files serve instead.
    ``config_path`` is the file the config came from, which the tools then refuse to read or write."""
    from picoora.config import workspace_path
    from picoora.llm import create_llm
    from picoora.store import open_store
    from picoora.tools import default_registry

    workspace = workspace_path(config)
    store = open_store(config, on_fallback=on_fallback)
    try:
        llm = create_llm(config)
        tools = default_registry(config)
        agent = _make_agent(config, workspace, store, llm, tools, config_path)
    except BaseException:
        store.close()
        raise
    return Assistant(config=config, workspace=workspace, store=store, llm=llm, tools=tools, agent=agent)


def _make_agent(config: Config, workspace: Path, store: Store, llm: LLM, tools: ToolRegistry,
                config_path: Path | None = None) -> Agent:
    from picoora.agent import Agent
    from picoora.config import secret_values
    from picoora.tools.registry import tool_settings

    return Agent(
        store=store,
        llm=llm,
        tools=tools,
        settings=config.agents.defaults,
        workspace=workspace,
        secrets=secret_values(config),
        tool_settings=tool_settings(config, config_path=config_path),
    )

