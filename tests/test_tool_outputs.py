"""Long tool outputs kept whole, through the agent loop: the model gets the start and a handle, the trace links
it, ``read_tool_output`` (offered only once there is something to read) reads it back in parts or by a search,
and a handle is good only in the store of the person it was made for."""

from __future__ import annotations

import asyncio
import os
import re
import time

import pytest
from pydantic import BaseModel

from picoora.config import Config
from picoora.store import limits
from picoora.store.base import ToolOutput
from picoora.store.files import FileStore
from picoora.store.layout import FileLayout
from picoora.store.scoped import PersonStore
from picoora.tools import default_registry, guest_registry
from picoora.tools.base import Tool, ToolResult
from picoora.tools.registry import ToolRegistry
from picoora.tools.tool_outputs import ReadToolOutput, new_handle
from tests.fakes.agent_kit import make_agent
from tests.fakes.scripted_llm import ScriptedLLM, answer, calls
from tests.tools_support import make_ctx

KEY = "cli:outputs"
LOG = "".join(f"{n:05d} event {'ok' if n % 997 else 'DISK FULL'} ✓\n" for n in range(9000))  # ~150k characters


class NoArgs(BaseModel):
    pass


class Dump(Tool):
    """A tool with a very long output, as exec or web_fetch can have."""

    name = "dump"
    description = "Dump the log."
    Args = NoArgs

    async def run(self, args, ctx):
        return ToolResult(LOG)


def registry() -> ToolRegistry:
    tools = ToolRegistry(max_result_chars=30_000)  # above read_tool_output's longest part, as every registry's
    tools.register(Dump())
    tools.register(ReadToolOutput())
    return tools


def tool_names(request) -> list[str]:
    return [schema["function"]["name"] for schema in request.tools or []]


def handle_in(text: str) -> str:
    return re.search(r"kept as (out_[A-Za-z0-9_-]{24})", text).group(1)


def last_result(messages) -> str:
    return messages[-1].content


def test_a_huge_output_is_kept_linked_in_the_trace_and_read_back_in_parts(tmp_path):
    store = FileStore(tmp_path / "ws")

    def read_on(messages):  # read from where the last part said to go on, until the end
        said = last_result(messages)
        if "the end:" in said.splitlines()[0]:
            return answer("I have read it all.")
        offset = int(re.search(r"next offset (\d+)", said).group(1)) if "next offset" in said else 0
        return calls(("read_tool_output", {"handle": handle_in(messages[3].content), "offset": offset,
                                           "length": 20_000}))

    llm = ScriptedLLM(calls(("dump", {})), respond=read_on)
    agent = make_agent(store, llm, tmp_path, registry(), context_window=100_000)  # it all fits, read in parts
    result = asyncio.run(agent.run_turn(KEY, "what is in the log?"))
    assert (result.stop_reason, result.text) == ("answer", "I have read it all.")

    shown = llm.requests[1].messages[3].content
    assert shown.startswith(LOG[:25_000]) and len(shown) < 30_500
    assert f"{len(LOG):,} characters in all kept as" in shown
    handle = handle_in(shown)
    assert "read_tool_output" not in tool_names(llm.requests[0])  # nothing to read yet: not offered
    assert "read_tool_output" in tool_names(llm.requests[1])

    parts = [m.content.split(":\n", 1)[1] for m in llm.requests[-1].messages if m.content.startswith("dump output")]
    assert len(parts) == -(-len(LOG) // 20_000) and "".join(parts) == LOG  # every character, in order, across the parts
    trace = store.traces.last(KEY)
    assert trace.tool_calls[0].output_handle == handle
    assert all(call.output_handle is None for call in trace.tool_calls[1:])

    # The next turn: the handle is in the history, so the tool is offered from the first call; a search finds lines.
    llm.add(calls(("read_tool_output", {"handle": handle, "find": "disk full"})), answer("Disk full, ten times."))
    asyncio.run(agent.run_turn(KEY, "any errors?"))
    found = llm.requests[-1].messages[-1].content
    assert "read_tool_output" in tool_names(llm.requests[-2])
    assert "10 line(s) hold 'disk full'" in found and "@0: 00000 event DISK FULL ✓" in found
    assert f"@{LOG.index('00997 event')}: 00997 event DISK FULL ✓" in found


def test_every_default_registry_keeps_read_tool_output_off_the_prompt_until_asked():
    config = Config()
    for tools in (default_registry(config), guest_registry(config)):
        assert "read_tool_output" not in tools.names()
        assert "read_tool_output" in tools.names(on_demand=True)
        assert "read_tool_output" in [s["function"]["name"] for s in tools.schemas(on_demand=True)]


def test_a_guest_cannot_read_the_owners_output_nor_the_owner_a_guests(tmp_path):
    owner = FileStore(tmp_path / "ws")
    sam = PersonStore(FileStore(FileLayout(owner.workspace).person("sam")), owner, "sam")
    mine, theirs = new_handle(), new_handle()
    owner.tool_outputs.save(ToolOutput(mine, "telegram:1", "t1", "exec", "the owner's secret plans"))
    sam.tool_outputs.save(ToolOutput(theirs, "telegram:2", "t2", "web_fetch", "sam's page"))

    llm = ScriptedLLM(calls(("read_tool_output", {"handle": mine})), answer("It is not there."))
    asyncio.run(make_agent(sam, llm, tmp_path, guest_registry(Config())).run_turn("telegram:2", "read it"))
    refused = last_result(llm.requests[1].messages)
    assert refused.startswith("Error: no kept tool output is called") and "secret" not in refused

    def read(store, handle):
        return asyncio.run(registry().execute("read_tool_output", {"handle": handle}, make_ctx(tmp_path, store)))

    assert "sam's page" in read(sam, theirs).content
    assert read(owner, theirs).is_error and "secret plans" in read(owner, mine).content


@pytest.mark.parametrize(("arguments", "said"), [
    ({"handle": "../../.picoora/sessions/cli%3Adefault.json"}, "no kept tool output is called"),
    ({"handle": "out_" + "a" * 24}, "no kept tool output is called"),  # well formed, never made
    ({"handle": "OUT", "offset": -1}, "offset: Input should be greater than or equal to 0"),
    ({"handle": "OUT", "length": 10**9}, "length: Input should be less than or equal to 20000"),
    ({"handle": "OUT", "offset": 10**12}, "is past the end"),
    ({"handle": "OUT", "find": ".*["}, "no line holds '.*['"),  # a search is for text, not a pattern
    ({"handle": "x" * 65}, "handle: String should have at most 64 characters"),
])
def test_the_worst_arguments_get_a_clear_error_and_nothing_else(tmp_path, arguments, said):
    store = FileStore(tmp_path / "ws")
    handle = new_handle()
    store.tool_outputs.save(ToolOutput(handle, KEY, "t1", "exec", LOG))
    arguments = {k: (handle if v == "OUT" else v) for k, v in arguments.items()}
    result = asyncio.run(registry().execute("read_tool_output", arguments, make_ctx(tmp_path, store)))
    assert said in result.content
    assert LOG[:100] not in result.content


def test_on_files_outputs_are_bounded_in_age_and_in_size(tmp_path, monkeypatch):
    store = FileStore(tmp_path / "ws")
    old = new_handle()
    store.tool_outputs.save(ToolOutput(old, KEY, "t1", "exec", "an old output"))
    past = time.time() - limits.TOOL_OUTPUT_DAYS * 86400 - 60
    os.utime(store.layout.tool_outputs / f"{old}.json", (past, past))
    assert store.tool_outputs.get(old) is None  # expired: not read, even before it is deleted

    monkeypatch.setattr(limits, "TOOL_OUTPUT_TOTAL_BYTES", len(LOG) * 3 // 2)  # room for one log, not two
    handles = [new_handle() for _ in range(3)]
    for handle in handles:
        store.tool_outputs.save(ToolOutput(handle, KEY, "t2", "exec", LOG))
    assert [p.stem for p in store.layout.tool_outputs.iterdir()] == [handles[-1]]  # the newest; the old one went
    assert store.tool_outputs.get(handles[-1]).content == LOG


def test_a_secret_deep_in_a_long_output_is_scrubbed_before_it_is_kept(tmp_path):
    secret = "fake-secret-0123456789abcdef"

    class Leaky(Dump):
        name = "leaky"

        async def run(self, args, ctx):
            return ToolResult(LOG, full=LOG + f"token={secret}\n")

    tools = registry()
    tools.register(Leaky())
    store = FileStore(tmp_path / "ws")
    result = asyncio.run(tools.execute("leaky", {}, make_ctx(tmp_path, store, secrets=[secret])))
    kept = store.tool_outputs.get(result.handle).content
    assert secret not in kept and kept.startswith(LOG) and "token=" in kept
    assert not any(secret in path.read_text() for path in store.layout.tool_outputs.iterdir())


def test_picoora_trace_names_the_kept_output():
    from picoora.cli.trace_cmd import render
    from picoora.store.base import ToolCallTrace, TurnTrace

    handle = new_handle()
    trace = TurnTrace("t1", KEY, tool_calls=[ToolCallTrace("c1", "exec", {"command": "journalctl"}, 12.0, True,
                                                           "lots", output_handle=handle)], stop_reason="answer")
    assert f"    whole output kept as {handle} (read_tool_output)" in render(trace)
