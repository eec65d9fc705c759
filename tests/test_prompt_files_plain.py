"""Prompt files and notes are read only as plain files (issue 36): a root gateway's commands run as another
user, who owns the workspace and could plant ``IDENTITY.md -> /etc/shadow`` for the gateway to read into
the prompt, or a FIFO that blocks every turn's read."""

from __future__ import annotations

import os
import threading

from picoora.store.files import FileStore


def test_a_symlinked_or_fifo_prompt_file_is_not_followed_or_waited_on(tmp_path):
    outside = tmp_path / "outside-secret.txt"
    outside.write_text("root-only words")
    workspace = tmp_path / "workspace"
    store = FileStore(workspace)
    try:
        (workspace / "IDENTITY.md").symlink_to(outside)
        os.mkfifo(workspace / "SOUL.md")
        (workspace / "USER.md").write_text("The user likes tea.")
        read: dict = {}
        # In a thread: a build that opens the FIFO blocks for ever; the test must fail, not hang.
        reader = threading.Thread(target=lambda: read.update({p.name: p.content for p in store.prompts.list()}),
                                  daemon=True)
        reader.start()
        reader.join(10)
        assert not reader.is_alive(), "reading the prompt files blocked on the FIFO"
        prompts = read
    finally:
        store.close()
    assert "root-only words" not in str(prompts)
    assert "IDENTITY.md is a symlink" in prompts["IDENTITY.md"] and "not a plain file" in prompts["SOUL.md"]
    assert prompts["USER.md"] == "The user likes tea."
