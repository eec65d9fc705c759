"""The fixed part of every turn: the system prompt and the tool schemas, in estimated tokens.

Measured with ``picoora.agent.tokens`` (the estimate compaction uses) on an empty session, no
recalled memories, no daily notes and no workspace prompt files (those are the user's), for:
the core tools alone (no skills, no web_search, no MCP), the defaults (the core tools, the built-in
skills and web_search), and the defaults plus one MCP server with 5 tools (the test-suite's server).

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


async def measure(label: str, overrides: dict, show: bool) -> tuple[int, int, int]:
    from picoora.agent.context import ContextInputs, build_system_prompt
    from picoora.agent.tokens import estimate_tokens
    from picoora.config import Config, workspace_path
    from picoora.store.base import Session
    from picoora.tools import default_registry

    config = Config.model_validate(overrides)
    registry = default_registry(config)
    try:
        await registry.prepare()
        schemas = registry.schemas()
        inputs = ContextInputs(session=Session("cli:default"), prompts=[], recall=None, daily_notes=[])
        system = build_system_prompt(inputs, tools=schemas, workspace=workspace_path(config),
                                     settings=config.agents.defaults, model_label="ollama/qwen3:latest",
                                     now=datetime(2026, 12, 1, 9, 0).astimezone(), tool_parts=registry.prompt_parts())
    finally:
        await registry.aclose()
    system_tokens, schema_tokens = estimate_tokens(system), estimate_tokens(json.dumps(schemas))
    if show:
        print(f"\n===== {label} =====\n{system}\n")
    print(f"{label:<44} {len(schemas):>5} {system_tokens:>7} {schema_tokens:>8} {system_tokens + schema_tokens:>7}")
    return len(schemas), system_tokens, schema_tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", action="store_true", help="print each system prompt")
    args = parser.parse_args()
    os.environ["PICOORA_HOME"] = tempfile.mkdtemp(prefix="picoora-budget-")  # no user skills of this machine
    server = {"command": sys.executable, "args": [str(TEST_SERVER), "--tools", "5"]}
    cases = [
        ("core tools only: no skills, no web_search", {"skills": {"enabled": False},
                                                        "tools": {"web_search": {"enabled": False}}}),
        ("defaults: built-in skills + web_search", {}),
        ("defaults + 1 MCP server with 5 tools", {"tools": {"mcp_servers": {"data": server}}}),
    ]
    print(f"{'configuration':<44} {'tools':>5} {'system':>7} {'schemas':>8} {'total':>7}  (estimated tokens)")
    for label, overrides in cases:
        asyncio.run(measure(label, overrides, args.show))


if __name__ == "__main__":
    main()
