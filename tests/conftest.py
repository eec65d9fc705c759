"""Shared fixtures: every test gets its own PICOORA_HOME and no PICO_* variables from the machine."""

from __future__ import annotations

import os

import pytest

from picoora.providers import key_env, provider_names


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    home = tmp_path / "picoora-home"
    home.mkdir()
    monkeypatch.setenv("PICOORA_HOME", str(home))
    for name in list(os.environ):
        if name.startswith("PICO_") and not name.startswith("PICO_TEST_"):
            monkeypatch.delenv(name, raising=False)
    for variable in filter(None, map(key_env, provider_names())):  # a developer's own OPENROUTER_API_KEY
        monkeypatch.delenv(variable, raising=False)  # must not reach a test's config
    return home
