"""The workspace prompt files on PICO_PROMPTS. A Go-era row is named without ``.md`` (IDENTITY for IDENTITY.md)
and still counts unless the ``.md`` row exists too."""

from __future__ import annotations

import builtins
import re
from typing import TYPE_CHECKING

from picoora.store import limits
from picoora.store.base import PROMPT_NAMES, Prompt
from picoora.store.oracle import codec
from picoora.store.oracle import sql as q
from picoora.store.oracle.keyvalues import merge
from picoora.store.oracle.op import Op
from picoora.store.oracle.unit_of_work import unit_of_work

if TYPE_CHECKING:
    from picoora.store.oracle.connection import Tx
    from picoora.store.oracle.context import OracleContext

_PROMPT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*\.md")


def _legacy_name(name: str) -> str:
    """``name`` checked, as the Go version named its row."""
    if not _PROMPT_NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not a prompt file name (expected something like USER.md)")
    limits.check_chars(name, limits.KEY_CHARS, "the prompt name")
    return name[:-3]


class OraclePrompts:
    def __init__(self, ctx: OracleContext):
        self.ctx = ctx

    @unit_of_work
    def list(self) -> Op[builtins.list[Prompt]]:
        async def work(tx: Tx) -> builtins.list[Prompt]:
            found: dict[str, str] = {}
            for name, content, _ in await tx.rows(q.PROMPT_ALL, agent_id=self.ctx.agent_id):
                name = str(name)
                if name.endswith(".md"):
                    found[name] = codec.text(content)
                else:  # a Go-era row counts unless the .md row exists too
                    found.setdefault(f"{name}.md", codec.text(content))
            return [Prompt(name, found[name]) for name in PROMPT_NAMES if name in found]

        return Op(work, "read prompts")

    @unit_of_work
    def get(self, name: str) -> Op[Prompt | None]:
        legacy = _legacy_name(name)

        async def work(tx: Tx) -> Prompt | None:
            rows = {str(n): codec.text(c) for n, c in await tx.rows(q.PROMPT_GET, agent_id=self.ctx.agent_id,
                                                                    prompt_name=name, legacy_name=legacy)}
            content = rows.get(name, rows.get(legacy))
            return None if content is None else Prompt(name, content)

        return Op(work, "read the prompt")

    @unit_of_work
    def set(self, name: str, content: str) -> Op[None]:
        _legacy_name(name)
        return merge(q.PROMPT_SET, "save the prompt", agent_id=self.ctx.agent_id, prompt_name=name, content=content)
