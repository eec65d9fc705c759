"""The web chat end to end in headless Chromium: streaming, a tool line, memory search and forget,
the "why" view, sessions, the token handling, and a script-injection answer that runs nothing."""

from __future__ import annotations

import httpx
import pytest

from tests.fakes.gateway_kit import TOKEN, RunningGateway, gateway_config
from tests.fakes.ollama_server import FakeOllama
from tests.fakes.web_chat_kit import chromium_path, launch_chromium, scripted_model

CHROMIUM = chromium_path()
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
pytestmark = [
    pytest.mark.slow,  # drives Chromium: `pytest -m slow` (.ci/run) runs it
    pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine (.ci/run installs Debian's "
                                                "`chromium` with apt-get as root; it could not here)"),
]
WAIT_MS = 15_000  # generous: the machine may be busy
sync_api.expect.set_options(timeout=WAIT_MS)


@pytest.fixture
def chat(isolated_home):
    with FakeOllama(responder=scripted_model) as fake, RunningGateway(gateway_config(isolated_home, fake.url)) as gw:
        with sync_api.sync_playwright() as playwright:
            browser = launch_chromium(playwright, CHROMIUM)
            try:
                page = browser.new_page()
                page.set_default_timeout(WAIT_MS)
                dialogs: list[str] = []
                page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
                errors: list[str] = []
                page.on("pageerror", lambda error: errors.append(str(error)))
                page.goto(f"{gw.url}/?token={TOKEN}")
                page.wait_for_selector("#app:not([hidden])")
                yield gw, page, dialogs, errors
            finally:
                browser.close()


def send(page, text: str):
    """Send a message; returns the finished assistant message."""
    before = page.locator(".message.assistant").count()
    page.fill("#input", text)
    page.press("#input", "Enter")
    answer = page.locator(".message.assistant").nth(before)
    answer.locator(".why-button").wait_for()  # present once the final answer arrived
    return answer


def test_the_token_leaves_the_address_bar_and_stays_in_this_origins_storage(chat):
    gw, page, _, errors = chat
    assert page.url == gw.url + "/"
    assert page.evaluate("localStorage.getItem('picoora.token')") == TOKEN
    assert page.evaluate("document.cookie") == ""
    page.goto(gw.url + "/")  # reopened without ?token: still connected
    page.wait_for_selector("#app:not([hidden])")
    page.evaluate("localStorage.clear()")
    page.reload()
    page.wait_for_selector("#token-form:not([hidden])")  # asks for it
    page.fill("#token-input", "wrong")
    page.click("#token-form button")
    page.wait_for_selector("#token-error:has-text('wrong')")
    page.fill("#token-input", TOKEN)
    page.click("#token-form button")
    page.wait_for_selector("#app:not([hidden])")
    assert not errors


def test_an_answer_streams_with_reasoning_collapsed(chat):
    _, page, _, errors = chat
    answer = send(page, "hello there")
    assert answer.locator(".answer").inner_text() == (
        "You said: hello there. Here is an answer in quite a few streamed words.")
    assert int(answer.locator(".answer").get_attribute("data-tokens")) > 1  # arrived in pieces
    reasoning = answer.locator("details.reasoning")
    assert reasoning.is_visible() and reasoning.get_attribute("open") is None
    assert "think about that" in reasoning.locator(".reasoning-text").text_content()
    assert not errors


def test_a_tool_line_the_why_view_and_memory_search_and_forget(chat):
    gw, page, _, errors = chat
    answer = send(page, "remember my favorite color is teal")
    line = answer.locator(".tool-line")
    assert line.count() == 1 and line.locator("summary").inner_text().startswith("remember(")
    assert not line.locator(".tool-result").is_visible()  # the result on demand
    line.locator("summary").click()
    assert "Remembered" in line.locator(".tool-result").inner_text()

    answer.locator(".why-button").click()
    page.wait_for_selector("#why:not([hidden]) .why-tools li")
    assert "remember" in page.locator(".why-tools").inner_text()

    page.fill("#memory-query", "favorite color")
    page.click("#memory-form button")
    item = page.locator(".memory-item", has_text="teal")
    item.wait_for()
    assert item.locator(".score").inner_text().endswith("%")
    item.locator(".forget").click()
    item.wait_for(state="detached")
    with httpx.Client(base_url=gw.url, headers=gw.headers) as http:
        assert http.get("/v1/memory").json()["memories"] == []
    assert not errors


def test_a_script_injection_answer_runs_nothing(chat):
    _, page, dialogs, errors = chat
    answer = send(page, "show me a trick")
    text = answer.locator(".answer")
    assert "<img src=x onerror=alert(1)>" in text.inner_text()
    assert "<script>alert(2)</script>" in text.inner_text()
    assert text.locator("img, script, iframe").count() == 0
    assert [a.get_attribute("href") for a in text.locator("a").all()] == ["https://example.org/"]
    assert "[click me](javascript:alert(1))" in text.inner_text()  # shown as the text it is
    assert text.locator("strong").inner_text() == "bold"
    page.wait_for_timeout(300)  # an onerror would have fired by now
    assert dialogs == [] and not errors


def test_sessions_new_switch_and_delete(chat):
    gw, page, _, errors = chat
    send(page, "first chat message")
    first = page.locator("#session-list li.current .open").inner_text()
    page.click("#new-session")
    sync_api.expect(page.locator("#messages .message")).to_have_count(0)  # (wait_for_function evals: the CSP refuses)
    send(page, "second chat message")
    sync_api.expect(page.locator("#session-list li")).to_have_count(2)
    page.locator("#session-list li .open", has_text=first).click()
    page.wait_for_selector(".message.user:has-text('first chat message')")
    sync_api.expect(page.locator("#session-list li.current .open")).to_have_text(first)
    page.locator("#session-list li.current .delete-session").click()
    sync_api.expect(page.locator("#messages .message")).to_have_count(0)
    with httpx.Client(base_url=gw.url, headers=gw.headers) as http:
        left = {s["key"]: s["messages"] for s in http.get("/v1/sessions").json()}
    assert left.get(f"web:{first}", 0) == 0
    assert not errors
