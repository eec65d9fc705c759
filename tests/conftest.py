"""Shared fixtures: every test gets its own PICOORA_HOME and no PICO_* variables from the machine."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    home = tmp_path / "picoora-home"
    home.mkdir()
    monkeypatch.setenv("PICOORA_HOME", str(home))
    for name in list(os.environ):
        if name.startswith("PICO_") and not name.startswith("PICO_TEST_"):
            monkeypatch.delenv(name, raising=False)
    return home
