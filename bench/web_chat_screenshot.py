"""Screenshots of the web chat after a short scripted conversation, for a person (and the README) to look at.

Starts a fake model and a gateway on 127.0.0.1, opens the chat in headless Chromium (Debian's
``chromium``), sends a message that uses a tool, one answered with a numbered list, and the
script-injection answer, opens the "why" view and searches memory, then saves ``web-chat.png``; then
sends a message the model holds on to and saves ``web-chat-thinking.png`` (the indicator and Stop).

    .venv/bin/python bench/web_chat_screenshot.py --out docs/images

With ``pngquant`` installed (``apt-get install pngquant``) the PNGs are quantized to a small palette.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fakes.gateway_kit import TOKEN, RunningGateway, gateway_config  # noqa: E402
from tests.fakes.ollama_server import FakeOllama  # noqa: E402
from tests.fakes.web_chat_kit import ScriptedModel, chromium_path, launch_chromium  # noqa: E402

MESSAGES = ["remember my favorite color is teal", "a numbered list", "show me a trick"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, metavar="DIR", help="the folder for the PNGs")
    args = parser.parse_args()
    chromium = chromium_path()
    if chromium is None:
        print("no Chromium found: install Debian's `chromium` (apt-get install chromium)", file=sys.stderr)
        return 1
    from playwright.sync_api import sync_playwright

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="picoora-shot-"))
    os.environ["PICOORA_HOME"] = str(home)
    model = ScriptedModel()
    with FakeOllama(responder=model) as fake, RunningGateway(gateway_config(home, fake.url)) as gw:
        with sync_playwright() as playwright:
            browser = launch_chromium(playwright, chromium)
            try:
                page = browser.new_page()
                page.set_viewport_size({"width": 1120, "height": 720})  # small PNGs for the README
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
                save(page, out / "web-chat.png")  # the whole window

                page.click("#new-session")
                page.fill("#input", "take your time")
                page.press("#input", "Enter")
                page.locator(".working-label", has_text="2 s").wait_for()
                save(page, out / "web-chat-thinking.png", height=240)  # the top: the question and the indicator
            finally:
                model.release.set()
                browser.close()
    return 0


def save(page, path: Path, height: int | None = None) -> None:  # noqa: ANN001 - a Playwright page
    clip = None if height is None else {"x": 0, "y": 0, "width": page.viewport_size["width"], "height": height}
    page.screenshot(path=str(path), clip=clip)
    if shutil.which("pngquant"):  # a palette of a few dozen colours: a third of the size, no visible change
        subprocess.run(["pngquant", "--quality", "70-90", "--speed", "1", "--force", "--output", str(path), str(path)],
                       check=True)
    print(f"saved {path} ({path.stat().st_size / 1024:.0f} KB)")


if __name__ == "__main__":
    sys.exit(main())
