"""What the front doors do beside turns, through the library's front door: memory, with the rules the HTTP API
and the CLI apply. (Pairing and jobs are their own library objects, ``Pairing`` and ``JobBook``, used as they are
by the CLI, the gateway and the cron tool: tests/test_pairing_codes.py, tests/test_cron_tool_and_cli.py.)"""

from __future__ import annotations

import asyncio

from picoora.assistant import build_assistant
from picoora.config import load_config
from tests.cli_support import closed_port_url_config


def _run(home, scenario):
    config = load_config(closed_port_url_config(home))  # none of this reaches a model

    async def main():
        async with build_assistant(config) as assistant:
            return await scenario(assistant)

    return asyncio.run(main())


def test_memory_operations_round_trip_and_looking_does_not_touch(isolated_home):
    async def scenario(assistant):
        added = await assistant.remember("Ines prefers the window seat", 0.8, "preference")
        found = await assistant.recall("window seat")
        listed = await assistant.memories()
        gone = await assistant.forget(added.memory.id)
        return added, found, listed, gone, await assistant.memories(), await assistant.forget("nope")

    added, found, listed, gone, after, missing = _run(isolated_home, scenario)
    assert added.created and [m.memory.id for m in found.matches] == [added.memory.id]
    assert listed[0].access_count == 0  # recall through the front door looks without touching
    assert gone and after == [] and missing is False
