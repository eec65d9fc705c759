"""``picoora skills``: list, show, install and remove skills (folders with a SKILL.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from picoora.cli.errors import CLIError, load_config

if TYPE_CHECKING:
    from picoora.skills import SkillCatalog


def register(app: typer.Typer) -> None:
    skills = typer.Typer(name="skills", help="List, show, install and remove skills.", no_args_is_help=True)
    for name, command in (("list", list_), ("show", show), ("install", install), ("remove", remove)):
        skills.command(name)(command)
    app.add_typer(skills)


def _catalog(ctx: typer.Context) -> SkillCatalog:
    from picoora.config import workspace_path
    from picoora.skills import catalog_for

    config = load_config(ctx)
    return catalog_for(workspace_path(config), builtin=config.skills.builtin)


def _root(ctx: typer.Context, user: bool) -> Path:
    from picoora.config import workspace_path
    from picoora.skills import user_skills_dir

    return user_skills_dir() if user else workspace_path(load_config(ctx)) / "skills"


def list_(ctx: typer.Context) -> None:
    """The skills the assistant sees (workspace, then user-wide, then built-in) and the ones skipped."""
    found = _catalog(ctx).scan(log_problems=False)  # listed below with the others
    if not found.skills:
        print("No skills installed.")
    for skill in sorted(found.skills.values(), key=lambda s: s.name):
        print(f"✓ {skill.name} ({skill.source})\n    {skill.description}")
    for problem in found.problems:
        print(f"✗ {problem.path}: {problem.reason}")


def show(ctx: typer.Context, name: str = typer.Argument(..., help="The skill's name.")) -> None:
    """Print a skill's instructions."""
    from picoora.skills import SkillError

    skill = _catalog(ctx).scan().get(name)
    if skill is None:
        raise CLIError(f"no skill named {name!r}: `picoora skills list` shows them")
    try:
        body = skill.body()
    except SkillError as err:
        raise CLIError(str(err)) from None
    print(f"{skill.name} ({skill.source}, {skill.path})\n{skill.description}\n\n{body}")


def install(
    ctx: typer.Context,
    source: str = typer.Argument(..., metavar="PATH_OR_GIT_URL", help="A skill folder, or a git repository."),
    path: str = typer.Option("", "--path", help="The skill's folder inside the source (a repository of skills)."),
    user: bool = typer.Option(False, "--user", help="Install for every workspace ($PICOORA_HOME/skills)."),
    force: bool = typer.Option(False, "--force", help="Replace an installed skill of the same name."),
) -> None:
    """Copy a skill into the workspace's skills folder (or the user-wide one)."""
    from picoora.skills import SkillError
    from picoora.skills.install import install as install_skill

    try:
        skill = install_skill(source, _root(ctx, user), subdir=path, force=force)
    except SkillError as err:
        raise CLIError(str(err)) from None
    print(f"✓ Installed skill {skill.name!r} in {skill.folder}")


def remove(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="The skill's name."),
    user: bool = typer.Option(False, "--user", help="Remove it from the user-wide skills folder."),
) -> None:
    """Delete an installed skill (built-in ones cannot be removed: set skills.builtin to false)."""
    from picoora.skills import SkillError
    from picoora.skills.install import remove as remove_skill

    try:
        folder = remove_skill(name, _root(ctx, user))
    except SkillError as err:
        raise CLIError(str(err)) from None
    print(f"✓ Removed skill {name!r} ({folder})")
