"""The agent loop: ``Agent.run_turn`` runs one user message to an answer, emitting typed events.

    agent = Agent(store=store, llm=llm, tools=registry, settings=config.agents.defaults, workspace=ws)
    result = await agent.run_turn("cli:default", "What did I say my favourite language was?")

``Agent`` and ``TurnResult`` load on first use, so importing ``picoora.agent.events`` (the CLI's
renderer does) stays cheap for ``picoora --help``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from picoora.agent.loop import Agent, TurnResult

__all__ = ["Agent", "TurnResult"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from picoora.agent import loop

        return getattr(loop, name)
    raise AttributeError(f"module 'picoora.agent' has no attribute {name!r}")
