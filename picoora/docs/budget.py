"""Parsing a document under a budget: a 969 KB DOCX zip bomb took the gateway from 110 MB to 1.1 GB in 9 s.

Two walls, because a zip's own header may lie and a PDF's streams are compressed too:

- before any parser runs, a zip-based file (DOCX) is read by its central directory alone: more than
  ``MAX_UNCOMPRESSED_BYTES`` in all, more than ``MAX_MEMBERS`` entries, or a large member packed more
  than ``MAX_RATIO`` times is refused. Python's ``zipfile`` never inflates past a member's declared size,
  so a lying header gains nothing;
- the parser (pypdf, python-docx) runs in a worker process (``picoora.docs.worker``) whose address space
  is capped (``RLIMIT_AS``) and which is killed after ``PARSE_SECONDS``: the gateway's own memory and its
  event loop stay out of it, whatever the file does.

Either refusal is one line for the person who sent the file (``UnreadableDocument``).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass

from picoora.store.base import DocPage

MAX_UNCOMPRESSED_BYTES = 200 * 1024 * 1024
MAX_MEMBERS = 10_000
MAX_RATIO = 100  # ordinary Office XML packs 5-30 times; a bomb packs 1000 times
RATIO_FLOOR_BYTES = 1024 * 1024  # a small member may pack better than that without harm
MIB = 1024 * 1024
# Variables the worker keeps: locale only; none of the gateway's keys go near a hostile file's parser.
_KEPT_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE")


class DocumentTooCostly(Exception):
    """The document would cost more than its budget to parse; the message says which limit."""


@dataclass(frozen=True)
class ParseBudget:
    memory_bytes: int = 768 * MIB  # the worker's address space (its interpreter and parsers take ~60 MB)
    seconds: float = 60.0


def check_zip(data: bytes) -> None:
    """Refuse a zip whose contents would inflate past the budget (DocumentTooCostly)."""
    try:
        members = zipfile.ZipFile(io.BytesIO(data)).infolist()
    except (zipfile.BadZipFile, ValueError, OSError):
        return  # not a zip at all: the parser says so in its own words
    if len(members) > MAX_MEMBERS:
        raise DocumentTooCostly(f"{len(members)} files packed in it, more than {MAX_MEMBERS}")
    total = sum(m.file_size for m in members)
    if total > MAX_UNCOMPRESSED_BYTES:
        raise DocumentTooCostly(f"it unpacks to {total // MIB} MB, more than {MAX_UNCOMPRESSED_BYTES // MIB} MB "
                                "(a zip bomb?)")
    for member in members:
        if member.file_size > RATIO_FLOOR_BYTES and member.file_size > MAX_RATIO * max(member.compress_size, 1):
            raise DocumentTooCostly(f"{member.filename} unpacks {member.file_size // max(member.compress_size, 1)} "
                                    f"times its packed size, more than {MAX_RATIO} (a zip bomb?)")


def parse_in_worker(data: bytes, suffix: str, budget: ParseBudget) -> tuple[str, list[DocPage]]:
    """(title, pages) parsed by ``picoora.docs.worker`` under ``budget``. Raises DocumentTooCostly when the
    worker ran out of memory or time, ValueError with the parser's one line when the file is broken."""
    argv = [sys.executable, "-I", "-m", "picoora.docs.worker", suffix, str(budget.memory_bytes)]
    env = {name: os.environ[name] for name in _KEPT_ENV if name in os.environ}
    try:
        done = subprocess.run(argv, input=data, capture_output=True, timeout=budget.seconds, env=env, check=False)
    except subprocess.TimeoutExpired:
        raise DocumentTooCostly(f"parsing it took longer than {budget.seconds:g} s") from None
    try:
        answer = json.loads(done.stdout)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        # No answer: the kernel or the allocator stopped it (an address space past RLIMIT_AS aborts in C code).
        raise DocumentTooCostly(f"parsing it needed more than {budget.memory_bytes // MIB} MB of memory "
                                f"(the parser stopped with exit status {done.returncode})")
    if "too_costly" in answer:
        raise DocumentTooCostly(answer["too_costly"])
    if "error" in answer:
        raise ValueError(answer["error"])
    return answer["title"], [DocPage(text, number) for text, number in answer["pages"]]
