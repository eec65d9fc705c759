"""The registry and each channel's package agree: every registered channel has a package whose manifest
names it, builds its channel from its own config section, and points at a fake and tests that exist; an
extra it names is one pip can install."""

from __future__ import annotations

import sys

import pytest

from picoora.channel_registry import CHANNELS, Channels
from picoora.extras import EXTRAS
from picoora.gateway.channels import manifest_of, manifests
from picoora.gateway.channels.base import Channel
from tests.cli_support import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the 3.10 floor
    tomllib = pytest.importorskip("tomli")


def test_the_registry_lists_the_three_platforms_and_not_the_web_chat():
    assert CHANNELS == ("telegram", "discord", "slack")
    assert [m.name for m in manifests()] == list(CHANNELS)


@pytest.mark.parametrize("name", CHANNELS)
def test_a_channels_manifest_names_its_settings_class_fake_and_tests(name):
    found = manifest_of(name)
    assert found.name == name
    assert found.settings is Channels.model_fields[name].annotation
    assert issubclass(found.channel, Channel) and found.channel.name == name
    assert found.public_api.startswith("https://")
    assert (REPO / found.fake).is_file() and found.fake.startswith("tests/fakes/")
    assert found.tests and all((REPO / test).is_file() for test in found.tests)
    fake_module = found.fake.removesuffix(".py").replace("/", ".")
    assert all(fake_module in (REPO / test).read_text(encoding="utf-8") for test in found.tests)


@pytest.mark.parametrize("name", [name for name in CHANNELS if manifest_of(name).extra])
def test_an_extra_a_channel_names_is_declared_in_pyproject(name):
    extra = manifest_of(name).extra
    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert extra in EXTRAS and extra in declared["optional-dependencies"]


def test_a_name_outside_the_registry_is_no_channel():
    with pytest.raises(KeyError, match="telegram, discord, slack"):
        manifest_of("base")
