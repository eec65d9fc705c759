"""``picoora onboard --owner NAME``: the owner named in the config (a new one, or an existing config's owner
renamed with its other users kept), and a name that could not be a person's refused before anything is written."""

from __future__ import annotations

import json

import pytest

from tests.cli_support import run_cli
from tests.fakes.ollama_server import FakeOllama


def onboard(home, url, *args):
    return run_cli("onboard", "--non-interactive", *args, home=home, extra_env={"PICO_PROVIDERS_OLLAMA_API_BASE": url})


def test_a_new_config_names_the_owner(isolated_home):
    with FakeOllama() as fake:
        result = onboard(isolated_home, fake.url, "--owner", "ana")
    assert result.returncode == 0, result.stderr
    assert "The owner is ana: `picoora pair approve CODE --as ana`" in result.stdout
    users = json.loads((isolated_home / "config.json").read_text())["users"]
    assert users == [{"name": "ana", "owner": True, "identities": []}]


@pytest.mark.slow
def test_an_existing_config_keeps_its_other_users_and_renames_its_owner(isolated_home):
    path = isolated_home / "config.json"
    with FakeOllama() as fake:
        assert onboard(isolated_home, fake.url).returncode == 0
        data = json.loads(path.read_text())
        data["users"] = [{"name": "sam", "identities": ["telegram:8"]},
                         {"name": "me", "owner": True, "identities": ["telegram:1"]}]
        path.write_text(json.dumps(data))
        result = onboard(isolated_home, fake.url, "--owner", "ana")
    assert result.returncode == 0, result.stderr
    assert json.loads(path.read_text())["users"] == [{"name": "sam", "identities": ["telegram:8"]},
                                                     {"name": "ana", "owner": True, "identities": ["telegram:1"]}]


@pytest.mark.slow
def test_a_name_that_is_no_person_name_is_refused_and_nothing_is_written(isolated_home):
    with FakeOllama() as fake:
        for bad in ("", "a b", "../etc", "x" * 33):
            result = onboard(isolated_home, fake.url, "--owner", bad)
            assert result.returncode == 2 and "--owner" in result.stderr and "Traceback" not in result.stderr, bad
    assert not (isolated_home / "config.json").exists()
