"""The trace of one scripted turn, checked the same way on every backend (files and Oracle)."""

from __future__ import annotations

import asyncio
from typing import Any

from picoora.agent.loop import Agent
from picoora.config import AgentDefaults
from picoora.store.protocol import Store
from tests.fakes.agent_kit import memory_registry
from tests.fakes.scripted_llm import ScriptedLLM, answer, calls

SECRET = "pico-test-secret-0123456789"
FACT = "The user's dentist is Dr. Alvarez on Rua Augusta"


def run_traced_turn(store: Store, workspace: Any) -> str:
    """Store a fact, then a turn that recalls it automatically and calls ``recall`` with a secret in its
    arguments (which the registry refuses); returns the turn id."""
    store.memories.add(FACT, importance=0.8)
    llm = ScriptedLLM(calls(("recall", {"query": f"Alvarez dentist {SECRET}"})), answer("Dr. Alvarez."))
    agent = Agent(store=store, llm=llm, tools=memory_registry(), settings=AgentDefaults(), workspace=workspace,
                  secrets=[SECRET])
    result = asyncio.run(agent.run_turn("web:trace", "Who is my dentist on Rua Augusta?", on_event=lambda e: None))
    assert result.stop_reason == "answer"
    return result.turn_id


def check_trace(data: dict[str, Any], turn_id: str) -> None:
    assert data["turn_id"] == turn_id and data["session_key"] == "web:trace"
    assert (data["provider"], data["model"]) == ("scripted", "scripted-model")
    assert data["model_calls"] == 2 and data["stop_reason"] == "answer" and data["error"] is None
    assert data["latency_ms"] > 0 and data["first_token_ms"] is not None
    assert {"prompt_tokens", "completion_tokens", "started_at"} <= set(data)
    assert any(FACT in m["content"] and m["score"] > 0 for m in data["recalled"])
    [call] = data["tool_calls"]
    assert call["name"] == "recall" and call["ok"] is False and call["duration_ms"] >= 0
    assert call["arguments"]["query"].startswith("Alvarez dentist ")
    assert "hold a secret" in call["result_preview"]
    assert SECRET not in repr(data)  # scrubbed before it was kept
