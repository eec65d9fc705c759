"""Installing and removing skills: a local folder or a git repository copied into a skills folder.

What is copied is checked first: the folder must hold a valid ``SKILL.md`` (its name becomes the
folder name, so it cannot hold ``/`` or ``..``), no symlink or special file is copied (one could
point outside the skills folder), ``.git`` is left behind, and size and file count are capped. The
copy lands in a temporary folder inside the skills folder and is renamed into place, so a failed
install leaves nothing half-written. ``remove`` deletes only a real folder directly inside the
skills folder.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

from picoora.skills.catalog import SKILL_FILE, Skill, SkillError, check_name, parse_skill, read_frontmatter

MAX_FILES = 200
MAX_TOTAL_BYTES = 5_000_000
GIT_TIMEOUT_SECONDS = 120
_GIT_PREFIXES = ("https://", "http://", "ssh://", "git://", "file://", "git@")


def is_git_url(source: str) -> bool:
    """A URL git should clone (a bare repository's path ends in .git); ``ext::`` and other helpers never are."""
    return source.startswith(_GIT_PREFIXES) or (source.endswith(".git") and "::" not in source)


def install(source: str, root: Path, *, subdir: str = "", force: bool = False) -> Skill:
    """Install the skill at ``source`` (a folder, or a git URL cloned shallowly) into ``root``.
    ``subdir``: the skill's folder inside the source. Raises SkillError saying what is wrong."""
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="picoora-skill-") as scratch:
        base = _clone(source, Path(scratch) / "repo") if is_git_url(source) else Path(source).expanduser()
        folder = _inside(base, subdir) if subdir else base
        if not (folder / SKILL_FILE).is_file():
            raise SkillError(f"{folder} has no {SKILL_FILE}" + _hint(folder))
        # The frontmatter's name names the installed folder, whatever the source folder is called.
        return _place(folder, root, _declared_name(folder), force)


def remove(name: str, root: Path) -> Path:
    """Delete the skill ``name`` from ``root``; returns the folder removed."""
    check_name(name)
    target = root / name
    if target.is_symlink() or not target.is_dir():
        raise SkillError(f"no installed skill {name!r} in {root}")
    if target.resolve().parent != root.resolve():
        raise SkillError(f"{target} is not inside {root}")
    shutil.rmtree(target)
    return target


def _declared_name(folder: Path) -> str:
    """The frontmatter's name, checked to be a plain folder name (parse_skill validates the rest)."""
    data = read_frontmatter(folder / SKILL_FILE)
    name = data.get("name") if isinstance(data, dict) else None
    if not isinstance(name, str):
        raise SkillError(f"{folder / SKILL_FILE}: the frontmatter has no name")
    check_name(name)
    return name


def _place(folder: Path, root: Path, name: str, force: bool) -> Skill:
    """Copy ``folder`` to ``root/name`` through a staging folder, validating the copy before it goes live."""
    target = root / name
    if target.resolve().parent != root.resolve():
        raise SkillError(f"{name!r} would land outside {root}")
    if (target.exists() or target.is_symlink()) and not force:
        raise SkillError(f"a skill named {name!r} is already installed in {root} (use --force to replace it)")
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root))
    try:
        _copy_tree(folder, staging / name)
        parse_skill(staging / name, "workspace")
        if target.is_symlink() or target.is_file():
            target.unlink()
        elif target.exists():
            shutil.rmtree(target)
        os.replace(staging / name, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return parse_skill(target, "workspace")


def _copy_tree(source: Path, target: Path) -> None:
    """Copy regular files and folders only, within the caps; a symlink or special file is refused."""
    files = 0
    total = 0
    target.mkdir(parents=True)
    for current, dirs, names in os.walk(source, followlinks=False):
        here = Path(current)
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for entry in [*dirs, *sorted(names)]:
            path = here / entry
            mode = path.lstat().st_mode
            relative = path.relative_to(source)
            if stat.S_ISLNK(mode):
                raise SkillError(f"{relative} is a symlink; a skill may hold only regular files")
            if stat.S_ISDIR(mode):
                (target / relative).mkdir()
                continue
            if not stat.S_ISREG(mode):
                raise SkillError(f"{relative} is not a regular file")
            files += 1
            total += path.lstat().st_size
            if files > MAX_FILES or total > MAX_TOTAL_BYTES:
                raise SkillError(f"the skill is too large (more than {MAX_FILES} files or {MAX_TOTAL_BYTES} bytes)")
            shutil.copyfile(path, target / relative, follow_symlinks=False)


def _inside(base: Path, subdir: str) -> Path:
    folder = (base / subdir).resolve()
    if not folder.is_relative_to(base.resolve()):
        raise SkillError(f"{subdir!r} is outside the source")
    return folder


def _clone(url: str, into: Path) -> Path:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}  # never wait for a password on a terminal
    try:
        # No transport that runs commands (ext::), whatever the user's git config says; "--" ends the options.
        done = subprocess.run(["git", "-c", "protocol.ext.allow=never", "clone", "--depth", "1", "--quiet", "--",
                               url, str(into)],
                              capture_output=True, text=True, timeout=GIT_TIMEOUT_SECONDS, env=env)
    except FileNotFoundError:
        raise SkillError("git is not installed; install it, or clone the repository and install the folder") from None
    except subprocess.TimeoutExpired:
        raise SkillError(f"cloning {url} took longer than {GIT_TIMEOUT_SECONDS} s") from None
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["no details"]
        reason = next((line for line in lines if line.startswith("fatal:")), lines[-1])
        raise SkillError(f"cloning {url} failed: {reason}")
    return into


def _hint(folder: Path) -> str:
    try:
        found = [*folder.glob(f"*/{SKILL_FILE}"), *folder.glob(f"*/*/{SKILL_FILE}")]
        inner = sorted(p.parent.relative_to(folder).as_posix() for p in found)
    except OSError:
        return ""
    return f"; skills inside it: {', '.join(inner)} (pick one with --path)" if inner else ""
