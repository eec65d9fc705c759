"""Skills: task instructions in ``SKILL.md`` folders that the model reads when a task calls for it."""

from __future__ import annotations

from pathlib import Path

from picoora.skills.catalog import Skill, SkillCatalog, SkillError, SkillProblem, SkillSet, skill_roots

__all__ = ["Skill", "SkillCatalog", "SkillError", "SkillProblem", "SkillSet", "catalog_for", "user_skills_dir"]


def user_skills_dir() -> Path:
    from picoora.config import picoora_home

    return picoora_home() / "skills"


def catalog_for(workspace: Path, builtin: bool = True) -> SkillCatalog:
    """The catalog of a workspace: its own skills, then the user's, then (``builtin``) picoora's."""
    return SkillCatalog(skill_roots(workspace, user_skills_dir(), builtin))
