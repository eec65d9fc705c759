"""What the web chat's browser test and its screenshot script share: a scripted model and Debian's Chromium."""

from __future__ import annotations

import shutil
import tempfile
import threading
from typing import Any

from tests.fakes.ollama_server import Reply

INJECTION = ("Here you go: <img src=x onerror=alert(1)> and [click me](javascript:alert(1)) "
             "and <script>alert(2)</script> and a **bold** [safe link](https://example.org/).")
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--no-first-run", "--disable-dev-shm-usage"]


NUMBERED = ("Three steps:\n\n1. Pack the **bag**.\n\n2. Check the trains.\n   The early one is cheaper.\n\n"
            "3. Leave at eight.\n\nThat is all.")


class ScriptedModel:
    """'remember X' calls the remember tool; 'show me a trick' answers with script injection; 'a numbered
    list' answers with items split by blank lines; 'take your time' waits until ``release`` is set (or 30 s);
    'fail now' fails as a server out of memory; anything else is echoed with some reasoning."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def __call__(self, body: dict) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return Reply(content="Noted, I will keep that in mind.")
        text = last["content"]
        if text.startswith("remember "):
            return Reply(tool_calls=[("remember", {"text": text.removeprefix("remember "), "category": "preference"})])
        if text == "show me a trick":
            return Reply(content=INJECTION)
        if text == "a numbered list":
            return Reply(content=NUMBERED)
        if text == "fail now":
            return Reply(status=500, error="out of memory")
        if text == "take your time":
            self.release.wait(30)
            return Reply(content="Finally, an answer nobody waited for.")
        return Reply(content=f"You said: {text}. Here is an answer in quite a few streamed words.",
                     thinking="Let me think about that for a moment.")


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def launch_chromium(playwright: Any, executable: str) -> Any:
    """Debian's Chromium (Playwright cannot download browsers here), headless, with a fresh profile."""
    profile = tempfile.mkdtemp(prefix="picoora-chromium-")
    return playwright.chromium.launch_persistent_context(profile, executable_path=executable, headless=True,
                                                         args=CHROMIUM_FLAGS, viewport={"width": 1280, "height": 800})
