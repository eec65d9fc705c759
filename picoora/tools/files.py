"""File tools: read_file, write_file, edit_file, append_file, list_dir.

Every path goes through the sandbox (``picoora.tools.sandbox``) and the tool then opens the real
path it returned through ``picoora.safe_fs``: no symlink followed on the way, the opened
directory checked again, regular files only, the size checked on the descriptor, no writes to a
hard-linked file. Writes replace the file atomically (temp file in the same directory, fsync,
rename), so a crash leaves the old or the new content, never half of it.

Settings read (``ToolContext.settings.tools.files``):
  ``max_read_chars``: how much text one read_file call returns; a bigger file is read in pieces
  with ``offset``/``limit``. No line is held whole beyond it, however long.
  ``max_file_bytes``: read_file and edit_file refuse larger files.
  ``max_list_entries``: how many entries list_dir shows.
"""

from __future__ import annotations

import abc
import asyncio
import io
import os
from pathlib import Path

from pydantic import BaseModel, Field

from picoora.safe_fs import UnsafeFile, append_to_file, open_dir, open_for_reading, replace_file
from picoora.tools.base import Tool, ToolContext, ToolResult
from picoora.tools.sandbox import Sandbox, SandboxError

BINARY_SNIFF_BYTES = 8192
NEW_FILE_MODE = 0o644


class PathArgs(BaseModel):
    path: str = Field(description="File path, relative to the workspace")


class _PathTool(Tool):
    """A file tool: resolves ``args.path`` through the sandbox, then runs ``work`` in a thread."""

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        assert isinstance(args, PathArgs)
        sandbox = Sandbox.from_context(ctx)
        try:
            path = sandbox.resolve(args.path)
        except SandboxError as exc:
            return ToolResult.error(str(exc))
        try:
            return await asyncio.to_thread(self.work, path, args, ctx, sandbox)
        except UnsafeFile as exc:
            return ToolResult.error(str(exc))
        except FileNotFoundError:
            return ToolResult.error(f"not found: {args.path}")
        except IsADirectoryError:
            return ToolResult.error(f"{args.path} is a directory")
        except NotADirectoryError:
            return ToolResult.error(f"{args.path} is not a directory")
        except PermissionError:
            return ToolResult.error(f"permission denied: {args.path}")
        except UnicodeDecodeError:
            return ToolResult.error(f"{args.path} is not UTF-8 text")

    @abc.abstractmethod
    def work(self, path: Path, args: PathArgs, ctx: ToolContext, sandbox: Sandbox) -> ToolResult:
        """Do the file work on the sandbox-approved real ``path`` (runs in a worker thread)."""


class ReadFileArgs(PathArgs):
    offset: int = Field(1, ge=1, description="First line to read (1-based)")
    limit: int | None = Field(None, ge=1, description="How many lines to read at most (default: as many as fit)")


class ReadFile(_PathTool):
    name = "read_file"
    description = "Read a text file; a large one comes in pieces, each saying the offset to go on from."
    Args = ReadFileArgs

    def work(self, path: Path, args: ReadFileArgs, ctx: ToolContext, sandbox: Sandbox) -> ToolResult:  # type: ignore[override]
        limits = ctx.settings.tools.files
        if not path.exists():
            return ToolResult.error(f"file not found: {args.path}")
        with open_for_reading(path, sandbox.is_allowed, limits.max_file_bytes) as fd:
            if b"\0" in os.pread(fd, BINARY_SNIFF_BYTES, 0):
                return ToolResult.error(f"{args.path} is a binary file ({os.fstat(fd).st_size} bytes); "
                                        "read_file shows text only")
            max_chars = limits.max_read_chars
            lines, more = _read_lines(fd, args.offset, args.limit, max_chars)
        if not lines:
            if more:
                return ToolResult.error(
                    f"line {args.offset} of {args.path} alone is longer than {max_chars} characters")
            if args.offset > 1:
                return ToolResult.error(f"{args.path} has fewer than {args.offset} lines")
            return ToolResult("(empty file)")
        text = "".join(lines)
        if more:
            last = args.offset + len(lines) - 1
            text += f"\n[lines {args.offset}-{last} shown; the file continues: read_file offset={last + 1}]"
        return ToolResult(text)


def _read_lines(fd: int, offset: int, limit: int | None, max_chars: int) -> tuple[list[str], bool]:
    """Lines from ``offset`` on, stopping at ``limit`` lines or ``max_chars``; also whether more follow.
    No more than ``max_chars + 1`` characters are held at once, however long a line is."""
    lines: list[str] = []
    used = 0
    number = 1
    raw = os.fdopen(os.dup(fd), "rb")
    with io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="") as fh:
        while piece := fh.readline(max_chars + 1):
            if number >= offset:
                if (limit is not None and len(lines) >= limit) or used + len(piece) > max_chars:
                    return lines, True
                lines.append(piece)
                used += len(piece)
            if piece.endswith(("\n", "\r")):
                number += 1
    return lines, False


class WriteFileArgs(PathArgs):
    path: str = Field(description="File path, relative to the workspace; parent directories are created")
    content: str = Field(description="The whole new content of the file")


class WriteFile(_PathTool):
    name = "write_file"
    description = "Write content to a file, replacing it if it exists."
    Args = WriteFileArgs

    def work(self, path: Path, args: WriteFileArgs, ctx: ToolContext, sandbox: Sandbox) -> ToolResult:  # type: ignore[override]
        replace_file(path, args.content.encode("utf-8"), sandbox.is_allowed, NEW_FILE_MODE)
        return ToolResult(f"File written: {args.path} ({len(args.content.encode())} bytes)")


class EditFileArgs(PathArgs):
    old_text: str = Field(min_length=1, description="Exact text to replace; must occur exactly once")
    new_text: str = Field(description="Replacement text")


class EditFile(_PathTool):
    name = "edit_file"
    description = "Edit a file: replace old_text with new_text."
    Args = EditFileArgs

    def work(self, path: Path, args: EditFileArgs, ctx: ToolContext, sandbox: Sandbox) -> ToolResult:  # type: ignore[override]
        if not path.exists():
            return ToolResult.error(f"file not found: {args.path}")
        with open_for_reading(path, sandbox.is_allowed, ctx.settings.tools.files.max_file_bytes) as fd:
            with os.fdopen(os.dup(fd), "rb") as fh:
                content = fh.read().decode("utf-8")
        count = content.count(args.old_text)
        if count == 0:
            return ToolResult.error("old_text not found in file. Make sure it matches exactly")
        if count > 1:
            return ToolResult.error(f"old_text appears {count} times. Please provide more context to make it unique")
        replace_file(path, content.replace(args.old_text, args.new_text, 1).encode("utf-8"), sandbox.is_allowed,
                     NEW_FILE_MODE)
        return ToolResult(f"File edited: {args.path}")


class AppendFileArgs(PathArgs):
    path: str = Field(description="File path, relative to the workspace; created if missing")
    content: str = Field(description="Text to add at the end of the file")


class AppendFile(_PathTool):
    name = "append_file"
    description = "Append content to the end of a file."
    Args = AppendFileArgs

    def work(self, path: Path, args: AppendFileArgs, ctx: ToolContext, sandbox: Sandbox) -> ToolResult:  # type: ignore[override]
        append_to_file(path, args.content.encode("utf-8"), sandbox.is_allowed, NEW_FILE_MODE)
        return ToolResult(f"Appended to {args.path}")


class ListDirArgs(PathArgs):
    path: str = Field(".", description="Directory path, relative to the workspace")


class ListDir(_PathTool):
    name = "list_dir"
    description = "List files and directories in a path."
    Args = ListDirArgs

    def work(self, path: Path, args: ListDirArgs, ctx: ToolContext, sandbox: Sandbox) -> ToolResult:  # type: ignore[override]
        if not path.exists():
            return ToolResult.error(f"directory not found: {args.path}")
        if not path.is_dir():
            raise NotADirectoryError(path)
        with open_dir(path, sandbox.is_allowed) as dfd:
            with os.scandir(dfd) as scan:
                entries = sorted(((e.name, e.is_dir(follow_symlinks=False)) for e in scan
                                  if not sandbox.is_protected(path / e.name)),  # .picoora/: not even its name
                                 key=lambda e: e[0])
        if not entries:
            return ToolResult("(empty directory)")
        cap = ctx.settings.tools.files.max_list_entries
        lines = [f"DIR:  {name}" if is_dir else f"FILE: {name}" for name, is_dir in entries[:cap]]
        if len(entries) > cap:
            lines.append(f"... ({len(entries) - cap} more entries not shown)")
        return ToolResult("\n".join(lines))


FILE_TOOLS: tuple[type[Tool], ...] = (ReadFile, WriteFile, EditFile, AppendFile, ListDir)
