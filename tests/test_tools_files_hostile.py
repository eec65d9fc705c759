"""File tools against a hostile workspace: FIFOs, sparse files, symlink races, hard links, the store's own files."""

from __future__ import annotations

import os
import threading
import time

import pytest

from picoora.store.files import FileStore
from picoora.tools.files import AppendFile, EditFile, ListDir, ReadFile, WriteFile
from tests.tools_support import call, make_ctx


def test_reading_a_fifo_is_refused_without_blocking(tmp_path):
    ctx = make_ctx(tmp_path)
    os.mkfifo(ctx.workspace / "pipe")
    started = time.monotonic()
    for tool, args in ((ReadFile(), {}), (EditFile(), {"old_text": "a", "new_text": "b"}),
                       (AppendFile(), {"content": "x"}), (WriteFile(), {"content": "x"})):
        result = call(tool, ctx, path="pipe", **args)
        assert result.is_error and "not a regular file" in result.content, tool.name
    assert time.monotonic() - started < 5


def test_a_huge_sparse_file_is_refused_by_its_size_before_reading(tmp_path):
    ctx = make_ctx(tmp_path, settings={"files": {"max_file_bytes": 10_000_000}})
    with open(ctx.workspace / "sparse.txt", "wb") as fh:
        fh.write(b"text at the start\n")
        fh.truncate(1 << 30)  # 1 GiB, nearly all of it a hole
    for tool, args in ((ReadFile(), {}), (EditFile(), {"old_text": "text", "new_text": "t"})):
        result = call(tool, ctx, path="sparse.txt", **args)
        assert result.is_error and "1073741824 bytes" in result.content and "max_file_bytes" in result.content


def test_one_enormous_line_is_read_in_bounded_pieces(tmp_path):
    ctx = make_ctx(tmp_path, settings={"files": {"max_read_chars": 1000}})
    (ctx.workspace / "long.txt").write_text("x" * 5_000_000 + "\nsecond\n")
    result = call(ReadFile(), ctx, path="long.txt")
    assert result.is_error and "longer than 1000 characters" in result.content
    assert call(ReadFile(), ctx, path="long.txt", offset=2).content == "second\n"


def test_hard_linked_files_are_not_written(tmp_path):
    ctx = make_ctx(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    os.link(outside, ctx.workspace / "link.txt")
    for tool, args in ((WriteFile(), {"content": "x"}), (AppendFile(), {"content": "x"}),
                       (EditFile(), {"old_text": "keep", "new_text": "lost"})):
        result = call(tool, ctx, path="link.txt", **args)
        assert result.is_error and "hard link" in result.content, tool.name
    assert outside.read_text() == "keep me"


def test_a_directory_flipped_to_a_symlink_never_leaks_outside(tmp_path):
    """A thread swaps ``d`` between a real directory and a symlink to a secret directory while the
    tools read and append: no call may read the secret or write next to it."""
    ctx = make_ctx(tmp_path)
    secret_dir = tmp_path / "secret"
    secret_dir.mkdir()
    (secret_dir / "f.txt").write_text("TOP SECRET\n")
    real_dir = ctx.workspace / "real"
    real_dir.mkdir()
    (real_dir / "f.txt").write_text("harmless\n")
    flip = ctx.workspace / "d"
    stop = threading.Event()

    def flipper() -> None:
        while not stop.is_set():
            for target in (real_dir, secret_dir):
                tmp = ctx.workspace / "d.new"
                try:
                    tmp.unlink()
                except FileNotFoundError:
                    pass
                tmp.symlink_to(target)
                os.replace(tmp, flip)

    thread = threading.Thread(target=flipper, daemon=True)
    thread.start()
    try:
        for _ in range(200):
            read = call(ReadFile(), ctx, path="d/f.txt")
            assert "TOP SECRET" not in read.content
            call(AppendFile(), ctx, path="d/f.txt", content="appended\n")
    finally:
        stop.set()
        thread.join()
    assert (secret_dir / "f.txt").read_text() == "TOP SECRET\n"


def test_the_stores_private_files_are_out_of_the_tools_reach(tmp_path):
    ctx = make_ctx(tmp_path)
    store = FileStore(ctx.workspace)
    try:
        from picoora.messages import Message

        store.transcripts.append("cli:default", [Message(role="user", content="hello")])
        store.sessions.append("cli:default", [Message(role="user", content="hello")])
        private = ".picoora"
        for tool, args in (
            (WriteFile(), {"path": f"{private}/store.lock", "content": ""}),
            (AppendFile(), {"path": f"{private}/transcripts/cli_default.jsonl", "content": "{broken\n"}),
            (WriteFile(), {"path": f"{private}/transcripts/cli_default.jsonl", "content": ""}),
            (ReadFile(), {"path": f"{private}/sessions/cli_default.json"}),
            (ListDir(), {"path": private}),
            (EditFile(), {"path": f"{private}/sessions/cli_default.json", "old_text": "hello", "new_text": "bye"}),
        ):
            result = call(tool, ctx, **args)
            assert result.is_error and "private files" in result.content, (tool.name, args)
        (ctx.workspace / "sneaky").symlink_to(ctx.workspace / private)
        assert "private files" in call(ReadFile(), ctx, path="sneaky/sessions/cli_default.json").content
        assert [e.message.content for e in store.transcripts.read("cli:default")] == ["hello"]
    finally:
        store.close()


@pytest.mark.parametrize("restricted", [True, False])
def test_private_files_stay_refused_when_restriction_is_off(tmp_path, restricted):
    ctx = make_ctx(tmp_path, restrict_to_workspace=restricted)
    FileStore(ctx.workspace).close()
    result = call(ReadFile(), ctx, path=str(ctx.workspace / ".picoora" / "store.lock"))
    assert result.is_error and "private files" in result.content
