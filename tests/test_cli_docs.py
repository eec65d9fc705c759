"""``picoora docs`` through the real command: add (a folder with a broken file), list/search --json shapes,
--as a person, --shared for the owner only, remove, reindex."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys

import pytest

from tests.cli_support import REPO, run_cli, write_config
from tests.fakes._http import closed_port_url
from tests.helpers.documents import write_pdf
from tests.pty_support import read_until

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


def test_add_a_web_page_by_url(isolated_home):
    """Through the same guarded fetcher as web_fetch: the loopback test server only by the owner's exemption."""
    from tests.fakes.web_page_server import WebPageServer

    path = write_config(isolated_home, ollama_url=closed_port_url(), embedder="none")
    page = "<html><head><title>Opening hours</title></head><body><p>The library opens at nine.</p></body></html>"
    with WebPageServer(status=200, page=page) as site:
        refused = run_cli("docs", "add", f"{site.url}/hours", home=isolated_home)
        assert refused.returncode != 0 and "1 failed" in refused.stdout  # 127.0.0.1 is refused by default
        data = json.loads(path.read_text())
        data["tools"] = {"web_fetch": {"allow_hosts": ["127.0.0.1"]}}
        path.write_text(json.dumps(data))
        _ok(run_cli("docs", "add", f"{site.url}/hours", home=isolated_home))
    [hit] = json.loads(_ok(run_cli("docs", "search", "library opens nine", "--json", home=isolated_home)).stdout)
    assert hit["title"] == "Opening hours" and hit["source"] == f"{site.url}/hours"


def test_a_folder_added_on_a_terminal_shows_a_progress_bar(isolated_home, tmp_path):
    write_config(isolated_home, ollama_url=closed_port_url(), embedder="none")
    folder = tmp_path / "notes"
    folder.mkdir()
    for n in range(3):
        (folder / f"note{n}.md").write_text(f"# Note {n}\n\nThe locker number is {n}.")
    terminal, child_end = pty.openpty()
    env = {**os.environ, "PICOORA_HOME": str(isolated_home), "COLUMNS": "100"}
    with subprocess.Popen([sys.executable, "-m", "picoora", "docs", "add", str(folder)], stdout=subprocess.PIPE,
                          stderr=child_end, env=env, cwd=REPO) as child:
        os.close(child_end)
        shown = read_until(terminal, b"Adding", 60, ended=lambda: child.poll() is not None)
        out, _ = child.communicate(timeout=60)
    os.close(terminal)
    assert child.returncode == 0 and b"3 added" in out
    assert b"Adding" in shown  # the bar, on the terminal's stderr (stdout keeps the one summary line)
