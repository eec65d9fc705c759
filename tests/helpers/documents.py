"""Real document files for the knowledge-base tests: a PDF written by hand (pages of text in the PDF
syntax pypdf reads), a Word file written by python-docx, and the plain formats."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


def write_pdf(path: Path, pages: list[str], title: str = "") -> Path:
    """A minimal valid PDF: one Helvetica text line per page, a correct cross-reference table."""
    objects = ["<< /Type /Catalog /Pages 2 0 R >>", ""]  # the pages object is filled in below
    kids = []
    for text in pages:
        escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        stream = f"BT /F1 12 Tf 72 720 Td ({escaped}) Tj ET"
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream")
        content = len(objects)
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {content} 0 R "
                       "/Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> >>")
        kids.append(f"{len(objects)} 0 R")
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>"
    info = None
    if title:
        objects.append(f"<< /Title ({title}) >>")
        info = len(objects)
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    trailer = f"<< /Size {len(objects) + 1} /Root 1 0 R" + (f" /Info {info} 0 R" if info else "") + " >>"
    out += f"trailer\n{trailer}\nstartxref\n{xref}\n%%EOF\n".encode()
    path.write_bytes(bytes(out))
    return path


def write_docx(path: Path, paragraphs: list[str], title: str = "") -> Path:
    import docx

    document = docx.Document()
    for text in paragraphs:
        document.add_paragraph(text)
    if title:
        document.core_properties.title = title
    document.save(str(path))
    return path


XML_HEAD = (b'<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/'
            b'main"><w:body>')


def docx_with_body(write_body: Callable[[BinaryIO], object]) -> bytes:
    """A real DOCX (python-docx's empty document) whose document.xml's paragraphs ``write_body`` writes to a
    stream, so a huge body is never held whole in memory."""
    import docx

    empty = io.BytesIO()
    docx.Document().save(empty)
    source = zipfile.ZipFile(empty)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as target:
        for info in source.infolist():
            if info.filename != "word/document.xml":
                target.writestr(info, source.read(info))
                continue
            member = zipfile.ZipInfo("word/document.xml")
            member.compress_type = zipfile.ZIP_DEFLATED
            with target.open(member, "w", force_zip64=True) as stream:
                stream.write(XML_HEAD)
                write_body(stream)
                stream.write(b"</w:body></w:document>")
    return out.getvalue()


def docx_bomb(unpacked_mb: int = 640) -> bytes:
    """A zip bomb shaped as a Word file: ``unpacked_mb`` MB of empty paragraphs, about 1/640 of that packed."""
    chunk = b"<w:p/>" * (1024 * 1024 // 6)

    def body(stream: BinaryIO) -> None:
        for _ in range(unpacked_mb):
            stream.write(chunk)

    return docx_with_body(body)
