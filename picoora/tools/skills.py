"""The ``skill`` tool: the model reads a skill's instructions (or one of its files) by name.

A tool rather than ``read_file``: user-wide and built-in skills live outside the workspace, where
``read_file`` may not go, and a name costs fewer prompt tokens than an absolute path per skill.
The system prompt's skills summary comes from ``prompt_part``; skills are scanned on every turn, so a
skill installed while a gateway runs is seen (and the tool offered) from the next message on.
"""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

from pydantic import BaseModel, Field

from picoora.skills import SkillCatalog, SkillError
from picoora.skills.catalog import SKILL_FILE, read_skill_text
from picoora.tools.base import Tool, ToolContext, ToolResult

MAX_LISTED_FILES = 30


class SkillArgs(BaseModel):
    name: str = Field(min_length=1, description="The skill's name")
    file: str = Field("", description="One of the skill's other files to read instead")


class SkillTool(Tool):
    name = "skill"
    description = "Read a skill's instructions (or another file of the skill)."
    Args = SkillArgs

    def __init__(self, catalog: SkillCatalog):
        self.catalog = catalog

    def available(self) -> bool:  # offered once a skill exists, also one installed while running
        return bool(self.catalog.scan().skills)

    def prompt_part(self) -> str:
        return self.catalog.scan().summary()

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        assert isinstance(args, SkillArgs)
        return await asyncio.to_thread(self._read, args)

    def _read(self, args: SkillArgs) -> ToolResult:
        skills = self.catalog.scan()
        skill = skills.get(args.name.strip())
        if skill is None:
            known = ", ".join(sorted(skills.skills)) or "none"
            return ToolResult.error(f"no skill named {args.name!r}; available: {known}")
        try:
            if args.file.strip() not in ("", SKILL_FILE):
                return ToolResult(read_skill_text(skill.folder, args.file.strip()))
            body = skill.body()
        except SkillError as exc:
            return ToolResult.error(str(exc))
        others = _other_files(skill.folder)
        listing = f"\n\nFiles of this skill (read one with the file argument): {', '.join(others)}" if others else ""
        return ToolResult(f"Skill {skill.name} ({skill.source}):\n\n{body}{listing}")


def _other_files(folder: Path) -> list[str]:
    """The skill's other regular files, relative to its folder. Symlinks are left out (reading one is
    refused) and symlinked folders are not entered; a file that vanishes while listed is skipped, not an
    error (an exec in the folder may be renaming files as the model asks)."""
    root = os.path.realpath(folder)
    found = []
    for current, _, names in os.walk(root):  # does not follow symlinked folders; skips unreadable ones
        for name in names:
            path = os.path.join(current, name)
            try:
                regular = stat.S_ISREG(os.lstat(path).st_mode)
            except OSError:
                continue
            if regular and name != SKILL_FILE:
                found.append(os.path.relpath(path, root))
    return sorted(found)[:MAX_LISTED_FILES]
