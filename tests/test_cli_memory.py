"""``picoora memory``: add / search / list / forget / export / import, with no model in the loop."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from tests.cli_support import run_cli, write_config
from tests.fakes._http import closed_port_url

FACTS = [
    ("My favourite programming language is Go", "preference"),
    ("My sister Alice lives in Lyon", "person"),
    ("The staging server is called kestrel-7", "project"),
]


def _memory(home, *args, stdin=""):
    return run_cli("memory", *args, home=home, stdin=stdin)


def _json(result):
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.slow
def test_add_search_list_forget_export_import_round_trip(isolated_home, tmp_path):
    # Keyword-only recall keeps this test fast; the semantic path is covered in test_cli_agent.
    write_config(isolated_home, ollama_url=closed_port_url(), embedder="none")
    for text, category in FACTS:
        added = _memory(isolated_home, "add", text, "--category", category, "--importance", "0.9")
        assert added.returncode == 0, added.stderr
        assert added.stdout.startswith("Remembered ")

    listed = _json(_memory(isolated_home, "list", "--json"))
    assert sorted(m["content"] for m in listed) == sorted(text for text, _ in FACTS)
    for item in listed:
        assert {"id", "content", "importance", "category", "created_at"} <= set(item)
        assert item["importance"] == 0.9
        datetime.fromisoformat(item["created_at"])  # ISO 8601

    search = _memory(isolated_home, "search", "kestrel-7 staging", "-n", "1", "--json")
    found = _json(search)
    assert [m["content"] for m in found] == ["The staging server is called kestrel-7"]
    assert 0 < found[0]["score"] <= 1
    assert "keyword-only" in search.stderr  # no embedder: recall says it is degraded

    table = _memory(isolated_home, "search", "kestrel-7")
    assert table.returncode == 0
    assert "% match]" in table.stdout and "kestrel-7" in table.stdout

    sister = next(m for m in listed if "Alice" in m["content"])
    forgot = _memory(isolated_home, "forget", sister["id"])
    assert forgot.returncode == 0
    again = _memory(isolated_home, "forget", sister["id"])
    assert again.returncode == 1
    assert "no memory with id" in again.stderr

    export_file = tmp_path / "memories.jsonl"
    assert _memory(isolated_home, "export", str(export_file)).returncode == 0
    exported = [json.loads(line) for line in export_file.read_text().splitlines()]
    assert sorted(m["content"] for m in exported) == sorted(text for text, _ in FACTS if "Alice" not in text)

    # Import into a fresh home keeps ids and timestamps; importing twice adds nothing.
    other_home = tmp_path / "other-home"
    other_home.mkdir()
    write_config(other_home, ollama_url=closed_port_url(), embedder="none")
    first = _memory(other_home, "import", str(export_file))
    assert first.returncode == 0, first.stderr
    assert "Imported 2 memories" in first.stdout
    second = _memory(other_home, "import", "-", stdin=export_file.read_text())
    assert "Imported 0 memories (2 already present)" in second.stdout
    imported = {m["id"]: m for m in _json(_memory(other_home, "list", "--json"))}
    for original in exported:
        copy = imported[original["id"]]
        assert copy["content"] == original["content"]
        assert copy["created_at"] == original["created_at"]
        assert copy["category"] == original["category"]


@pytest.mark.slow
def test_export_to_stdout_is_json_lines(isolated_home):
    write_config(isolated_home, ollama_url=closed_port_url(), embedder="none")
    _memory(isolated_home, "add", FACTS[0][0])
    result = _memory(isolated_home, "export")
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["content"] == FACTS[0][0]


@pytest.mark.slow
def test_bad_import_line_imports_nothing_and_names_the_line(isolated_home, tmp_path):
    write_config(isolated_home, ollama_url=closed_port_url(), embedder="none")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a1", "content": "fine"}\n{"id": "a2", "content": \n')
    result = _memory(isolated_home, "import", str(bad))
    assert result.returncode == 1
    assert "line 2" in result.stderr
    assert _json(_memory(isolated_home, "list", "--json")) == []


def test_importance_out_of_range_is_a_usage_error(isolated_home):
    write_config(isolated_home, ollama_url=closed_port_url(), embedder="none")
    result = _memory(isolated_home, "add", "something", "--importance", "3")
    assert result.returncode == 2
    assert "--importance" in result.stderr


@pytest.mark.slow  # several real CLI runs
def test_import_lines_without_ids_get_ids_and_a_rerun_adds_nothing(isolated_home, tmp_path):
    write_config(isolated_home, ollama_url=closed_port_url(), embedder="none")
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"content": "The boiler is serviced every March"}\n'
                     '{"content": "Rita prefers tea", "category": "person", "id": ""}\n'
                     '{"id": "keep01", "content": "The car is blue"}\n')
    first = _memory(isolated_home, "import", str(notes))
    assert first.returncode == 0 and "Imported 3 memories" in first.stdout, first.stderr
    again = _memory(isolated_home, "import", str(notes))
    assert "Imported 0 memories (3 already present)" in again.stdout
    stored = {m["content"]: m for m in _json(_memory(isolated_home, "list", "--json"))}
    assert len(stored) == 3 and all(m["id"] for m in stored.values())
    assert stored["The car is blue"]["id"] == "keep01" and stored["Rita prefers tea"]["category"] == "person"
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"id": "x"}\n')
    refused = _memory(isolated_home, "import", str(empty))
    assert refused.returncode == 1 and 'line 1: each line needs at least "content"' in refused.stderr
