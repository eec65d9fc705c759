"""The web chat end to end in headless Chromium: streaming, the thinking indicator and Stop, a failed
turn, a tool line, memory search and forget (and its refresh after a remember), the "why" view, sessions
named from their first message, the model switcher, numbered lists, the token handling, and a
script-injection answer that runs nothing."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.fakes.gateway_kit import TOKEN, RunningGateway, gateway_config
from tests.fakes.ollama_server import FakeOllama
from tests.fakes.web_chat_kit import ScriptedModel, chromium_path, launch_chromium

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
    model = ScriptedModel()
    with FakeOllama(responder=model, models=("qwen3:latest", "m2")) as fake, \
            RunningGateway(gateway_config(isolated_home, fake.url)) as gw:
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
                model.release.set()  # a held answer ends, so the gateway can stop
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
    page.locator("#session-list li .open", has_text=first).click()  # (named from its first message)
    page.wait_for_selector(".message.user:has-text('first chat message')")
    sync_api.expect(page.locator("#session-list li.current .open")).to_have_text(first)
    page.locator("#session-list li.current .delete-session").click()
    sync_api.expect(page.locator("#messages .message")).to_have_count(0)
    with httpx.Client(base_url=gw.url, headers=gw.headers) as http:
        left = {s["key"]: s["messages"] for s in http.get("/v1/sessions").json()}
    assert left.get(f"web:{first}", 0) == 0
    assert not errors


def test_a_thinking_indicator_counts_the_seconds_and_stop_cancels_the_turn(chat):
    gw, page, _, errors = chat
    page.fill("#input", "take your time")
    page.press("#input", "Enter")
    answer = page.locator(".message.assistant").last
    working = answer.locator(".working")
    sync_api.expect(working).to_contain_text("Thinking...")
    sync_api.expect(working.locator(".working-label")).to_have_text(re.compile(r"^Thinking\.\.\. [1-9]\d* s$"))
    working.locator(".stop-turn").click()
    sync_api.expect(answer.locator(".stopped-note")).to_have_text("Stopped: not answered. Send it again for an answer.")
    sync_api.expect(working).to_have_count(0)
    sync_api.expect(page.locator("#send")).to_be_enabled()
    page.reload()  # the transcript's cancelled-turn marker reads the same after a reload
    page.wait_for_selector("#app:not([hidden])")
    sync_api.expect(page.locator(".message.stopped .stopped-note")).to_have_count(1)
    assert "[the turn was cancelled" not in page.locator("#messages").inner_text()
    with httpx.Client(base_url=gw.url, headers=gw.headers) as http:
        assert http.post("/v1/chat", json={"session_id": "after", "text": "hi"}).status_code == 200  # not stuck
    assert not errors


def test_a_failed_turn_is_not_answered_with_the_next_message_and_reads_so_after_a_reload(chat):
    _, page, _, errors = chat
    failed = send(page, "fail now")
    sync_api.expect(failed).to_have_class(re.compile(r"\bfailed\b"))
    answer = send(page, "hi")  # the model echoes the last user message it got: the failed one is not in it
    sync_api.expect(answer.locator(".answer")).to_have_text(re.compile(r"^You said: hi\. "))
    page.reload()
    page.wait_for_selector("#app:not([hidden])")
    sync_api.expect(page.locator(".message.failed .stopped-note")).to_have_text(
        "Failed: not answered. Send it again for an answer.")
    assert "[the turn failed" not in page.locator("#messages").inner_text()
    assert not errors


def test_a_numbered_list_split_by_blank_lines_keeps_counting(chat):
    _, page, _, errors = chat
    answer = send(page, "a numbered list").locator(".answer")
    lists = answer.locator("ol")
    assert lists.count() == 1 and lists.get_attribute("start") is None
    items = lists.locator(":scope > li")
    assert items.count() == 3
    assert items.nth(0).inner_text() == "Pack the bag."
    assert items.nth(1).inner_text() == "Check the trains.\nThe early one is cheaper."
    assert answer.locator("p").first.inner_text() == "Three steps:"
    assert answer.locator("p").last.inner_text() == "That is all."
    assert not errors


def test_chats_are_named_from_their_first_message_across_reloads(chat):
    _, page, _, errors = chat
    sync_api.expect(page.locator("#session-title")).to_have_text("New chat")
    send(page, "plan a weekend in Lisbon\nwith trains")
    send(page, "and a second message")
    current = page.locator("#session-list li.current .open")
    sync_api.expect(current).to_have_text("plan a weekend in Lisbon")
    sync_api.expect(page.locator("#session-title")).to_have_text("plan a weekend in Lisbon")
    page.reload()
    page.wait_for_selector("#app:not([hidden])")
    sync_api.expect(current).to_have_text("plan a weekend in Lisbon")
    page.evaluate("localStorage.removeItem('picoora.titles')")  # as in another browser: named from the history
    page.click("#new-session")
    page.reload()
    page.wait_for_selector("#app:not([hidden])")
    sync_api.expect(page.locator("#session-list li .open", has_text="plan a weekend in Lisbon")).to_have_count(1)
    assert not errors


def test_the_model_switcher_switches_this_chat_and_refuses_a_model_that_is_not_there(chat):
    gw, page, _, errors = chat
    send(page, "hello")
    sync_api.expect(page.locator("#model-input")).to_have_value("ollama/qwen3:latest")
    page.fill("#model-input", "not-pulled")
    page.click("#model-form button")
    sync_api.expect(page.locator("#model-note")).to_contain_text("ollama pull")
    page.fill("#model-input", "m2")
    page.click("#model-form button")
    sync_api.expect(page.locator("#model-note")).to_have_text("this chat now answers with m2")
    page.reload()
    page.wait_for_selector("#app:not([hidden])")
    sync_api.expect(page.locator("#model-input")).to_have_value("ollama/m2")
    session = page.evaluate("localStorage.getItem('picoora.session')")
    with httpx.Client(base_url=gw.url, headers=gw.headers) as http:
        assert http.get(f"/v1/sessions/web:{session}/model").json() == {"provider": "ollama", "model": "m2"}
    page.fill("#model-input", "default")  # as /model default: back to the configured one
    page.click("#model-form button")
    sync_api.expect(page.locator("#model-input")).to_have_value("ollama/qwen3:latest")
    with httpx.Client(base_url=gw.url, headers=gw.headers) as http:
        assert http.get(f"/v1/sessions/web:{session}/model").json()["model"] == "qwen3:latest"
    assert not errors


def test_the_memory_panel_shows_a_remembered_fact_without_a_search(chat):
    _, page, _, errors = chat
    sync_api.expect(page.locator("#memory-note")).to_have_text("0 memories")
    send(page, "remember my favorite color is teal")
    sync_api.expect(page.locator(".memory-item", has_text="teal")).to_have_count(1)
    sync_api.expect(page.locator("#memory-note")).to_have_text("1 memories")
    assert not errors
