"""``picoora docs`` through the real command: add (a folder with a broken file), list/search --json shapes,
--as a person, --shared for the owner only, remove, reindex."""

from __future__ import annotations

import json

import pytest

from tests.cli_support import run_cli, write_config
from tests.fakes._http import closed_port_url
from tests.helpers.documents import write_pdf

pytestmark = pytest.mark.slow  # real CLI processes, about a second each


def _ok(result):
    assert result.returncode == 0, result.stderr
    return result


def test_add_list_search_remove_reindex(isolated_home, tmp_path):
    path = write_config(isolated_home, ollama_url=closed_port_url(), embedder="none")
    data = json.loads(path.read_text())
    data["users"] = [{"name": "alice"}]
    path.write_text(json.dumps(data))
    folder = tmp_path / "manuals"
    folder.mkdir()
    write_pdf(folder / "boiler.pdf", ["Welcome to your boiler.", "Fault F22 means the water pressure is low."],
              title="Boiler manual")
    (folder / "notes.md").write_text("# Garage\n\nThe garage door code is 4471.")
    (folder / "broken.docx").write_bytes(b"not a word file")

    added = _ok(run_cli("docs", "add", str(folder), "--shared", home=isolated_home))
    assert added.stdout.strip() == "2 added, 0 replaced, 0 unchanged, 1 failed"
    assert added.stderr.count("\n") == 1 and "broken.docx" in added.stderr  # one line for the broken file
    again = _ok(run_cli("docs", "add", str(folder), "--shared", home=isolated_home))
    assert again.stdout.strip() == "0 added, 0 replaced, 2 unchanged, 1 failed"

    listed = json.loads(_ok(run_cli("docs", "list", "--json", home=isolated_home)).stdout)
    assert sorted(d["title"] for d in listed) == ["Boiler manual", "Garage"]
    assert {"id", "source", "title", "chunks", "shared", "added_at"} <= set(listed[0])

    found = json.loads(_ok(run_cli("docs", "search", "F22 water pressure", "-n", "3", "--json",
                                   home=isolated_home)).stdout)
    assert isinstance(found, list) and found[0]["title"] == "Boiler manual"
    assert {"text", "source", "title", "score", "chunk", "page"} <= set(found[0])
    assert found[0]["page"] == 2 and 0 < found[0]["score"] <= 1 and found[0]["source"] == str(folder / "boiler.pdf")

    own = tmp_path / "alice.txt"
    own.write_text("Alice's bike lock combination is 9182.")
    _ok(run_cli("docs", "add", str(own), "--as", "alice", home=isolated_home))
    refused = run_cli("docs", "add", str(own), "--as", "alice", "--shared", home=isolated_home)
    assert refused.returncode == 2 and "only the owner" in refused.stderr
    as_alice = json.loads(_ok(run_cli("docs", "list", "--json", "--as", "alice", home=isolated_home)).stdout)
    assert sorted(d["title"] for d in as_alice) == ["Boiler manual", "Garage", "alice"]
    owner_search = _ok(run_cli("docs", "search", "bike lock combination", "--json", home=isolated_home))
    assert json.loads(owner_search.stdout) == []

    _ok(run_cli("docs", "remove", str(folder / "notes.md"), home=isolated_home))
    missing = run_cli("docs", "remove", "nothing-here", home=isolated_home)
    assert missing.returncode == 1 and "docs list" in missing.stderr
    reindexed = _ok(run_cli("docs", "reindex", home=isolated_home))
    assert reindexed.stdout.startswith("Reindexed ")
    text = _ok(run_cli("docs", "search", "garage door code", home=isolated_home)).stdout
    assert text.strip() == "Nothing in the documents answers that."
