"""Config mistakes a new user makes, through the real CLI: a typo in an environment override is named
with the closest valid variable, a --config file that does not exist is refused (exit 2), a relative
workspace means the same folder wherever picoora runs, and config.example.json works as copied."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.cli_support import REPO, closed_port_url_config, run_cli


def test_a_typo_in_an_environment_override_is_named_with_the_closest_valid_name(isolated_home):
    closed_port_url_config(isolated_home)
    result = run_cli("memory", "list", home=isolated_home, extra_env={"PICO_AGENTS_DEFAULTS_MODLE": "llama3.2"})
    assert result.returncode == 0, result.stderr
    assert ("the environment variable PICO_AGENTS_DEFAULTS_MODLE matches no setting and is ignored "
            "(did you mean PICO_AGENTS_DEFAULTS_MODEL?)") in result.stderr
    assert result.stderr.count("PICO_AGENTS_DEFAULTS_MODLE") == 1


def test_a_config_file_that_does_not_exist_is_refused(isolated_home, tmp_path):
    missing = tmp_path / "conifg.json"
    for command in (["agent", "-m", "hello"], ["status"], ["memory", "list"]):
        result = run_cli("--config", str(missing), *command, home=isolated_home)
        assert result.returncode == 2, (command, result.stderr)
        assert f"the config file {missing} does not exist" in result.stderr
        assert "Traceback" not in result.stderr
    assert not (isolated_home / "workspace").exists()  # nothing was set up on the defaults instead


def test_onboard_may_create_the_file_named_by_config(isolated_home, tmp_path):
    fresh = tmp_path / "new" / "config.json"
    result = run_cli("--config", str(fresh), "onboard", "--non-interactive", home=isolated_home,
                     extra_env={"PICO_PROVIDERS_OLLAMA_API_BASE": "http://127.0.0.1:9"})
    assert result.returncode in (0, 1), result.stderr
    assert fresh.is_file()


def test_a_relative_workspace_is_the_same_folder_from_any_directory(isolated_home, tmp_path):
    closed_port_url_config(isolated_home, workspace="my-workspace")
    env = {**os.environ, "PICOORA_HOME": str(isolated_home), "NO_COLOR": "1", "PYTHONPATH": str(REPO)}

    def picoora(cwd, *args):
        cwd.mkdir(exist_ok=True)
        return subprocess.run([sys.executable, "-m", "picoora", *args], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=60)

    added = picoora(tmp_path / "one", "memory", "add", "The boat is called Ondine")
    found = picoora(tmp_path / "two", "memory", "list", "--json")
    assert added.returncode == 0 and found.returncode == 0, added.stderr + found.stderr
    assert [m["content"] for m in json.loads(found.stdout)] == ["The boat is called Ondine"]
    assert (isolated_home / "my-workspace").is_dir() and not (tmp_path / "one" / "my-workspace").exists()


def test_config_example_works_as_copied(isolated_home):
    (isolated_home / "config.json").write_text((REPO / "config.example.json").read_text())
    result = run_cli("memory", "list", home=isolated_home)
    assert result.returncode == 0, result.stderr
    assert (isolated_home / "workspace").is_dir()  # the example's workspace follows PICOORA_HOME
