"""What every family of the file backend shares: the workspace, its layout and its lock, and how a JSON
document or a hand-editable text file is read."""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from picoora import atomic
from picoora.store import limits
from picoora.store.base import StoreError
from picoora.store.files.locking import WorkspaceLock
from picoora.store.layout import FileLayout

log = logging.getLogger(__name__)

PRIVATE = 0o600  # conversations and state are nobody else's business
TEXT_FILE_BYTES = 256 * 1024  # the most of a prompt file or a note read (the window takes far less)
_KEY_SAFE = re.compile(r"[A-Za-z0-9.\-]")
_MAX_ENCODED_KEY = 150  # file names are limited to 255 bytes; leave room for suffixes


@dataclass(frozen=True)
class FileContext:
    workspace: Path
    layout: FileLayout
    lock: WorkspaceLock  # every write, and every read a write depends on, holds it (see ``files``)


def encode_key(key: str) -> str:
    """A file name for a session key: ``:`` becomes ``_`` (as in the Go version), letters, digits, ``.``
    and ``-`` stay, every other byte becomes ``%XX``. Reversible and injective, so ``slack:C01/1700.12``
    and ``a_b`` get distinct, safe names. Very long keys end in a hash (the file stores the real key)."""
    if not key:
        raise ValueError("a session key must not be empty")
    limits.check_session_key(key)
    parts = []
    for position, char in enumerate(key):
        if _KEY_SAFE.fullmatch(char) and not (position == 0 and char == "."):
            parts.append(char)
        elif char == ":":
            parts.append("_")
        else:
            parts.extend(f"%{byte:02X}" for byte in char.encode("utf-8"))
    name = "".join(parts)
    if len(name) > _MAX_ENCODED_KEY:
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
        name = f"{name[:100]}~{digest}"  # "~" never appears in an unhashed name
    return name


class FileFamily:
    """A family of the file backend; ``workspace`` names it in the errors of ``fs_errors.report_os_errors``."""

    def __init__(self, ctx: FileContext):
        self.ctx = ctx
        self.workspace = ctx.workspace


def read_document(path: Path) -> Any | None:
    try:
        return atomic.read_json(path)
    except (ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else exc
        raise StoreError(f"{path} is not valid JSON ({reason}): fix it or delete it") from None


def read_text(path: Path, most_bytes: int = TEXT_FILE_BYTES) -> str | None:
    """A prompt file or a note, as far as it can be read: anyone may edit these (the user, a tool, an exec
    call), so a bad byte or a huge file must not stop every turn. Undecodable bytes become U+FFFD and only
    the first ``most_bytes`` are read; either way a notice in the text says so (the model, which can
    repair the file, sees it) and the log says it once per read."""
    # Never through a symlink, never a FIFO: a command may plant ``IDENTITY.md -> /etc/shadow`` for the
    # gateway (root, whose commands run as another user) to read into the prompt, or a FIFO that blocks it.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        return f"[picoora: {path.name} is a symlink; prompt files and notes are read only as plain files]"
    with open(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return f"[picoora: {path.name} is not a plain file (a FIFO or device): not read]"
        raw = handle.read(most_bytes + 1)
    notices = []
    if len(raw) > most_bytes:
        raw = raw[:most_bytes]
        notices.append(f"{path.name} is longer than {most_bytes // 1024} KB: only its start was read")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = raw.decode("utf-8", errors="replace")
        if not (notices and exc.start >= len(raw) - 3):  # a character cut at the size limit is no fault
            notices.append(f"{path.name} is not valid UTF-8 (byte {exc.start}): undecodable bytes are shown "
                           "as \ufffd; save it as UTF-8 to fix it")
    for notice in notices:
        log.warning("%s: %s", path, notice)
    return text + "".join(f"\n\n[picoora: {notice}]" for notice in notices)
