"""The web chat's knowledge base in headless Chromium: a file added with the "add file" button, then an answer
that used search_docs shows its cited sources under it."""

from __future__ import annotations

import pytest

from tests.fakes.gateway_kit import TOKEN, RunningGateway, gateway_config
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.fakes.web_chat_kit import chromium_path, launch_chromium
from tests.helpers.documents import write_pdf

CHROMIUM = chromium_path()
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
pytestmark = [
    pytest.mark.slow,  # drives Chromium
    pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine"),
]


def model(body: dict) -> Reply:
    """Asked about the boiler: search the documents, then answer citing the page the tool result names."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        cited = "[Boiler manual, page 2]" if "[Boiler manual, page 2]" in last["content"] else "(nothing found)"
        return Reply(content=f"E42 means low water pressure {cited}.")
    tools = {t["function"]["name"] for t in body.get("tools", [])}
    if "search_docs" in tools and "E42" in last["content"]:
        return Reply(tool_calls=[("search_docs", {"query": "error E42"})])
    return Reply(content="search_docs not offered" if "E42" in last["content"] else "ok")


def test_add_a_file_then_an_answer_shows_its_sources(isolated_home, tmp_path):
    pdf = write_pdf(tmp_path / "boiler.pdf", ["Welcome.", "Error E42 means the water pressure is low."],
                    title="Boiler manual")
    with FakeOllama(responder=model) as fake, RunningGateway(gateway_config(isolated_home, fake.url)) as gw:
        with sync_api.sync_playwright() as playwright:
            browser = launch_chromium(playwright, CHROMIUM)
            try:
                page = browser.new_page()
                errors: list[str] = []
                page.on("pageerror", lambda error: errors.append(str(error)))
                page.goto(f"{gw.url}/?token={TOKEN}")
                page.wait_for_selector("#app:not([hidden])")
                assert page.locator("#add-doc").is_visible()
                page.set_input_files("#doc-file", str(pdf))
                page.locator(".message.notice", has_text="boiler.pdf: added").wait_for()
                page.fill("#input", "What does E42 mean?")
                page.press("#input", "Enter")
                answer = page.locator(".message.assistant").last
                answer.locator(".sources").wait_for(timeout=20_000)
                assert "E42 means low water pressure [Boiler manual, page 2]" in answer.inner_text()
                assert answer.locator(".source").all_inner_texts() == ["Boiler manual, page 2"]
                assert errors == []
            finally:
                browser.close()
