"""A fuzz run of the API from its own OpenAPI document (schemathesis): zero 5xx, responses as documented.

Schemathesis generates requests for every operation (valid, boundary and invalid ones), then runs
stateful sequences; the checks fail on a 5xx, a status code or content type the document does not
list, or a body that does not match the documented schema. A fixed seed keeps the run reproducible."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.gateway_kit import TOKEN, RunningGateway, gateway_config
from tests.fakes.ollama_server import FakeOllama

pytestmark = pytest.mark.slow  # a schemathesis fuzz run: `pytest -m slow` (.ci/run) runs it

CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"
EXAMPLES = 15  # per operation and phase: about 600 requests, 15 s here


def test_the_api_survives_a_fuzz_run_of_its_own_openapi_document(isolated_home, tmp_path):
    schemathesis = Path(sys.executable).with_name("schemathesis")
    with FakeOllama() as fake, RunningGateway(gateway_config(isolated_home, fake.url)) as gw:
        result = subprocess.run(
            [str(schemathesis), "run", gw.url + "/openapi.json", "--header", f"Authorization: Bearer {TOKEN}",
             "--checks", CHECKS, "--max-examples", str(EXAMPLES), "--seed", "8", "--no-color",
             "--generation-database", "none", "--request-timeout", "30"],
            capture_output=True, text=True, timeout=300, cwd=tmp_path)  # its caches stay out of the checkout
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "generated" in result.stdout
