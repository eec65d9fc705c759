"""HTML to readable text with the standard library's parser.

Scripts, styles, navigation and other non-content elements are dropped; link text is kept; block
elements become line breaks; runs of whitespace collapse. The page title, when there is one, comes
first.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

_DROPPED = {"script", "style", "nav", "noscript", "template", "svg", "iframe", "object", "head", "canvas"}
_BLOCKS = {
    "p", "div", "br", "hr", "ul", "ol", "dl", "dt", "dd", "table", "tr", "section", "article", "header",
    "footer", "main", "aside", "blockquote", "pre", "form", "figure", "figcaption", "address",
    "details", "summary", "h1", "h2", "h3", "h4", "h5", "h6",
}
_CELLS = {"td", "th"}


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title: list[str] = []
        self._dropped_depth = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in _DROPPED:
            self._dropped_depth += 1
        elif tag == "li":
            self.parts.append("\n- ")
        elif tag in _BLOCKS:
            self.parts.append("\n")
        elif tag in _CELLS:
            self.parts.append(" ")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        # <br/>, <hr/> and friends: a void element, never something to drop.
        if tag in _BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in _DROPPED:
            self._dropped_depth = max(self._dropped_depth - 1, 0)
        elif tag in _BLOCKS or tag == "li":
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title.append(data)
        elif not self._dropped_depth:
            self.parts.append(re.sub(r"\s+", " ", data))


def _tidy(text: str) -> str:
    lines = (re.sub(r"[ \t\f\v\r]+", " ", line).strip() for line in text.split("\n"))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def html_to_text(html: str) -> str:
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    body = _tidy("".join(parser.parts))
    title = _tidy(" ".join(parser.title))
    return f"{title}\n\n{body}" if title and body else title or body
