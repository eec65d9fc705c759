"""Every method of a family's protocol has its awaited form: the async wrappers list their methods by hand
(``call.wrap(family.x)``), so a method added to a protocol and forgotten there would be missing from
``astore.<family>`` with nothing else to say so (mypy sees only what the wrapper does define)."""

from __future__ import annotations

import inspect
import pkgutil

import pytest

import picoora.store.families as package
from picoora.store.families import (
    documents,
    keyvalues,
    memories,
    notes,
    prompts,
    sessions,
    tool_outputs,
    traces,
    transcripts,
)
from picoora.store.families.calls import Caller

PAIRS = [
    (keyvalues.KeyValues, keyvalues.AsyncKeyValues),
    (keyvalues.State, keyvalues.AsyncState),
    (documents.Documents, documents.AsyncDocuments),
    (memories.Memories, memories.AsyncMemories),
    (notes.Notes, notes.AsyncNotes),
    (prompts.Prompts, prompts.AsyncPrompts),
    (sessions.Sessions, sessions.AsyncSessions),
    (tool_outputs.ToolOutputs, tool_outputs.AsyncToolOutputs),
    (traces.Traces, traces.AsyncTraces),
    (transcripts.Transcripts, transcripts.AsyncTranscripts),
]


class _AnyFamily:
    """A family whose every method exists (the wrappers only take them)."""

    def __getattr__(self, name: str):
        def method(*args, **kwargs):
            return name

        method.__name__ = name
        return method


def _protocol_methods(protocol: type) -> set[str]:
    return {name for name, value in inspect.getmembers(protocol, inspect.isfunction) if not name.startswith("_")}


async def _run(fn, *args, **kwargs):
    return fn(*args, **kwargs)


@pytest.mark.parametrize(("protocol", "wrapper"), PAIRS, ids=[p.__name__ for p, _ in PAIRS])
def test_each_protocol_method_has_its_awaited_form(protocol, wrapper):
    wrapped = wrapper(_AnyFamily(), Caller(_run))
    assert set(vars(wrapped)) == _protocol_methods(protocol)


def test_every_family_module_is_checked():
    families = {f"picoora.store.families.{m.name}" for m in pkgutil.iter_modules(package.__path__)} - {
        "picoora.store.families.calls"}
    assert {wrapper.__module__ for _, wrapper in PAIRS} == families
