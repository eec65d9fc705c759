"""The fixed part of every turn: the system prompt and the tool schemas, in characters and estimated tokens.

Characters are the system prompt's plus the schemas' JSON (``json.dumps``, as the providers send them);
tokens are ``picoora.agent.tokens``'s estimate (the one compaction uses). Measured on an empty session, no
recalled memories, no daily notes and no workspace prompt files (those are the user's), for: the core
tools alone (no skills, no web_search, no MCP), the defaults (the core tools, the built-in skills and
web_search), the owner in the gateway or the terminal (the defaults and the messaging tools: every
default tool), the same on a turn with a kept tool output to read (``read_tool_output`` is offered only then),
a guest, and the owner's tools plus one MCP server with 5 tools (the test-suite's server).
The budget for "every default tool" is 9,500 characters (``BUDGET``; tests/test_prompt_budget.py holds it).

    .venv/bin/python bench/prompt_budget.py [--show]    # --show prints each system prompt
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
TEST_SERVER = REPO / "tests" / "fakes" / "mcp_test_server.py"
BUDGET = 9_500  # characters of the fixed prompt with every default tool (issue 22)


async def fixed_prompt(overrides: dict, *, messaging: bool = False, guest: bool = False,
                       on_demand: bool = False) -> tuple[int, str, str]:
    """(tools offered, the system prompt, the schemas' JSON) of an empty turn in this configuration."""
    from picoora.agent.context import ContextInputs, build_system_prompt
    from picoora.config import Config, workspace_path
    from picoora.store.base import Session
    from picoora.tools import default_registry, guest_registry
    from picoora.tools.messaging import MESSAGING_TOOLS

    config = Config.model_validate(overrides)
    registry = guest_registry(config) if guest else default_registry(config)
    for tool_class in MESSAGING_TOOLS if messaging else ():
        registry.register(tool_class())
    try:
        await registry.prepare()
        schemas = registry.schemas(on_demand=on_demand)
        inputs = ContextInputs(session=Session("cli:default"), prompts=[], recall=None, daily_notes=[])
        system = build_system_prompt(inputs, tools=schemas, workspace=workspace_path(config),
                                     settings=config.agents.defaults, model_label="ollama/qwen3:latest",
                                     now=datetime(2026, 12, 1, 9, 0).astimezone(), tool_parts=registry.prompt_parts())
    finally:
        await registry.aclose()
    return len(schemas), system, json.dumps(schemas)


async def measure(label: str, overrides: dict, show: bool, **kind: bool) -> None:
    from picoora.agent.tokens import estimate_tokens

    tools, system, schema_text = await fixed_prompt(overrides, **kind)
    chars = len(system) + len(schema_text)
    tokens = estimate_tokens(system) + estimate_tokens(schema_text)
    if show:
        print(f"\n===== {label} =====\n{system}\n")
    print(f"{label:<46} {tools:>5} {len(system):>7,} {len(schema_text):>8,} {chars:>7,} {tokens:>7,}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", action="store_true", help="print each system prompt")
    args = parser.parse_args()
    os.environ["PICOORA_HOME"] = tempfile.mkdtemp(prefix="picoora-budget-")  # no user skills of this machine
    server = {"command": sys.executable, "args": [str(TEST_SERVER), "--tools", "5"]}
    core = {"skills": {"enabled": False}, "tools": {"web_search": {"enabled": False}}}
    cases = [
        ("core tools only: no skills, no web_search", core, {}),
        ("defaults: built-in skills + web_search", {}, {}),
        ("every default tool: defaults + messaging", {}, {"messaging": True}),
        ("every default tool + read_tool_output", {}, {"messaging": True, "on_demand": True}),
        ("a guest: memory and the web", {}, {"guest": True}),
        ("every default tool + 1 MCP server, 5 tools", {"tools": {"mcp_servers": {"data": server}}},
         {"messaging": True}),
    ]
    print(f"{'configuration':<46} {'tools':>5} {'system':>7} {'schemas':>8} {'chars':>7} {'tokens':>7}")
    print(f"{'':<46} {'':>5} {'(chars)':>7} {'(chars)':>8} {'total':>7} {'(est.)':>7}")
    for label, overrides, kind in cases:
        asyncio.run(measure(label, overrides, args.show, **kind))


if __name__ == "__main__":
    main()
