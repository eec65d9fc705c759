"""Whole tool outputs on Oracle (PICO_TOOL_OUTPUTS, migration 12): scoped by agent_id like every row of a
person's, expired after ``limits.TOOL_OUTPUT_DAYS`` days, and read back through the real tool."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from picoora.store import limits
from picoora.store.base import ToolOutput
from picoora.tools.registry import ToolRegistry
from picoora.tools.tool_outputs import ReadToolOutput, new_handle
from tests.tools_support import make_ctx


def read(store, handle, tmp_path):
    tools = ToolRegistry()
    tools.register(ReadToolOutput())
    return asyncio.run(tools.execute("read_tool_output", {"handle": handle, "find": "plans"},
                                     make_ctx(tmp_path, store)))


def test_a_persons_handle_finds_nothing_in_anothers_scope(open_store, fake, tmp_path):
    owner = open_store()
    ana = owner.for_agent("default.ana")
    handle = new_handle()
    owner.tool_outputs.save(ToolOutput(handle, "telegram:1", "t1", "exec", "the owner's plans\n" * 5000))
    assert ana.tool_outputs.get(handle) is None
    assert read(ana, handle, tmp_path).is_error
    assert "5000 line(s) hold 'plans'" in read(owner, handle, tmp_path).content
    (row,) = fake.rows("PICO_TOOL_OUTPUTS")
    assert (row["agent_id"], row["session_key"], row["tool_name"]) == (owner.agent_id, "telegram:1", "exec")


def test_outputs_past_their_days_are_not_read_and_go_at_the_next_save(open_store, fake):
    store = open_store()
    old, new = new_handle(), new_handle()
    store.tool_outputs.save(ToolOutput(old, "web:a", "t1", "web_fetch", "old page"))
    fake.rows("PICO_TOOL_OUTPUTS")[0]["created_at"] -= timedelta(days=limits.TOOL_OUTPUT_DAYS, minutes=1)
    assert store.tool_outputs.get(old) is None
    store.tool_outputs.save(ToolOutput(new, "web:a", "t2", "web_fetch", "new page"))
    assert [row["handle"] for row in fake.rows("PICO_TOOL_OUTPUTS")] == [new]
    assert store.tool_outputs.get(new).content == "new page"
