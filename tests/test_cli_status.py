"""``picoora status``: a real check of Ollama and the model, the storage and what it holds."""

from __future__ import annotations

import pytest

from tests.cli_support import run_cli, write_config
from tests.fakes._http import closed_port_url
from tests.fakes.ollama_server import FakeOllama


def _line(output: str, label: str) -> str:
    return next(line for line in output.splitlines() if line.startswith(f"{label}:"))


@pytest.mark.slow
def test_status_with_ollama_up_and_the_model_pulled(isolated_home):
    with FakeOllama(models=("qwen3:latest", "gemma3:1b"), tool_models=("qwen3:latest",)) as fake:
        write_config(isolated_home, ollama_url=fake.url, embedder="none")
        assert run_cli("memory", "add", "The cat is called Miso", home=isolated_home).returncode == 0
        result = run_cli("status", home=isolated_home)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "✓" in _line(out, "Config")
    assert _line(out, "Provider") == f"Provider:  ollama at {fake.url} ✓ answers (2 models pulled)"
    assert "qwen3:latest ✓ pulled, can call tools" in _line(out, "Model")
    assert "files in" in _line(out, "Storage")
    assert "1 memory" in _line(out, "Stored")
    assert "keywords only" in _line(out, "Embedder")


@pytest.mark.slow
def test_status_reports_a_model_that_is_not_pulled_or_cannot_use_tools(isolated_home):
    with FakeOllama(models=("gemma3:1b",), tool_models=()) as fake:
        write_config(isolated_home, ollama_url=fake.url, model="qwen3:latest")
        missing = run_cli("status", home=isolated_home)
        write_config(isolated_home, ollama_url=fake.url, model="gemma3:1b")
        toolless = run_cli("status", home=isolated_home)
    assert "✗ not pulled: run `ollama pull qwen3:latest`" in _line(missing.stdout, "Model")
    assert missing.returncode == 1
    assert "cannot call tools" in _line(toolless.stdout, "Model")
    assert "(1 model pulled)" in _line(toolless.stdout, "Provider")


def test_status_with_ollama_down_exits_1_and_says_what_to_run(isolated_home):
    url = closed_port_url()
    write_config(isolated_home, ollama_url=url, embedder="minilm")
    result = run_cli("status", home=isolated_home)
    assert result.returncode == 1
    provider = _line(result.stdout, "Provider")
    assert "✗ not reachable" in provider and "ollama serve" in provider
    assert "cannot check" in _line(result.stdout, "Model")
    assert "all-MiniLM-L6-v2" in _line(result.stdout, "Embedder")


def test_status_without_a_config_file_points_to_onboard(isolated_home):
    result = run_cli("status", home=isolated_home, extra_env={"PICO_PROVIDERS_OLLAMA_API_BASE": closed_port_url()})
    assert result.returncode == 1
    assert "✗ not found: run `picoora onboard`" in _line(result.stdout, "Config")


@pytest.mark.slow
def test_status_json_lists_every_check_and_exit_code_follows_them(isolated_home):
    import json

    with FakeOllama(models=("qwen3:latest",)) as fake:
        write_config(isolated_home, ollama_url=fake.url, embedder="none")
        assert run_cli("memory", "add", "The cat is called Miso", home=isolated_home).returncode == 0
        healthy = run_cli("status", "--json", home=isolated_home)
    down = run_cli("status", "--json", home=isolated_home)  # the fake has stopped: nothing answers there
    report = json.loads(healthy.stdout)
    assert healthy.returncode == 0 and report["ok"] is True
    assert [c["check"] for c in report["checks"]] == ["config", "workspace", "provider", "model", "source",
                                                      "storage", "stored", "embedder", "exec",
                                                      "gateway", "cron", "heartbeat", "channels"]
    checks = {c["check"]: c for c in report["checks"]}
    assert checks["provider"] == {"check": "provider", "ok": True, "provider": "ollama", "api_base": fake.url,
                                  "api_key_set": False, "reachable": True, "models_pulled": 1}
    assert checks["model"] == {"check": "model", "ok": True, "model": "qwen3:latest", "pulled": True, "tools": True}
    assert checks["stored"]["memories"] == 1 and checks["storage"]["backend"] == "files"
    assert report["problems"] == []
    assert report["model"] == {"session": "cli:default", "provider": "ollama", "model": "qwen3:latest",
                               "source": "config",
                               "default": {"provider": "ollama", "model": "qwen3:latest", "source": "config",
                                           "env": []}}
    broken = json.loads(down.stdout)
    assert down.returncode == 1 and broken["ok"] is False
    assert {c["check"] for c in broken["checks"] if not c["ok"]} == {"provider", "model"}
    down_checks = {c["check"]: c for c in broken["checks"]}
    assert down_checks["provider"]["reachable"] is False and down_checks["model"]["pulled"] is None
    assert [p.split(":")[0] for p in broken["problems"]] == ["Provider", "Model"]
    assert not any(isinstance(value, str) and " " in value and key not in ("path", "location", "spec")
                   for check in broken["checks"] for key, value in check.items())  # facts, not sentences


@pytest.mark.slow
def test_status_checks_the_model_the_default_session_answers_with_and_says_why(isolated_home):
    """A model chosen with /model is the session's: status checks that one, not the config's, and says so."""
    import asyncio
    import json

    from picoora.assistant import build_assistant
    from picoora.config import load_config

    with FakeOllama(models=("qwen3:latest", "gemma3:1b"), tool_models=("qwen3:latest",)) as fake:
        write_config(isolated_home, ollama_url=fake.url)
        from_file = run_cli("status", home=isolated_home)
        from_env = run_cli("status", "--json", home=isolated_home,
                           extra_env={"PICO_AGENTS_DEFAULTS_MODEL": "gemma3:1b"})

        async def choose():
            async with build_assistant(load_config()) as assistant:
                await assistant.set_session_model("cli:default", "gemma3:1b")

        asyncio.run(choose())
        chosen = run_cli("status", home=isolated_home)
        # The environment now moves the default to another provider: the session keeps its choice, the
        # status checks the session's provider, and says what the default would be.
        elsewhere = run_cli("status", home=isolated_home, extra_env={"PICO_AGENTS_DEFAULTS_PROVIDER": "openai",
                                                                   "PICO_AGENTS_DEFAULTS_MODEL": "gpt-4o"})
    assert _line(from_file.stdout, "Source") == "Source:    from the config file"
    assert "qwen3:latest ✓" in _line(from_file.stdout, "Model")

    report = json.loads(from_env.stdout)
    assert report["model"]["model"] == "gemma3:1b" and report["model"]["source"] == "env"
    assert report["model"]["default"]["env"] == ["PICO_AGENTS_DEFAULTS_MODEL"]
    checks = {c["check"]: c for c in report["checks"]}
    assert checks["model"]["model"] == "gemma3:1b" and checks["model"]["pulled"] is True
    assert checks["source"] == {"check": "source", "ok": True, "source": "env", "env": ["PICO_AGENTS_DEFAULTS_MODEL"]}

    assert "gemma3:1b ✓ pulled" in _line(chosen.stdout, "Model")
    source = _line(chosen.stdout, "Source")
    assert "chosen for session cli:default with /model" in source
    assert "ollama/qwen3:latest (from the config file)" in source
    assert "`/model default`" in source

    assert elsewhere.returncode == 0, elsewhere.stdout
    assert _line(elsewhere.stdout, "Provider").startswith("Provider:  ollama at ")
    assert "gemma3:1b ✓" in _line(elsewhere.stdout, "Model")
    assert ("the default is openai/gpt-4o (set by PICO_AGENTS_DEFAULTS_PROVIDER and PICO_AGENTS_DEFAULTS_MODEL "
            "over the config file)") in _line(elsewhere.stdout, "Source")


def test_status_counts_the_documents_on_files(tmp_path):
    from picoora.cli.status import _storage_lines
    from picoora.config import Config
    from picoora.store.base import DocPage
    from picoora.store.files import FileStore

    config = Config()
    config.agents.defaults.workspace = str(tmp_path / "ws")
    config.memory.embedder = "none"
    store = FileStore(tmp_path / "ws", embedder=None, docs=config.docs)
    store.documents.add("/d/a.md", "A", [DocPage("The boiler shows E42 when the pressure is low.")], shared=True)
    store.documents.add("/d/b.md", "B", [DocPage(" ".join(f"Sentence {n} is about the shed." for n in range(40)))])
    chunks = store.documents.counts().chunks
    store.close()
    lines, _, _ = _storage_lines(config, tmp_path / "ws")
    stored = next(line for line in lines if line.label == "Stored")
    assert stored.text == f"0 memories, 0 daily notes, 0 sessions, 0 transcript entries, 0 prompt files, " \
                          f"2 documents (1 shared, {chunks} chunks)"
    assert chunks > 2 and stored.to_json() == {
        "check": "stored", "ok": True, "memories": 0, "daily_notes": 0, "sessions": 0, "transcript_entries": 0,
        "prompts": 0, "documents": 2, "shared_documents": 1, "document_chunks": chunks}
