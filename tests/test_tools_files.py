"""File tools on real files: sandbox escapes, protected files, edit errors, big reads, atomic writes."""

from __future__ import annotations

import os

import pytest

from picoora.config import default_config_path
from picoora.tools.files import AppendFile, EditFile, ListDir, ReadFile, WriteFile
from tests.tools_support import call, make_ctx


def test_write_read_append_list_round_trip(tmp_path):
    ctx = make_ctx(tmp_path)
    assert not call(WriteFile(), ctx, path="notes/a.txt", content="one\n").is_error
    assert not call(AppendFile(), ctx, path="notes/a.txt", content="two\n").is_error
    assert call(ReadFile(), ctx, path="notes/a.txt").content == "one\ntwo\n"
    assert (ctx.workspace / "notes" / "a.txt").read_text() == "one\ntwo\n"
    listing = call(ListDir(), ctx, path=".").content
    assert listing == "DIR:  notes"
    assert call(ListDir(), ctx, path="notes").content == "FILE: a.txt"


def test_write_is_atomic_and_keeps_the_file_mode(tmp_path):
    ctx = make_ctx(tmp_path)
    target = ctx.workspace / "script.sh"
    target.write_text("old")
    target.chmod(0o755)
    call(WriteFile(), ctx, path="script.sh", content="new")
    assert target.read_text() == "new"
    assert target.stat().st_mode & 0o777 == 0o755
    assert [p.name for p in ctx.workspace.iterdir()] == ["script.sh"]  # no temp file left behind


def test_dotdot_escape_is_refused(tmp_path):
    ctx = make_ctx(tmp_path)
    (tmp_path / "outside.txt").write_text("secret")
    result = call(ReadFile(), ctx, path="../outside.txt")
    assert result.is_error and "outside the workspace" in result.content
    result = call(WriteFile(), ctx, path="sub/../../evil.txt", content="x")
    assert result.is_error
    assert not (tmp_path / "evil.txt").exists()


def test_dotdot_that_stays_inside_is_fine(tmp_path):
    ctx = make_ctx(tmp_path)
    (ctx.workspace / "sub").mkdir()
    assert not call(WriteFile(), ctx, path="sub/../inside.txt", content="x").is_error
    assert (ctx.workspace / "inside.txt").read_text() == "x"


def test_absolute_paths_outside_and_sibling_prefix_are_refused(tmp_path):
    ctx = make_ctx(tmp_path)
    sibling = tmp_path / "ws-old"  # shares the workspace's name as a prefix
    sibling.mkdir()
    (sibling / "f.txt").write_text("x")
    for path in ("/etc/hostname", str(sibling / "f.txt"), str(tmp_path)):
        result = call(ReadFile(), ctx, path=path)
        assert result.is_error and "outside the workspace" in result.content, path
    inside = ctx.workspace / "in.txt"
    inside.write_text("ok")
    assert call(ReadFile(), ctx, path=str(inside)).content == "ok"


def test_symlinks_pointing_out_are_refused(tmp_path):
    ctx = make_ctx(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    (ctx.workspace / "etc").symlink_to("/etc")
    (ctx.workspace / "leak.txt").symlink_to(secret)
    for tool, args in (
        (ReadFile(), {"path": "etc/passwd"}),
        (ListDir(), {"path": "etc"}),
        (ReadFile(), {"path": "leak.txt"}),
        (WriteFile(), {"path": "leak.txt", "content": "overwritten"}),
        (AppendFile(), {"path": "leak.txt", "content": "more"}),
        (EditFile(), {"path": "leak.txt", "old_text": "top", "new_text": "no"}),
    ):
        result = call(tool, ctx, **args)
        assert result.is_error and "symlink resolves outside workspace" in result.content, (tool.name, args)
    assert secret.read_text() == "top secret"


def test_new_file_under_a_symlinked_dir_is_refused(tmp_path):
    ctx = make_ctx(tmp_path)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (ctx.workspace / "out").symlink_to(outside)
    result = call(WriteFile(), ctx, path="out/deeper/new.txt", content="x")
    assert result.is_error and "symlink" in result.content
    assert list(outside.iterdir()) == []


def test_symlink_inside_the_workspace_is_followed(tmp_path):
    ctx = make_ctx(tmp_path)
    (ctx.workspace / "real.txt").write_text("data")
    (ctx.workspace / "alias.txt").symlink_to(ctx.workspace / "real.txt")
    assert call(ReadFile(), ctx, path="alias.txt").content == "data"


def test_unrestricted_reaches_outside(tmp_path):
    ctx = make_ctx(tmp_path, restrict_to_workspace=False)
    (tmp_path / "outside.txt").write_text("shared")
    assert call(ReadFile(), ctx, path=str(tmp_path / "outside.txt")).content == "shared"


@pytest.mark.parametrize("restricted", [True, False])
def test_config_file_refused_even_when_the_workspace_contains_it(tmp_path, isolated_home, restricted):
    config = default_config_path()
    config.write_text('{"providers": {"openai": {"api_key": "fk-live"}}}')
    (isolated_home / "wallet").mkdir()
    (isolated_home / "wallet" / "ewallet.pem").write_text("key")
    # The workspace is PICOORA_HOME itself, so the config file is "inside" it.
    ctx = make_ctx(tmp_path, restrict_to_workspace=restricted)
    ctx.workspace = isolated_home
    for path in ("config.json", str(config), "wallet/ewallet.pem"):
        result = call(ReadFile(), ctx, path=path)
        assert result.is_error and "configuration or secrets" in result.content, path
    assert call(WriteFile(), ctx, path="config.json", content="{}").is_error
    assert "fk-live" in config.read_text()
    # The default workspace inside PICOORA_HOME stays usable.
    assert not call(WriteFile(), ctx, path="workspace/notes.md", content="ok").is_error


def test_extra_protected_paths_from_settings(tmp_path):
    ctx = make_ctx(tmp_path, settings={"protected_paths": [str(tmp_path / "ws" / "private")]})
    (ctx.workspace / "private").mkdir()
    (ctx.workspace / "private" / "key.txt").write_text("k")
    assert call(ReadFile(), ctx, path="private/key.txt").is_error
    assert call(ListDir(), ctx, path="private").is_error


def test_edit_file_go_error_texts(tmp_path):
    ctx = make_ctx(tmp_path)
    (ctx.workspace / "f.txt").write_text("alpha beta alpha")
    missing = call(EditFile(), ctx, path="nope.txt", old_text="a", new_text="b")
    assert missing.content == "Error: file not found: nope.txt"
    absent = call(EditFile(), ctx, path="f.txt", old_text="gamma", new_text="b")
    assert absent.content == "Error: old_text not found in file. Make sure it matches exactly"
    twice = call(EditFile(), ctx, path="f.txt", old_text="alpha", new_text="b")
    assert twice.content == "Error: old_text appears 2 times. Please provide more context to make it unique"
    ok = call(EditFile(), ctx, path="f.txt", old_text="beta", new_text="BETA")
    assert ok.content == "File edited: f.txt"
    assert (ctx.workspace / "f.txt").read_text() == "alpha BETA alpha"


def test_read_file_pages_through_a_big_file(tmp_path):
    ctx = make_ctx(tmp_path, settings={"files": {"max_read_chars": 1000}})
    (ctx.workspace / "big.txt").write_text("".join(f"line {i:04d}\n" for i in range(1, 501)))  # 10 chars a line
    first = call(ReadFile(), ctx, path="big.txt").content
    assert first.startswith("line 0001\n")
    assert "line 0100\n" in first and "line 0101" not in first
    assert first.endswith("[lines 1-100 shown; the file continues: read_file offset=101]")
    page = call(ReadFile(), ctx, path="big.txt", offset=101, limit=3).content
    assert page.startswith("line 0101\nline 0102\nline 0103\n")
    assert "offset=104" in page
    assert call(ReadFile(), ctx, path="big.txt", offset=499).content == "line 0499\nline 0500\n"
    assert call(ReadFile(), ctx, path="big.txt", offset=900).is_error


def test_read_file_refuses_binary_and_directories(tmp_path):
    ctx = make_ctx(tmp_path)
    (ctx.workspace / "img.bin").write_bytes(b"\x89PNG\0\0\0")
    (ctx.workspace / "d").mkdir()
    assert "binary file" in call(ReadFile(), ctx, path="img.bin").content
    assert "is a directory" in call(ReadFile(), ctx, path="d").content
    assert call(ReadFile(), ctx, path="missing.txt").content == "Error: file not found: missing.txt"


def test_list_dir_caps_entries(tmp_path):
    ctx = make_ctx(tmp_path, settings={"files": {"max_list_entries": 3}})
    for name in "abcde":
        (ctx.workspace / name).write_text("")
    lines = call(ListDir(), ctx).content.splitlines()
    assert lines == ["FILE: a", "FILE: b", "FILE: c", "... (2 more entries not shown)"]


def test_append_creates_parents_and_appends_in_place(tmp_path):
    ctx = make_ctx(tmp_path)
    call(AppendFile(), ctx, path="log/day.md", content="a")
    inode = os.stat(ctx.workspace / "log" / "day.md").st_ino
    call(AppendFile(), ctx, path="log/day.md", content="b")
    assert (ctx.workspace / "log" / "day.md").read_text() == "ab"
    assert os.stat(ctx.workspace / "log" / "day.md").st_ino == inode
