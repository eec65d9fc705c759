"""What keeping a long tool output costs a turn, on files: the registry's keep (scrub, save, prune) and
``read_tool_output`` reading a part and searching, by output size, with the store's folder full to its bound.

    .venv/bin/python bench/tool_output_bench.py [--runs 20]

Each size is kept ``runs`` times through ``ToolRegistry.execute`` (a tool returning that many characters over
the registry's cap, as exec or web_fetch can), into a store whose ``tool_outputs/`` already holds 64 MB of older
outputs (so every save also prunes); then read back with ``offset``/``length`` (8,000 characters) and ``find``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def main() -> None:
    from pydantic import BaseModel

    from picoora.store import limits
    from picoora.store.base import ToolOutput
    from picoora.store.files import FileStore
    from picoora.tools.base import Tool, ToolContext, ToolResult
    from picoora.tools.registry import ToolRegistry
    from picoora.tools.tool_outputs import ReadToolOutput, new_handle

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()

    class NoArgs(BaseModel):
        pass

    class Big(Tool):
        name, description, Args = "big", "A long output.", NoArgs
        text = ""

        async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
            return ToolResult(self.text)

    big = Big()
    tools = ToolRegistry()
    tools.register(big)
    tools.register(ReadToolOutput())
    store = FileStore(Path(tempfile.mkdtemp(prefix="picoora-outputs-")) / "workspace")
    filler = "x" * 1_000_000
    for _ in range(limits.TOOL_OUTPUT_TOTAL_BYTES // len(filler)):
        store.tool_outputs.save(ToolOutput(new_handle(), "cli:bench", "t0", "exec", filler))
    ctx = ToolContext(workspace=store.workspace, store=store, session_key="cli:bench", turn_id="t1",
                      secrets=["sk-bench-secret-0123456789"])

    async def timed(name: str, arguments: dict) -> tuple[float, ToolResult]:
        started = time.perf_counter()
        result = await tools.execute(name, arguments, ctx)
        return (time.perf_counter() - started) * 1000, result

    print(f"{'output chars':>12} {'keep ms':>9} {'read 8k ms':>11} {'find ms':>8}   (median of {args.runs})")
    for size in (100_000, 300_000, 1_000_000):
        big.text = "".join(f"{n:07d} log line, status ok\n" for n in range(size // 28))[:size]
        keeps, reads, finds = [], [], []
        for _ in range(args.runs):
            ms, result = asyncio.run(timed("big", {}))
            keeps.append(ms)
            assert result.handle is not None
            reads.append(asyncio.run(timed("read_tool_output", {"handle": result.handle, "offset": size // 2}))[0])
            finds.append(asyncio.run(timed("read_tool_output", {"handle": result.handle, "find": "0012345"}))[0])
        print(f"{size:>12,} {statistics.median(keeps):>9.1f} {statistics.median(reads):>11.1f} "
              f"{statistics.median(finds):>8.1f}")


if __name__ == "__main__":
    main()
