"""The fixed part of every turn (system prompt + tool schemas) with every default tool stays within its
budget: a local model on a CPU pays seconds for every thousand prompt tokens (bench/prompt_budget.py)."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench" / "prompt_budget.py"


def _bench():
    spec = importlib.util.spec_from_file_location("prompt_budget", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_default_tool_fits_the_budget(isolated_home):
    bench = _bench()
    tools, system, schemas = asyncio.run(bench.fixed_prompt({}, messaging=True))
    assert tools >= 15  # the defaults are all there (a registry that lost its tools would pass the size)
    assert len(system) + len(schemas) <= bench.BUDGET, (tools, len(system), len(schemas))
