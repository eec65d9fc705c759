"""The knowledge base over HTTP: upload, URL, list, search, delete, each as the caller's token says, and a
guest's token that can neither see the owner's private documents nor share its own."""

from __future__ import annotations

import json
import shutil
import subprocess

import httpx
import pytest

from picoora.api_tokens import ApiTokens
from picoora.config import load_config
from tests.cli_support import write_config
from tests.fakes._http import closed_port_url
from tests.fakes.gateway_kit import TOKEN, RunningGateway
from tests.fakes.web_page_server import WebPageServer
from tests.helpers.documents import write_pdf


@pytest.fixture
def gw(isolated_home):
    path = write_config(isolated_home, ollama_url=closed_port_url())
    data = json.loads(path.read_text())
    data["gateway"] = {"token": TOKEN}
    data["users"] = [{"name": "alice"}]
    path.write_text(json.dumps(data))
    config = load_config(path)
    with RunningGateway(config) as running:
        yield running


def _client(gw: RunningGateway, token: str) -> httpx.Client:
    return httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {token}"}, timeout=60)


def test_upload_list_search_delete_and_a_guest_sees_only_theirs_and_the_shared(gw, tmp_path):
    _, alice_token = ApiTokens(gw.gateway.assistant.store, gw.config).create("alice")
    owner, alice = _client(gw, TOKEN), _client(gw, alice_token)

    pdf = write_pdf(tmp_path / "boiler.pdf", ["Intro page.", "Error E42 means the water pressure is low."],
                    title="Boiler manual")
    shared = owner.post("/v1/docs", files={"file": ("boiler.pdf", pdf.read_bytes(), "application/pdf")},
                        data={"shared": "true"})
    assert shared.status_code == 200, shared.text
    assert shared.json()["status"] == "added" and shared.json()["document"]["shared"] is True
    private = owner.post("/v1/docs", files={"file": ("safe.md", b"The safe combination is 31-41-59.")})
    assert private.status_code == 200, private.text
    private_id = private.json()["document"]["id"]
    again = owner.post("/v1/docs", files={"file": ("safe.md", b"The safe combination is 31-41-59.")})
    assert again.json()["status"] == "unchanged"

    hit = owner.get("/v1/docs/search", params={"q": "E42 water pressure"}).json()["hits"][0]
    assert hit["title"] == "Boiler manual" and hit["page"] == 2 and 0 < hit["score"] <= 1

    assert [d["title"] for d in alice.get("/v1/docs").json()["documents"]] == ["Boiler manual"]
    assert alice.get("/v1/docs/search", params={"q": "safe combination 31-41-59"}).json()["hits"] == []
    assert alice.delete(f"/v1/docs/{private_id}").status_code == 404  # not hers: as if it did not exist
    refused = alice.post("/v1/docs", files={"file": ("mine.md", b"Alice's own note.")}, data={"shared": "1"})
    assert refused.status_code == 403
    mine = alice.post("/v1/docs", files={"file": ("mine.md", b"Alice waters the ferns on Sundays.")})
    assert mine.status_code == 200 and mine.json()["document"]["person"] == "alice"
    assert owner.get("/v1/docs/search", params={"q": "ferns Sundays"}).json()["hits"] == []

    assert owner.delete(f"/v1/docs/{private_id}").json() == {"deleted": private_id}
    assert owner.get("/v1/docs/search", params={"q": "safe combination 31-41-59"}).json()["hits"] == []


def test_a_guests_document_is_bounded_in_chunks(gw):
    """A guest's 990 KB text file made 2,995 chunks and took 9 minutes of both cores to embed."""
    from picoora.docs.adding import GUEST_MAX_CHUNKS

    _, alice_token = ApiTokens(gw.gateway.assistant.store, gw.config).create("alice")
    alice = _client(gw, alice_token)
    text = " ".join(f"Sentence number {n} says the ferns need water." for n in range(4000)).encode()  # ~490 chunks
    refused = alice.post("/v1/docs", files={"file": ("long.txt", text)})
    assert refused.status_code == 400
    message = refused.json()["error"]["message"]
    assert f"more than the {GUEST_MAX_CHUNKS} a guest's document may have" in message
    assert alice.get("/v1/docs").json() == {"documents": []}
    short = alice.post("/v1/docs", files={"file": ("short.txt", text[:20_000])})
    assert short.status_code == 200, short.text


def test_bad_uploads_and_urls_are_clear_errors(gw):
    owner = _client(gw, TOKEN)
    broken = owner.post("/v1/docs", files={"file": ("x.pdf", b"%PDF-1.4 garbage")})
    assert broken.status_code == 400 and "x.pdf" in broken.json()["error"]["message"]
    assert owner.post("/v1/docs", files={"file": ("x.exe", b"MZ")}).status_code == 400
    assert owner.post("/v1/docs", content=b"raw", headers={"content-type": "text/plain"}).status_code == 400
    assert owner.post("/v1/docs", json={"url": "file:///etc/passwd"}).status_code == 400
    private = owner.post("/v1/docs", json={"url": "http://127.0.0.1:9/secret"})  # the web_fetch guard refuses
    assert private.status_code == 400
    assert owner.get("/v1/docs").json() == {"documents": []}
    assert httpx.get(gw.url + "/v1/docs").status_code == 401
    assert owner.delete("/v1/docs/not-an-id").status_code == 400


def test_a_page_by_url(gw):
    owner = _client(gw, TOKEN)
    page = "<html><head><title>Opening hours</title></head><body><p>The library opens at nine.</p></body></html>"
    with WebPageServer(status=200, page=page) as site:
        gw.config.tools.web_fetch.allow_hosts.append("127.0.0.1")  # the owner's exemption for this test server
        added = owner.post("/v1/docs", json={"url": f"{site.url}/hours"})
    assert added.status_code == 200, added.text
    assert added.json()["document"]["title"] == "Opening hours"
    hits = owner.get("/v1/docs/search", params={"q": "library opens nine"}).json()["hits"]
    assert hits[0]["title"] == "Opening hours" and hits[0]["source"] == f"{site.url}/hours"


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_curl_uploads_lists_and_searches(gw, tmp_path):
    """A client we did not write: curl's multipart form and its URL-encoded query."""
    manual = tmp_path / "heating notes.md"
    manual.write_text("# Heating notes\n\nThe boiler's filling loop sits under the sink; refill to 1.5 bar.")
    auth = ["-H", f"Authorization: Bearer {TOKEN}"]

    def curl(*args: str) -> dict:
        done = subprocess.run(["curl", "-sS", "--fail-with-body", *auth, *args], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        return json.loads(done.stdout)

    added = curl("-F", f"file=@{manual}", "-F", "shared=true", f"{gw.url}/v1/docs")
    assert added["status"] == "added" and added["document"]["title"] == "Heating notes"
    assert [d["source"] for d in curl(f"{gw.url}/v1/docs")["documents"]] == ["upload:heating notes.md"]
    hits = curl("-G", "--data-urlencode", "q=where is the filling loop?", f"{gw.url}/v1/docs/search")["hits"]
    assert hits and "under the sink" in hits[0]["text"]
