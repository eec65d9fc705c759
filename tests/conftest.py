"""Shared fixtures: every test gets its own PICOORA_HOME and HOME, no PICO_* variables from the machine, and
fails when it reads the real HOME anyway (tests/home_guard.py)."""

from __future__ import annotations

import os

import pytest

from picoora.providers import key_env, provider_names
from tests.home_guard import PLAYWRIGHT_BROWSERS, REAL_HOME, watching


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    home = tmp_path / "picoora-home"
    home.mkdir()
    monkeypatch.setenv("PICOORA_HOME", str(home))
    user_home = tmp_path / "user-home"  # ~ for this test: a PicoOraClaw home or dotfile of the developer's stays unseen
    user_home.mkdir()
    monkeypatch.setenv("HOME", str(user_home))
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", PLAYWRIGHT_BROWSERS)  # installed browsers, not the user's data
    for name in list(os.environ):
        if name.startswith(("PICO_", "PICOCLAW_")) and not name.startswith("PICO_TEST_"):
            monkeypatch.delenv(name, raising=False)
    for variable in filter(None, map(key_env, provider_names())):  # a developer's own OPENROUTER_API_KEY
        monkeypatch.delenv(variable, raising=False)  # must not reach a test's config
    with watching() as reads:
        yield home
    if reads:
        pytest.fail(f"the test read the real HOME ({REAL_HOME}): {', '.join(sorted(set(reads))[:5])}")
