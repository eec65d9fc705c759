"""Skills: where they come from and which wins, bad frontmatter, the prompt summary, the skill tool,
and install/remove (with attempts to escape the skills folder)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from picoora.agent.context import build_system_prompt
from picoora.skills import SkillError, catalog_for
from picoora.skills import catalog as catalog_module
from picoora.skills.catalog import PROMPT_DESCRIPTION_CHARS, SkillCatalog
from picoora.skills.install import MAX_FILES, install, remove
from picoora.tools.skills import SkillTool
from tests.cli_support import run_cli
from tests.tools_support import call, make_ctx


def write_skill(root: Path, folder: str, text: str | None = None, *, name: str | None = None,
                description: str = "Does a thing.", body: str = "Step one.") -> Path:
    path = root / folder
    path.mkdir(parents=True, exist_ok=True)
    content = text if text is not None else f"---\nname: {name or folder}\ndescription: {description}\n---\n{body}\n"
    (path / "SKILL.md").write_text(content)
    return path


@pytest.fixture
def ws(tmp_path):
    workspace = tmp_path / "ws"
    (workspace / "skills").mkdir(parents=True)
    return workspace


def test_precedence_workspace_over_user_over_builtin(ws, isolated_home):
    write_skill(isolated_home / "skills", "skill-creator", description="The user's own version.")
    write_skill(isolated_home / "skills", "travel", description="Plan a trip.")
    write_skill(ws / "skills", "travel", description="The workspace's travel planner.")
    found = catalog_for(ws).scan()
    assert found.get("travel").source == "workspace"
    assert found.get("travel").description == "The workspace's travel planner."
    assert found.get("skill-creator").source == "user"
    assert found.get("memory-curator").source == "builtin"
    assert "memory-curator" not in catalog_for(ws, builtin=False).scan().skills


def test_bad_skills_are_reported_and_skipped(ws):
    root = ws / "skills"
    write_skill(root, "good")
    write_skill(root, "no-frontmatter", "# Just a heading\n")
    write_skill(root, "unclosed", "---\nname: unclosed\ndescription: x\n")
    write_skill(root, "bad-yaml", "---\nname: [bad\n---\n")
    write_skill(root, "list-yaml", "---\n- a\n- b\n---\n")
    write_skill(root, "no-description", "---\nname: no-description\n---\nbody\n")
    write_skill(root, "other-name", name="not-the-folder")
    write_skill(root, "Bad_Name", name="Bad_Name")
    write_skill(root, "too-long", description="x" * 2000)
    (root / "binary").mkdir()
    (root / "binary" / "SKILL.md").write_bytes(b"---\xff\xfe\x00")
    found = SkillCatalog([("workspace", root)]).scan()
    assert list(found.skills) == ["good"]
    reasons = {p.path.parent.name: p.reason for p in found.problems}
    assert set(reasons) == {"no-frontmatter", "unclosed", "bad-yaml", "list-yaml", "no-description", "other-name",
                            "Bad_Name", "too-long", "binary"}
    assert "frontmatter" in reasons["no-frontmatter"] and "closing" in reasons["unclosed"]
    assert "not valid YAML" in reasons["bad-yaml"] and "mapping" in reasons["list-yaml"]
    assert "description" in reasons["no-description"] and "differs from its folder" in reasons["other-name"]
    assert "not a valid skill name" in reasons["Bad_Name"] and "1024" in reasons["too-long"]
    assert "UTF-8" in reasons["binary"]


def test_the_prompt_summary_is_one_short_line_per_skill(ws):
    write_skill(ws / "skills", "long-one", description="word " * 100)
    found = SkillCatalog([("workspace", ws / "skills")]).scan()
    summary = found.summary()
    line = next(line for line in summary.splitlines() if line.startswith("- long-one: "))
    assert len(line) <= len("- long-one: ") + PROMPT_DESCRIPTION_CHARS and line.endswith("...")
    assert "not the user's words" in summary
    assert SkillCatalog([("workspace", ws / "nothing")]).scan().summary() == ""


def test_the_summary_is_a_part_of_the_system_prompt_and_bodies_stay_out(ws, tmp_path):
    from picoora.agent.context import gather_inputs
    from picoora.config import AgentDefaults
    from picoora.store.files import FileStore
    from picoora.tools.registry import ToolRegistry

    write_skill(ws / "skills", "travel", description="Plan a trip.", body="SECRET-BODY-TEXT")
    registry = ToolRegistry()
    registry.register(SkillTool(SkillCatalog([("workspace", ws / "skills")])))
    store = FileStore(tmp_path / "store-ws")
    inputs = gather_inputs(store, "cli:x", "hi", AgentDefaults(memory_context_tokens=0))
    prompt = build_system_prompt(inputs, tools=registry.schemas(), workspace=ws, settings=AgentDefaults(),
                                 model_label="m", tool_parts=registry.prompt_parts())
    assert "## Skills" in prompt and "- travel: Plan a trip." in prompt
    assert "SECRET-BODY-TEXT" not in prompt
    store.close()


def test_the_skill_tool_reads_bodies_and_files_but_nothing_outside(ws, tmp_path):
    folder = write_skill(ws / "skills", "travel", body="Pack light.")
    (folder / "reference.md").write_text("Airports list")
    (tmp_path / "outside.txt").write_text("private")
    (folder / "link.md").symlink_to(tmp_path / "outside.txt")
    tool = SkillTool(SkillCatalog([("workspace", ws / "skills")]))
    ctx = make_ctx(tmp_path)
    body = call(tool, ctx, name="travel")
    assert "Pack light." in body.content and "reference.md" in body.content and "link.md" not in body.content
    assert call(tool, ctx, name="travel", file="reference.md").content == "Airports list"
    for sneaky in ("../../outside.txt", "link.md", str(tmp_path / "outside.txt"), "."):
        result = call(tool, ctx, name="travel", file=sneaky)
        assert result.is_error and "private" not in result.content, sneaky
    missing = call(tool, ctx, name="nope")
    assert missing.is_error and "available: travel" in missing.content


def test_install_from_a_folder_and_remove(ws, tmp_path):
    source = write_skill(tmp_path / "src", "downloaded-folder", name="weekly-report", body="Report.")
    (source / "notes").mkdir()
    (source / "notes" / "a.md").write_text("A")
    (source / ".git").mkdir()
    (source / ".git" / "config").write_text("[core]")
    skill = install(str(source), ws / "skills")
    assert skill.name == "weekly-report" and skill.folder == ws / "skills" / "weekly-report"
    assert (skill.folder / "notes" / "a.md").read_text() == "A" and not (skill.folder / ".git").exists()
    with pytest.raises(SkillError, match="already installed"):
        install(str(source), ws / "skills")
    install(str(source), ws / "skills", force=True)
    assert sorted(p.name for p in (ws / "skills").iterdir()) == ["weekly-report"]  # no staging left behind
    remove("weekly-report", ws / "skills")
    assert not (ws / "skills" / "weekly-report").exists()


def test_install_refuses_anything_that_escapes_the_skills_folder(ws, tmp_path):
    root = ws / "skills"
    for name in ("../escape", "/etc/cron.d/x", "a/b", "..", "."):
        bad = write_skill(tmp_path / "bad", "x", f"---\nname: '{name}'\ndescription: d\n---\n")
        with pytest.raises(SkillError, match="not a valid skill name"):
            install(str(bad), root)
    linked = write_skill(tmp_path / "linked", "linked")
    (linked / "passwd").symlink_to("/etc/passwd")
    with pytest.raises(SkillError, match="symlink"):
        install(str(linked), root)
    many = write_skill(tmp_path / "many", "many")
    for index in range(MAX_FILES + 1):
        (many / f"f{index}.md").write_text("x")
    with pytest.raises(SkillError, match="too large"):
        install(str(many), root)
    good = write_skill(tmp_path / "repo", "pack")
    with pytest.raises(SkillError, match="outside the source"):
        install(str(good.parent), root, subdir="../../")
    assert list(root.iterdir()) == []  # nothing half-installed
    (tmp_path / "victim").mkdir()
    for name in ("../victim", "..", "/tmp"):
        with pytest.raises(SkillError):
            remove(name, root)
    (root / "sneaky").symlink_to(tmp_path / "victim")
    with pytest.raises(SkillError, match="no installed skill"):
        remove("sneaky", root)
    assert (tmp_path / "victim").is_dir()


def test_install_from_a_git_repository_of_skills(ws, tmp_path):
    repo = tmp_path / "skills-repo"
    write_skill(repo / "skills", "git-skill", body="From git.")
    git = ["git", "-c", "user.email=t@example.org", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "-C", str(repo), "add", "."], check=True)
    subprocess.run([*git, "-C", str(repo), "commit", "-qm", "skills"], check=True)
    with pytest.raises(SkillError, match="cloning .* failed: fatal: .* does not appear to be a git repository"):
        install(f"file://{repo}/skills", ws / "skills")
    with pytest.raises(SkillError, match="has no SKILL.md; skills inside it: skills/git-skill"):
        install(f"file://{repo}", ws / "skills")
    skill = install(f"file://{repo}", ws / "skills", subdir="skills/git-skill")
    assert skill.body() == "From git."
    marker = tmp_path / "pwned"
    for hostile in (f"ext::sh -c touch% {marker} x.git", f"ext::sh -c touch% {marker}"):
        with pytest.raises(SkillError):
            install(hostile, ws / "skills")  # never handed to git as a URL: a folder that does not exist
    assert not marker.exists()


@pytest.mark.slow
def test_the_skills_command(isolated_home, tmp_path):
    source = write_skill(tmp_path / "src", "cli-skill", description="From the command line.", body="Do it.")
    installed = run_cli("skills", "install", str(source), home=isolated_home)
    assert installed.returncode == 0, installed.stderr
    listed = run_cli("skills", "list", home=isolated_home)
    assert "✓ cli-skill (workspace)\n    From the command line." in listed.stdout
    assert "✓ memory-curator (builtin)" in listed.stdout
    shown = run_cli("skills", "show", "cli-skill", home=isolated_home)
    assert shown.returncode == 0 and shown.stdout.rstrip().endswith("Do it.")
    assert run_cli("skills", "remove", "cli-skill", home=isolated_home).returncode == 0
    gone = run_cli("skills", "show", "cli-skill", home=isolated_home)
    assert gone.returncode == 1 and "no skill named 'cli-skill'" in gone.stderr and "Traceback" not in gone.stderr
    escape = run_cli("skills", "remove", "../../config.json", home=isolated_home)
    assert escape.returncode == 1 and "not a valid skill name" in escape.stderr


def test_every_built_in_skill_is_valid():
    from picoora.skills.catalog import BUILTIN_DIR

    found = SkillCatalog([("builtin", BUILTIN_DIR)]).scan()
    assert found.problems == []
    assert sorted(found.skills) == ["daily-review", "memory-curator", "skill-creator"]


def test_the_tool_is_offered_once_a_skill_exists(ws):
    from picoora.tools.registry import ToolRegistry

    registry = ToolRegistry()
    registry.register(SkillTool(SkillCatalog([("workspace", ws / "skills")])))
    assert registry.names() == [] and registry.prompt_parts() == []
    write_skill(ws / "skills", "late", description="Installed while running.")
    assert registry.names() == ["skill"]
    assert "- late: Installed while running." in registry.prompt_parts()[0]


def test_plain_frontmatter_is_read_without_yaml_exactly_as_yaml_reads_it():
    import yaml

    from picoora.skills.catalog import _plain_mapping

    values = ["Does things, well. Really (yes).", "'quoted'", "a: b", "true", "123", "text # comment", "- item",
              "yes", "null", "~", "2026-01-01", "No", "On the road", "a\tb", ".5", "Reads notes; then writes",
              "100% sure", "@home", "it's fine", "ok!", "[list]", "{map}", "*alias", "&anchor x", "|", ">"]
    for value in values:
        header = f"name: x\ndescription: {value}"
        plain = _plain_mapping(header)
        if plain is not None:  # where it answers, it must agree with YAML; otherwise YAML decides
            assert plain == yaml.safe_load(header), value
    assert _plain_mapping("name: a-skill\ndescription: Reviews the day's notes.") == {
        "name": "a-skill", "description": "Reviews the day's notes."}


def test_a_catalog_sees_every_change_between_two_scans(ws, monkeypatch):
    """``scan`` reuses its last result only while the folders are unchanged: a skill added, edited, broken,
    swapped for a symlink or removed is seen by the very next scan. (Files count as settled at once here;
    the next test is about fresh ones.)"""
    import os

    monkeypatch.setattr(catalog_module, "SETTLED_NS", -1)
    root = ws / "skills"
    catalog = SkillCatalog([("workspace", root)])
    assert catalog.scan().skills == {}
    write_skill(root, "first")
    assert list(catalog.scan().skills) == ["first"]
    same = catalog.scan()
    assert catalog.scan() is same  # nothing changed: not looked at again
    write_skill(root, "first", description="Now says something else entirely")
    assert catalog.scan().skills["first"].description == "Now says something else entirely"
    (root / "later").mkdir()  # a folder first, its SKILL.md after
    assert "later" not in catalog.scan().skills
    write_skill(root, "later")
    assert set(catalog.scan().skills) == {"first", "later"}
    (root / "first" / "SKILL.md").write_text("no frontmatter now\n")
    assert list(catalog.scan().skills) == ["later"]
    (root / "later" / "SKILL.md").unlink()
    os.symlink(root / "first" / "SKILL.md", root / "later" / "SKILL.md")
    found = catalog.scan()
    assert found.skills == {} and any("symlink" in p.reason for p in found.problems)


@pytest.mark.parametrize("settled_ns, seen", [(catalog_module.SETTLED_NS, "Two"), (-1, "One")])
def test_a_skill_rewritten_within_a_clock_tick_is_read_again(ws, monkeypatch, settled_ns, seen):
    """A file rewritten at the same size within one tick of a coarse clock keeps its stamp; a stamp that
    young is not trusted, so the new text is read. Stamps are made coarse here to force the collision; with
    the rule off (-1) the stale skill comes back, so the test tells the two apart."""
    monkeypatch.setattr(catalog_module, "_file_stamp", lambda st: (st.st_mode, st.st_size))
    monkeypatch.setattr(catalog_module, "SETTLED_NS", settled_ns)
    catalog = SkillCatalog([("workspace", ws / "skills")])
    write_skill(ws / "skills", "tick", description="One")
    assert catalog.scan().skills["tick"].description == "One"
    write_skill(ws / "skills", "tick", description="Two")
    assert catalog.scan().skills["tick"].description == seen
