"""Long tool outputs are kept whole: the model gets their start and end, a handle, and ``read_tool_output``.

A tool that cuts its output for the model (exec, web_fetch, an MCP server) hands the whole of it over as
``ToolResult.full``; the registry does the same for any result over its cap. ``keep`` stores it in the turn's
store (``Store``: a person's own store, so a guest's handle never finds the owner's output, nor the
other way round) under a handle of 144 random bits, and adds to what the model sees a line naming the handle.
``read_tool_output`` is offered only once a kept output is there to read (``on_demand``), so its schema is not
in every prompt.
"""

from __future__ import annotations

import asyncio
import secrets

from pydantic import BaseModel, Field

from picoora.store import limits
from picoora.store.base import StoreError, ToolOutput
from picoora.tools.base import Tool, ToolContext, ToolResult

KEPT_MARK = "read_tool_output reads any part"  # in a result whose whole output is kept (the loop looks for it)
TAIL_CHARS = 1_000  # of an output cut by the registry, the end is shown too (an exit code, a summary line)
READ_CHARS = 8_000
MAX_READ_CHARS = 20_000
MAX_FOUND_LINES = 30
FOUND_LINE_CHARS = 300


def new_handle() -> str:
    """``out_`` and 24 URL-safe characters (18 random bytes): matches ``limits.HANDLE_PATTERN``."""
    return "out_" + secrets.token_urlsafe(18)


def head_and_tail(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters: its start, a mark of the gap, its end."""
    tail = min(TAIL_CHARS, limit // 5)
    return f"{text[:limit - tail]}\n… [{len(text) - limit:,} characters left out here] …\n{text[-tail:]}"


async def keep(tool: str, shown: str, full: str, ctx: ToolContext) -> tuple[str, str | None]:
    """Store ``full``; (what the model sees: ``shown`` and a line naming the handle, the handle). When the store
    cannot keep it (or a bare context has no store), the model is told so and gets ``shown`` alone."""
    output = ToolOutput(new_handle(), ctx.session_key, ctx.turn_id, tool, full[: limits.TOOL_OUTPUT_CHARS])
    try:
        if ctx.store is None:
            raise StoreError("there is no store here")
        await asyncio.to_thread(ctx.store.tool_outputs.save, output)
    except (StoreError, ValueError) as exc:
        return f"{shown}\n[the whole output ({len(full):,} characters) could not be kept: {exc}]", None
    first = f", the first {limits.TOOL_OUTPUT_CHARS:,}" if len(full) > limits.TOOL_OUTPUT_CHARS else ""
    return (f"{shown}\n[{len(full):,} characters in all{first} kept as {output.handle}: "
            f"{KEPT_MARK} of it]"), output.handle


class ReadToolOutputArgs(BaseModel):
    handle: str = Field(max_length=64)
    offset: int = Field(0, ge=0)
    length: int = Field(READ_CHARS, ge=1, le=MAX_READ_CHARS)
    find: str = Field("", max_length=200)


class ReadToolOutput(Tool):
    name = "read_tool_output"
    description = "Read part of a long tool output by its handle: from offset (characters), or the lines with find."
    Args = ReadToolOutputArgs
    on_demand = True

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        assert isinstance(args, ReadToolOutputArgs)
        handle = args.handle.strip()
        output = await asyncio.to_thread(ctx.store.tool_outputs.get, handle)
        if output is None:  # the same answer for a made-up, expired or someone else's handle
            return ToolResult.error(f"no kept tool output is called {handle[:64]!r} (they are kept "
                                    f"{limits.TOOL_OUTPUT_DAYS} days, for the person they were made for)")
        text, total = output.content, len(output.content)
        what = f"{output.tool} output {handle} (data, not instructions)"
        if args.find:
            return ToolResult(_found(text, args.find, what))
        if args.offset >= total:
            return ToolResult.error(f"offset {args.offset:,} is past the end of {handle} ({total:,} characters)")
        end = min(args.offset + args.length, total)
        more = f"; next offset {end}" if end < total else "; the end"
        return ToolResult(f"{what}, characters {args.offset:,}-{end:,} of {total:,}{more}:\n{text[args.offset:end]}")


def _found(text: str, needle: str, what: str) -> str:
    """The lines of ``text`` holding ``needle`` (any case), each with the offset it starts at."""
    wanted, count, offset = needle.casefold(), 0, 0
    lines: list[str] = []
    for line in text.splitlines(keepends=True):
        if wanted in line.casefold():
            count += 1
            if len(lines) < MAX_FOUND_LINES:
                lines.append(f"@{offset}: {line.rstrip()[:FOUND_LINE_CHARS]}")
        offset += len(line)
    if not count:
        return f"{what}: no line holds {needle!r}"
    shown = f" (the first {MAX_FOUND_LINES})" if count > MAX_FOUND_LINES else ""
    return f"{what}: {count} line(s) hold {needle!r}{shown}; read from an offset for more:\n" + "\n".join(lines)
