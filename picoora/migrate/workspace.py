"""The Go workspace's files: prompts (through the store, so they reach PICO_PROMPTS on Oracle), HEARTBEAT.md,
TOOLS.md and skills (as files in picoora's workspace and home).

A file picoora already has with other content is the user's and is kept, unless ``force``: then it is
replaced and the old content saved as ``NAME.bak`` first. An untouched picoora template is replaced freely.
Symbolic links are never followed: a link in a skill could otherwise copy any file of the machine into
the tools' reach.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from picoora.migrate.go_templates import heartbeat_tasks, is_go_template, normalise
from picoora.migrate.report import Section, one_item
from picoora.migrate.source import read_bytes, read_listed
from picoora.store.base import PROMPT_NAMES
from picoora.store.protocol import Store
from picoora.templates import backup_path, template_files

PLAIN_FILES = ("HEARTBEAT.md", "TOOLS.md")  # workspace files picoora reads (HEARTBEAT.md) or keeps for people
MAX_SKILL_FILES = 200  # a skill folder with more is not a skill (a copied repository): listed, not copied
MAX_SKILL_FILE_BYTES = 5_000_000  # a larger file in a skill (a model, a video) is listed, not copied
LINK = "a symbolic link; not followed"


def migrate_prompts(go_workspace: Path, store: Store | None, workspace: Path, force: bool, section: Section,
                    dry_run: bool = False) -> None:
    """A prompt file the Go user wrote is added after picoora's own (its template or the user's picoora
    text, which ``force`` saves as .bak first); Go's unedited templates are left behind."""
    templates = template_files()
    for name in PROMPT_NAMES:
        text = read_listed(go_workspace / name, section)
        if text is None:
            continue
        if is_go_template(name, text):
            section.skipped(name, "the Go version's own unedited template; picoora's instructions stay")
            continue
        current = store.prompts.get(name) if store is not None else None
        held = current.content if current is not None else None
        template = templates.get(name, b"").decode("utf-8")
        edited = held is not None and held.encode() != templates.get(name)
        if held is not None and normalise(text) in normalise(held):
            section.unchanged(name)
        elif edited and not force:
            section.kept(name, "picoora's was edited; --force adds the Go text after it, keeping a .bak")
        elif store is None or dry_run:
            section.would(name, "added after picoora's own" if template or held else "")
        else:
            with one_item(section, name):
                _add_prompt(store, name, text, held if held is not None else template, edited, workspace, section)


def _add_prompt(store: Store, name: str, text: str, base: str, edited: bool, workspace: Path,
                section: Section) -> None:
    """The Go text after ``base``; a base the user wrote is saved as NAME.bak first."""
    combined = f"{base.rstrip()}\n\n{text.strip()}\n" if base.strip() else text
    if not edited:
        store.prompts.set(name, combined)
        section.done(name, "added after picoora's own" if base.strip() else "")
        return
    backup = backup_path(workspace / name)
    backup.write_text(base, encoding="utf-8")
    store.prompts.set(name, combined)
    section.replaced(name, f"added after yours, which is saved as {backup.name}")


def migrate_files(go_workspace: Path, workspace: Path, dry_run: bool, force: bool, section: Section) -> None:
    templates = template_files()
    for name in PLAIN_FILES:
        text = read_listed(go_workspace / name, section)
        if text is None:
            continue
        data = text.encode("utf-8")
        if name == "HEARTBEAT.md":
            tasks = heartbeat_tasks(text)
            if not tasks:
                section.skipped(name, "only the Go version's examples, no task of yours: no beat runs them")
                continue
            # Under picoora's "Tasks" heading, where its heartbeat reads them; Go's instructions stay behind.
            data = templates[name].rstrip() + b"\n\n" + tasks.encode("utf-8") + b"\n"
        _copy_file(name, data, workspace / name, templates.get(name), dry_run, force, section)


def migrate_skills(go_skills: Path, skills: Path, builtin: set[str], dry_run: bool, force: bool,
                   section: Section) -> None:
    if go_skills.is_symlink():
        section.skipped(f"{go_skills.parent.name}/{go_skills.name}", LINK)
        return
    if not go_skills.is_dir():
        return
    for folder in sorted(go_skills.iterdir()):
        if folder.name.startswith("."):
            continue
        if folder.is_symlink():
            section.skipped(folder.name, LINK)
            continue
        if not folder.is_dir():
            continue
        files = [p for p in folder.rglob("*") if p.is_file() or p.is_symlink()]  # rglob enters no linked folder
        if not (folder / "SKILL.md").is_file():
            section.skipped(folder.name, "no SKILL.md")
        elif len(files) > MAX_SKILL_FILES:
            section.skipped(folder.name, f"{len(files)} files, more than a skill holds ({MAX_SKILL_FILES})")
        elif folder.name in builtin and not force:
            section.kept(folder.name, "picoora ships its own skill of this name; --force copies yours over it")
        else:
            readable = _readable(folder, files, section)
            if Path("SKILL.md") not in readable:  # a linked SKILL.md: nothing of the skill is usable
                section.skipped(folder.name, "its SKILL.md could not be read (listed above)")
                continue
            _copy_skill(folder, skills / folder.name, readable, dry_run, force, section)


def _readable(folder: Path, files: list[Path], section: Section) -> dict[Path, bytes]:
    """Each file of the skill that can be read safely (no link at any level, at most MAX_SKILL_FILE_BYTES),
    by its path in the skill; every other one is listed."""
    found = {}
    for path in files:
        data, problem = read_bytes(path, MAX_SKILL_FILE_BYTES)
        if data is not None:
            found[path.relative_to(folder)] = data
        else:
            section.skipped(f"{folder.name}/{path.relative_to(folder)}", problem or "gone while it was read")
    return found


def _copy_skill(folder: Path, target: Path, files: dict[Path, bytes], dry_run: bool, force: bool,
                section: Section) -> None:
    if target.exists() and _same_tree(target, files):
        section.unchanged(folder.name)
        return
    if target.exists() and not force:
        section.kept(folder.name, f"{target} exists with other content; --force replaces it, keeping a .bak")
        return
    if dry_run:
        section.would(folder.name)
        return
    detail = ""
    if target.exists():
        backup = backup_path(target)
        target.rename(backup)
        detail = f"yours saved as {backup.name}"
    for relative, data in files.items():
        destination = target / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes(data)
        if os.access(folder / relative, os.X_OK, follow_symlinks=False):
            destination.chmod(0o755)  # a skill's script stays runnable
    (section.replaced if detail else section.done)(folder.name, detail)


def _same_tree(target: Path, files: dict[Path, bytes]) -> bool:
    return all((target / relative).is_file() and (target / relative).read_bytes() == data
               for relative, data in files.items())


def _copy_file(name: str, data: bytes, target: Path, template: bytes | None, dry_run: bool, force: bool,
               section: Section) -> None:
    held = target.read_bytes() if target.is_file() else None
    if held == data:
        section.unchanged(name)
    elif dry_run:
        section.would(name)
    elif held is None or held == template:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        section.done(name)
    elif not force:
        section.kept(name, "picoora's differs; --force replaces it, keeping a .bak")
    else:
        backup = backup_path(target)
        shutil.copy2(target, backup)
        target.write_bytes(data)
        section.replaced(name, f"yours saved as {backup.name}")
