"""Slack's side of a reply: the Markdown models write turned into Slack's mrkdwn.

``&``, ``<`` and ``>`` are escaped first (Slack's rule, everywhere in a text), so nothing the model writes
can become a ping (``<!channel>``) or a link it did not write as one; code is kept out of the other
rules; every pattern is a simple regular expression with no nested repetition (linear on hostile text).
"""

from __future__ import annotations

import re

SLACK_PIECE = 3500  # characters per message before escaping: Slack advises at most 4,000, cuts at 40,000

_BLOCK = re.compile(r"```[A-Za-z0-9_+-]*\n?(.*?)```", re.DOTALL)
_CODE = re.compile(r"`([^`\n]+)`")
_BOLD = re.compile(r"(\*\*|__)([^*_\n]+)\1")
_ITALIC = re.compile(r"(?<![\w*])\*([^*\n]+)\*(?![\w*])")
_STRIKE = re.compile(r"~~([^~\n]+)~~")
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^)\s|>]+)\)")
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_BULLET = re.compile(r"^([ \t]*)[*+][ \t]+", re.MULTILINE)


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def to_mrkdwn(text: str) -> str:
    kept: list[str] = []

    def keep(code: str) -> str:
        kept.append(code)
        return f"\x00{len(kept) - 1}\x00"

    text = escape(text.replace("\x00", ""))
    text = _BLOCK.sub(lambda m: keep(f"```\n{m.group(1).strip(chr(10))}\n```"), text)
    text = _CODE.sub(lambda m: keep(f"`{m.group(1)}`"), text)
    text = _LINK.sub(lambda m: keep(f"<{m.group(2)}|{m.group(1)}>"), text)
    text = _BULLET.sub(lambda m: f"{m.group(1)}• ", text)
    text = _HEADING.sub(lambda m: f"\x01{m.group(1)}\x01", text)
    text = _BOLD.sub(lambda m: f"\x01{m.group(2)}\x01", text)
    text = _ITALIC.sub(r"_\1_", text)
    text = _STRIKE.sub(r"~\1~", text).replace("\x01", "*")
    return re.sub("\x00(\\d+)\x00", lambda m: kept[int(m.group(1))], text)
