"""The Go workspace's files: prompts (through the store, so they reach PICO_PROMPTS on Oracle), HEARTBEAT.md,
TOOLS.md and skills (as files in picoora's workspace and home).

A file picoora already has with other content is the user's and is kept, unless ``force``: then it is
replaced and the old content saved as ``NAME.bak`` first. An untouched picoora template is replaced freely.
Symbolic links are never followed: a link in a skill could otherwise copy any file of the machine into
the tools' reach.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from picoora.migrate.report import Section, one_item
from picoora.migrate.source import read_listed
from picoora.store.base import PROMPT_NAMES
from picoora.store.protocol import Store
from picoora.templates import backup_path, template_files

PLAIN_FILES = ("HEARTBEAT.md", "TOOLS.md")  # workspace files picoora reads (HEARTBEAT.md) or keeps for people
MAX_SKILL_FILES = 200  # a skill folder with more is not a skill (a copied repository): listed, not copied


def migrate_prompts(go_workspace: Path, store: Store | None, workspace: Path, force: bool, section: Section) -> None:
    templates = template_files()
    for name in PROMPT_NAMES:
        text = read_listed(go_workspace / name, section)
        if text is None:
            continue
        current = store.prompts.get(name) if store is not None else None
        held = current.content if current is not None else None
        if held == text:
            section.unchanged(name)
        elif store is None:
            section.would(name)
        elif held is not None and held.encode() != templates.get(name) and not force:
            section.kept(name, "picoora's differs; --force replaces it, keeping a .bak")
        else:
            with one_item(section, name):
                _replace_prompt(store, name, text, held, templates.get(name), workspace, section)


def _replace_prompt(store: Store, name: str, text: str, held: str | None, template: bytes | None, workspace: Path,
                    section: Section) -> None:
    """Write the prompt; one the user wrote (neither absent nor picoora's template) is saved as NAME.bak first."""
    if held is None or held.encode() == template:
        store.prompts.set(name, text)
        section.done(name)
        return
    backup = backup_path(workspace / name)
    backup.write_text(held, encoding="utf-8")
    store.prompts.set(name, text)
    section.replaced(name, f"yours saved as {backup.name}")


def migrate_files(go_workspace: Path, workspace: Path, dry_run: bool, force: bool, section: Section) -> None:
    templates = template_files()
    for name in PLAIN_FILES:
        source = go_workspace / name
        if read_listed(source, section) is None:
            continue
        _copy_file(source, workspace / name, templates.get(name), dry_run, force, section)


def migrate_skills(go_skills: Path, skills: Path, builtin: set[str], dry_run: bool, force: bool,
                   section: Section) -> None:
    if not go_skills.is_dir() or go_skills.is_symlink():
        return
    for folder in sorted(go_skills.iterdir()):
        if folder.name.startswith(".") or not folder.is_dir() or folder.is_symlink():
            continue
        files = [p for p in folder.rglob("*") if p.is_file() or p.is_symlink()]
        if not (folder / "SKILL.md").is_file():
            section.skipped(folder.name, "no SKILL.md")
        elif len(files) > MAX_SKILL_FILES:
            section.skipped(folder.name, f"{len(files)} files, more than a skill holds ({MAX_SKILL_FILES})")
        elif folder.name in builtin and not force:
            section.kept(folder.name, "picoora ships its own skill of this name; --force copies yours over it")
        else:
            _copy_skill(folder, skills / folder.name, files, dry_run, force, section)


def _copy_skill(folder: Path, target: Path, files: list[Path], dry_run: bool, force: bool, section: Section) -> None:
    if target.exists() and _same_tree(folder, target, files):
        section.unchanged(folder.name)
        return
    if target.exists() and not force:
        section.kept(folder.name, f"{target} exists with other content; --force replaces it, keeping a .bak")
        return
    links = [p for p in files if p.is_symlink()]
    detail = f"{len(links)} symbolic link(s) left out" if links else ""
    if dry_run:
        section.would(folder.name, detail)
        return
    if target.exists():
        backup = backup_path(target)
        target.rename(backup)
        detail = "; ".join(filter(None, [detail, f"yours saved as {backup.name}"]))
    for path in files:
        if path.is_symlink():
            continue
        destination = target / path.relative_to(folder)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, destination, follow_symlinks=False)
    (section.replaced if "saved as" in detail else section.done)(folder.name, detail)


def _same_tree(folder: Path, target: Path, files: list[Path]) -> bool:
    return all(p.is_symlink() or ((target / p.relative_to(folder)).is_file()
                                  and (target / p.relative_to(folder)).read_bytes() == p.read_bytes())
               for p in files)


def _copy_file(source: Path, target: Path, template: bytes | None, dry_run: bool, force: bool,
               section: Section) -> None:
    data = source.read_bytes()
    held = target.read_bytes() if target.is_file() else None
    if held == data:
        section.unchanged(source.name)
    elif dry_run:
        section.would(source.name)
    elif held is None or held == template:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        section.done(source.name)
    elif not force:
        section.kept(source.name, "picoora's differs; --force replaces it, keeping a .bak")
    else:
        backup = backup_path(target)
        shutil.copy2(target, backup)
        target.write_bytes(data)
        section.replaced(source.name, f"yours saved as {backup.name}")


