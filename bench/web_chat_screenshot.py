"""A screenshot of the web chat after a short scripted conversation, for a person to look at.

Starts a fake model and a gateway on 127.0.0.1, opens the chat in headless Chromium (Debian's
``chromium``), sends a message that uses a tool, one that streams with reasoning, and the
script-injection answer, opens the "why" view and searches memory, then saves a PNG.

    .venv/bin/python bench/web_chat_screenshot.py --screenshot /tmp/picoora-chat.png
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fakes.gateway_kit import TOKEN, RunningGateway, gateway_config  # noqa: E402
from tests.fakes.ollama_server import FakeOllama  # noqa: E402
from tests.fakes.web_chat_kit import ScriptedModel, chromium_path, launch_chromium  # noqa: E402

MESSAGES = ["remember my favorite color is teal", "what is a good weekend plan?", "show me a trick"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--screenshot", required=True, metavar="PATH", help="where to save the PNG")
    args = parser.parse_args()
    chromium = chromium_path()
    if chromium is None:
        print("no Chromium found: install Debian's `chromium` (apt-get install chromium)", file=sys.stderr)
        return 1
    from playwright.sync_api import sync_playwright

    home = Path(tempfile.mkdtemp(prefix="picoora-shot-"))
    os.environ["PICOORA_HOME"] = str(home)
    with FakeOllama(responder=ScriptedModel()) as fake, RunningGateway(gateway_config(home, fake.url)) as gw:
        with sync_playwright() as playwright:
            browser = launch_chromium(playwright, chromium)
            page = browser.new_page()
            page.goto(f"{gw.url}/?token={TOKEN}")
            page.wait_for_selector("#app:not([hidden])")
            for number, text in enumerate(MESSAGES, start=1):
                page.fill("#input", text)
                page.press("#input", "Enter")
                page.locator(".why-button").nth(number - 1).wait_for()
            page.locator(".tool-line summary").first.click()
            page.locator(".why-button").first.click()
            page.fill("#memory-query", "favorite color")
            page.click("#memory-form button")
            page.locator(".memory-item").first.wait_for()
            page.screenshot(path=args.screenshot, full_page=True)
            browser.close()
    print(f"saved {args.screenshot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
