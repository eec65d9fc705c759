"""A document file to its title and text pages, by suffix, with a well-kept parser for each format:
pypdf (PDF, one page each), python-docx (Word), lxml via ``html_text`` (HTML), plain decoding for text
and Markdown. PDF and DOCX are parsed in a worker process under a memory and time budget, a DOCX's zip
checked first (``picoora.docs.budget``). Any failure is ``UnreadableDocument`` with one line saying why,
so a folder goes on."""

from __future__ import annotations

import re
from pathlib import Path

from picoora.docs.budget import DocumentTooCostly, ParseBudget, check_zip, parse_in_worker
from picoora.store.base import DocPage

SUFFIXES = (".txt", ".md", ".markdown", ".html", ".htm", ".pdf", ".docx")
WORKER_SUFFIXES = (".pdf", ".docx")  # parsed by a library, in a worker under a memory and time budget
DEFAULT_BUDGET = ParseBudget()
_MD_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


class UnreadableDocument(Exception):
    """The file cannot be read as a document; the message says why."""


def parse_file(path: Path, max_bytes: int) -> tuple[str, list[DocPage]]:
    """(title, pages) of the document at ``path``."""
    _check_suffix(path.suffix.lower())
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise UnreadableDocument(f"{size} bytes, more than the {max_bytes} a document may have")
        data = path.read_bytes()
    except OSError as exc:
        raise UnreadableDocument(exc.strerror or str(exc)) from None
    return parse_bytes(data, path.suffix, path.stem)


def _check_suffix(suffix: str) -> None:
    if suffix not in SUFFIXES:
        raise UnreadableDocument(f"{suffix or 'no suffix'} is not a document format picoora reads "
                                 f"({', '.join(SUFFIXES)})")


def parse_bytes(data: bytes, suffix: str, fallback_title: str,
                budget: ParseBudget = DEFAULT_BUDGET) -> tuple[str, list[DocPage]]:
    """(title, pages) of a document's bytes; PDF and DOCX are parsed in a worker under ``budget``."""
    suffix = suffix.lower()
    _check_suffix(suffix)
    try:
        if suffix in WORKER_SUFFIXES:
            from picoora.extras import missing

            absent = missing("docs")
            if absent:
                raise UnreadableDocument(absent)
            check_zip(data)
            title, pages = parse_in_worker(data, suffix, budget)
        else:
            title, pages = parse_here(data, suffix)
    except DocumentTooCostly as exc:
        raise UnreadableDocument(f"refused: {exc}") from None
    except ValueError as exc:  # the worker's one line about a broken file
        raise UnreadableDocument(str(exc)) from None
    pages = [p for p in pages if p.text.strip()]
    if not pages:
        raise UnreadableDocument("no text in it (a scanned PDF needs OCR first)")
    return (title.strip() or fallback_title), pages


def parse_here(data: bytes, suffix: str) -> tuple[str, list[DocPage]]:
    """(title, pages) parsed in this process (the worker's side, and the formats that need no parser)."""
    try:
        if suffix == ".pdf":
            return _pdf(data)
        if suffix == ".docx":
            return _docx(data)
        if suffix in (".html", ".htm"):
            return _html(_decode(data))
        text = _decode(data)
        heading = _MD_HEADING.search(text) if suffix in (".md", ".markdown") else None
        return (heading.group(1) if heading else ""), [DocPage(text)]
    except (UnreadableDocument, MemoryError):
        raise
    except Exception as exc:  # parsers raise their own types for broken files; each is one line here
        raise UnreadableDocument(f"cannot be parsed as {suffix}: {type(exc).__name__}: {exc}"[:300]) from None


def _decode(data: bytes) -> str:
    if b"\0" in data[:4096]:
        raise UnreadableDocument("looks like a binary file, not text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _html(text: str) -> tuple[str, list[DocPage]]:
    from picoora.tools.html_text import html_to_text

    title = re.search(r"<title[^>]*>(.*?)</title>", text[:20_000], re.IGNORECASE | re.DOTALL)
    return (" ".join(title.group(1).split()) if title else ""), [DocPage(html_to_text(text))]


def _pdf(data: bytes) -> tuple[str, list[DocPage]]:
    import io

    import pypdf

    reader = pypdf.PdfReader(io.BytesIO(data))
    if reader.is_encrypted:
        raise UnreadableDocument("the PDF is encrypted")
    pages = [DocPage(page.extract_text() or "", number) for number, page in enumerate(reader.pages, start=1)]
    title = str(reader.metadata.title or "") if reader.metadata else ""
    return title, pages


def _docx(data: bytes) -> tuple[str, list[DocPage]]:
    import io

    import docx

    document = docx.Document(io.BytesIO(data))
    lines = [p.text for p in document.paragraphs]
    for table in document.tables:
        lines += [" | ".join(cell.text for cell in row.cells) for row in table.rows]
    return document.core_properties.title or "", [DocPage("\n".join(lines))]
