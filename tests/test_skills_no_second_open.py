"""The ``skill`` tool opens what it checked (issue 21): it checked a path, then opened it again with
a plain ``open()``, so an exec swapping a symlink in between got ``~/.ssh/id_ed25519`` and the whole
config read to the model. A ``SKILL.md`` or skill folder that is a symlink is refused outright.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from picoora.skills.catalog import SkillCatalog
from picoora.tools.skills import SkillTool
from tests.test_skills import write_skill
from tests.tools_support import call, make_ctx

SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- not-a-real-key"
SWAPS = 3000
DEADLINE_S = 30
PLAIN = "Pack light."
PLAIN_SKILL = f"---\nname: travel\ndescription: Trips.\n---\n{PLAIN}\n"


def _secret_skill(tmp_path: Path, name: str) -> Path:
    """Outside the skills folder: a folder whose SKILL.md is valid and holds the secret."""
    return write_skill(tmp_path / "outside", name, body=SECRET)


def test_a_symlinked_skill_md_or_skill_folder_is_refused(tmp_path):
    skills = tmp_path / "ws" / "skills"
    (skills / "keys").mkdir(parents=True)
    (skills / "keys" / "SKILL.md").symlink_to(_secret_skill(tmp_path, "keys") / "SKILL.md")
    (skills / "vault").symlink_to(_secret_skill(tmp_path, "vault"))
    catalog = SkillCatalog([("workspace", skills)])
    found = catalog.scan()
    assert found.skills == {}
    assert sorted(p.path.parent.name for p in found.problems) == ["keys", "vault"]
    assert all("symlink" in p.reason for p in found.problems)
    ctx = make_ctx(tmp_path)
    for name in ("keys", "vault"):
        result = call(SkillTool(catalog), ctx, name=name)
        assert result.is_error and SECRET not in result.content


def test_a_folder_on_the_way_that_is_a_symlink_is_refused(tmp_path):
    folder = write_skill(tmp_path / "ws" / "skills", "travel")
    (tmp_path / "ssh").mkdir()
    (tmp_path / "ssh" / "id_ed25519").write_text(SECRET)
    (folder / "docs").symlink_to(tmp_path / "ssh")
    result = call(SkillTool(SkillCatalog([("workspace", tmp_path / "ws" / "skills")])), make_ctx(tmp_path),
                  name="travel", file="docs/id_ed25519")
    assert result.is_error and SECRET not in result.content and "symlink" in result.content


def _swap_forever(path: Path, target: Path, stop: threading.Event) -> None:
    """Flip ``path`` between a regular file and a symlink to ``target``, each step one atomic rename. Both
    next files are made while it is plain, and a file of the same size is written while it is a link, so
    each state lasts about as long (made the other way it was a link 95 % of the time)."""
    plain, link, scratch = path.with_name(".plain"), path.with_name(".link"), path.with_name(".scratch")
    plain.write_text(PLAIN_SKILL)
    while not stop.is_set():
        os.replace(plain, path)
        link.symlink_to(target)
        plain.write_text(PLAIN_SKILL)
        os.replace(link, path)
        scratch.write_text(PLAIN_SKILL)
        scratch.unlink()


def _race(tmp_path: Path, swapped: Path, target: Path, **args: str) -> list[str]:
    """The tool's answers to at least SWAPS reads while ``swapped`` flips, and on until one read found the
    plain file (or DEADLINE_S passed): on a loaded machine a fixed count sometimes never met it."""
    tool = SkillTool(SkillCatalog([("workspace", tmp_path / "ws" / "skills")]))
    stop = threading.Event()
    swapper = threading.Thread(target=_swap_forever, args=(swapped, target, stop), daemon=True)
    swapper.start()
    answers: list[str] = []
    seen_plain = False
    deadline = time.monotonic() + DEADLINE_S
    try:
        while len(answers) < SWAPS or (not seen_plain and time.monotonic() < deadline):
            answers.append(tool._read(tool.Args(name="travel", **args)).content)
            seen_plain = seen_plain or PLAIN in answers[-1]
        return answers
    finally:
        stop.set()
        swapper.join()


def test_a_file_swapped_for_a_symlink_while_it_is_read_never_leaks(tmp_path):
    folder = write_skill(tmp_path / "ws" / "skills", "travel")
    (tmp_path / "id_ed25519").write_text(SECRET)
    answers = _race(tmp_path, folder / "notes.md", tmp_path / "id_ed25519", file="notes.md")
    assert not any(SECRET in answer for answer in answers)
    assert any(PLAIN in answer for answer in answers)  # the race really ran both ways


def test_a_skill_md_swapped_for_a_symlink_while_it_is_read_never_leaks(tmp_path):
    folder = write_skill(tmp_path / "ws" / "skills", "travel")
    secret = _secret_skill(tmp_path, "travel") / "SKILL.md"
    answers = _race(tmp_path, folder / "SKILL.md", secret)
    assert not any(SECRET in answer for answer in answers)
    assert any(PLAIN in answer for answer in answers)


def test_the_listing_of_a_skills_files_names_only_its_own_regular_files(tmp_path):
    """Reading a symlink is refused, so the listing does not offer one, nor what a symlinked folder holds."""
    folder = write_skill(tmp_path / "ws" / "skills", "travel")
    (folder / "guides").mkdir()
    (folder / "guides" / "packing.md").write_text("Socks.\n")
    (tmp_path / "ssh").mkdir()
    (tmp_path / "ssh" / "id_ed25519").write_text(SECRET)
    (folder / "key").symlink_to(tmp_path / "ssh" / "id_ed25519")
    (folder / "ssh").symlink_to(tmp_path / "ssh")
    result = call(SkillTool(SkillCatalog([("workspace", tmp_path / "ws" / "skills")])), make_ctx(tmp_path),
                  name="travel")
    assert result.content.endswith("Files of this skill (read one with the file argument): guides/packing.md")
