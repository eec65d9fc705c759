"""HTML to readable text with lxml (libxml2's HTML parser).

libxml2 parses in linear time and caps nesting depth; the standard library's ``html.parser`` took
26 s on 2 MB of ``<a<a<a...`` (it rescans an unfinished tag on every step). The tree is then walked
iteratively (``iterwalk``), so no page can exhaust the recursion limit.

Scripts, styles, navigation and other non-content elements are dropped; link text is kept; block
elements become line breaks; runs of whitespace collapse. The page title, when there is one, comes
first.
"""

from __future__ import annotations

import re

_DROPPED = {"script", "style", "nav", "noscript", "template", "svg", "iframe", "object", "head", "canvas"}
_BLOCKS = {
    "p", "div", "br", "hr", "ul", "ol", "dl", "dt", "dd", "table", "tr", "section", "article", "header",
    "footer", "main", "aside", "blockquote", "pre", "form", "figure", "figcaption", "address",
    "details", "summary", "h1", "h2", "h3", "h4", "h5", "h6",
}
_CELLS = {"td", "th"}
_VOID = {"br", "hr"}  # one line break each, not one for opening and one for closing
_WHITESPACE = re.compile(r"\s+")


def _flat(text: str) -> str:
    return _WHITESPACE.sub(" ", text)


def _tidy(text: str) -> str:
    lines = (re.sub(r"[ \t\f\v\r]+", " ", line).strip() for line in text.split("\n"))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _walk(root) -> tuple[list[str], list[str]]:  # noqa: ANN001 (an lxml element)
    from lxml import etree

    parts: list[str] = []
    title: list[str] = []
    dropped = 0  # depth inside elements whose text is not shown
    for event, element in etree.iterwalk(root, events=("start", "end", "comment", "pi")):
        if event in ("comment", "pi"):  # no text of its own; the text after it still counts
            if not dropped and element.tail:
                parts.append(_flat(element.tail))
            continue
        tag = element.tag.lower()
        if event == "start":
            if tag == "title":
                title.append(element.text or "")
            if tag in _DROPPED or tag == "title":
                dropped += 1
            elif not dropped:
                if tag == "li":
                    parts.append("\n- ")
                elif tag in _BLOCKS:
                    parts.append("\n")
                elif tag in _CELLS:
                    parts.append(" ")
                parts.append(_flat(element.text or ""))
        else:
            if tag in _DROPPED or tag == "title":
                dropped -= 1
            elif not dropped and (tag in _BLOCKS or tag == "li") and tag not in _VOID:
                parts.append("\n")
            if not dropped and element.tail:  # text after the element belongs to its parent
                parts.append(_flat(element.tail))
    return parts, title


def html_to_text(html: str) -> str:
    import lxml.html
    from lxml import etree

    if not html.strip():
        return ""
    try:
        root = lxml.html.document_fromstring(html, parser=lxml.html.HTMLParser(recover=True, no_network=True))
    except (etree.ParserError, ValueError):  # nothing parseable (only a comment, say)
        return ""
    parts, title = _walk(root)
    body = _tidy("".join(parts))
    heading = _tidy(" ".join(title))
    return f"{heading}\n\n{body}" if heading and body else heading or body
