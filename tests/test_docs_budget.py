"""Documents are parsed under a budget (issue 36): a 969 KB DOCX zip bomb took the gateway from 110 MB to
1.1 GB in 9 s, because only the compressed size was checked."""

from __future__ import annotations

import resource
import subprocess
import sys

import httpx
import pytest

from picoora.docs.budget import ParseBudget
from picoora.docs.parsers import UnreadableDocument, parse_bytes
from tests.fakes._http import closed_port_url
from tests.fakes.gateway_kit import TOKEN, RunningGateway, gateway_config
from tests.helpers.documents import docx_bomb, docx_with_body

MIB = 1024 * 1024


@pytest.fixture(scope="module")
def bomb() -> bytes:
    """About 1 MB packed, 640 MB of paragraphs unpacked."""
    data = docx_bomb(640)
    assert 0.9 * MIB <= len(data) <= 1.1 * MIB
    return data


@pytest.mark.slow  # a few seconds: making the bomb, parsing under a budget
def test_a_1_mb_docx_bomb_is_refused_before_any_parser_runs(bomb, tmp_path):
    """Run in a child held to 1.5 GB, so the machine survives a build without the check."""
    (tmp_path / "bomb.docx").write_bytes(bomb)
    script = ("import sys; from pathlib import Path; from picoora.docs.parsers import parse_bytes, UnreadableDocument\n"
              "try: parse_bytes(Path(sys.argv[1]).read_bytes(), '.docx', 'bomb')\n"
              "except UnreadableDocument as exc: print(exc)")

    def held() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1536 * MIB, 1536 * MIB))

    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "bomb.docx")], preexec_fn=held,
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.strip().splitlines() == [
        "refused: it unpacks to 640 MB, more than 200 MB (a zip bomb?)"], done.stderr[-500:]


@pytest.mark.slow  # a few seconds: making the bomb, parsing under a budget
def test_the_bomb_sent_to_the_gateway_is_one_line_and_its_memory_stays_flat(bomb, isolated_home):
    config = gateway_config(isolated_home, closed_port_url(), max_body_bytes=2 * MIB)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with RunningGateway(config) as gw, httpx.Client(base_url=gw.url, timeout=60,
                                                   headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        answer = http.post("/v1/docs", files={"file": ("report.docx", bomb)})
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    error = json_error(answer)
    assert "a zip bomb?" in error and "\n" not in error
    assert grown_mb < 100  # parsed in-process it peaked at 1.1 GB


def json_error(answer: httpx.Response) -> str:
    body = answer.json()
    return body["error"]["message"] if "error" in body else body.get("outcomes", [body])[0].get("error", str(body))


@pytest.mark.slow  # a few seconds: making the bomb, parsing under a budget
def test_the_parser_worker_is_held_to_its_memory_budget():
    """A file the zip check lets through (plain text packs ~3x) but whose parse needs more than allowed."""
    import random

    words = [f"w{random.Random(i).getrandbits(40):x}".encode() for i in range(5000)]

    def body(stream) -> None:  # noqa: ANN001
        for i in range(40_000):
            text = b" ".join(words[(i + k) % 5000] for k in range(20))
            stream.write(b"<w:p><w:r><w:t>" + text + b"</w:t></w:r></w:p>")

    data = docx_with_body(body)
    with pytest.raises(UnreadableDocument, match=r"^refused: parsing it needed more than 100 MB of memory"):
        parse_bytes(data, ".docx", "big", ParseBudget(memory_bytes=100 * MIB))


def test_the_parser_worker_is_held_to_its_time_budget():
    data = docx_with_body(lambda stream: stream.write(b"<w:p><w:r><w:t>hello</w:t></w:r></w:p>"))
    with pytest.raises(UnreadableDocument, match=r"^refused: parsing it took longer than 0.01 s$"):
        parse_bytes(data, ".docx", "slow", ParseBudget(seconds=0.01))
    assert parse_bytes(data, ".docx", "quick")[1][0].text == "hello"
