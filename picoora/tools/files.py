"""File tools: read_file, write_file, edit_file, append_file, list_dir.

Every path goes through the sandbox (``picoora.tools.sandbox``) and the tool then works on the real
path it returned. Writes replace the file atomically (temp file in the same directory, fsync,
rename), so a crash leaves the old or the new content, never half of it.

Settings read (``ToolContext.settings["files"]``):
  ``max_read_chars``: how much text one read_file call returns (default 40000); a bigger file is
  read in pieces with ``offset``/``limit``.
  ``max_list_entries``: how many entries list_dir shows (default 1000).
"""

from __future__ import annotations

import abc
import asyncio
import os
from pathlib import Path

from pydantic import BaseModel, Field

from picoora.atomic import atomic_write_text
from picoora.tools.base import Tool, ToolContext, ToolResult
from picoora.tools.sandbox import Sandbox, SandboxError

DEFAULT_MAX_READ_CHARS = 40_000
DEFAULT_MAX_LIST_ENTRIES = 1000
BINARY_SNIFF_BYTES = 8192
NEW_FILE_MODE = 0o644


def _file_setting(ctx: ToolContext, key: str, default: int) -> int:
    return int(ctx.settings.get("files", {}).get(key, default))


def atomic_write(path: Path, data: str) -> None:
    """Replace ``path`` with ``data`` (UTF-8), keeping its permissions; readers see old or new, never a mix."""
    mode = path.stat().st_mode & 0o7777 if path.exists() else NEW_FILE_MODE
    atomic_write_text(path, data, mode)


class PathArgs(BaseModel):
    path: str = Field(description="File path, relative to the workspace")


class _PathTool(Tool):
    """A file tool: resolves ``args.path`` through the sandbox, then runs ``work`` in a thread."""

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        assert isinstance(args, PathArgs)
        try:
            path = Sandbox.from_context(ctx).resolve(args.path)
        except SandboxError as exc:
            return ToolResult.error(str(exc))
        try:
            return await asyncio.to_thread(self.work, path, args, ctx)
        except IsADirectoryError:
            return ToolResult.error(f"{args.path} is a directory")
        except NotADirectoryError:
            return ToolResult.error(f"{args.path} is not a directory")
        except PermissionError:
            return ToolResult.error(f"permission denied: {args.path}")
        except UnicodeDecodeError:
            return ToolResult.error(f"{args.path} is not UTF-8 text")

    @abc.abstractmethod
    def work(self, path: Path, args: PathArgs, ctx: ToolContext) -> ToolResult:
        """Do the file work on the sandbox-approved real ``path`` (runs in a worker thread)."""


class ReadFileArgs(PathArgs):
    offset: int = Field(1, ge=1, description="First line to read (1-based)")
    limit: int | None = Field(None, ge=1, description="How many lines to read at most (default: as many as fit)")


class ReadFile(_PathTool):
    name = "read_file"
    description = (
        "Read a text file. Large files come back in pieces: the result says which lines it holds "
        "and the offset to continue from."
    )
    Args = ReadFileArgs

    def work(self, path: Path, args: ReadFileArgs, ctx: ToolContext) -> ToolResult:  # type: ignore[override]
        if not path.exists():
            return ToolResult.error(f"file not found: {args.path}")
        with path.open("rb") as fh:
            if b"\0" in fh.read(BINARY_SNIFF_BYTES):
                return ToolResult.error(f"{args.path} is a binary file ({path.stat().st_size} bytes); read_file shows text only")
        max_chars = _file_setting(ctx, "max_read_chars", DEFAULT_MAX_READ_CHARS)
        lines, more = _read_lines(path, args.offset, args.limit, max_chars)
        if not lines:
            if more:
                return ToolResult.error(f"line {args.offset} of {args.path} alone is longer than {max_chars} characters")
            if args.offset > 1:
                return ToolResult.error(f"{args.path} has fewer than {args.offset} lines")
            return ToolResult("(empty file)")
        text = "".join(lines)
        if more:
            last = args.offset + len(lines) - 1
            text += f"\n[lines {args.offset}-{last} shown; the file continues: read_file offset={last + 1}]"
        return ToolResult(text)


def _read_lines(path: Path, offset: int, limit: int | None, max_chars: int) -> tuple[list[str], bool]:
    """Lines from ``offset`` on, stopping at ``limit`` lines or ``max_chars``; also whether more follow."""
    lines: list[str] = []
    used = 0
    with path.open("r", encoding="utf-8", errors="replace", newline="") as fh:
        for number, line in enumerate(fh, start=1):
            if number < offset:
                continue
            if (limit is not None and len(lines) >= limit) or used + len(line) > max_chars:
                return lines, True
            lines.append(line)
            used += len(line)
    return lines, False


class WriteFileArgs(PathArgs):
    path: str = Field(description="File path, relative to the workspace; parent directories are created")
    content: str = Field(description="The whole new content of the file")


class WriteFile(_PathTool):
    name = "write_file"
    description = "Write content to a file, replacing it if it exists."
    Args = WriteFileArgs

    def work(self, path: Path, args: WriteFileArgs, ctx: ToolContext) -> ToolResult:  # type: ignore[override]
        atomic_write(path, args.content)
        return ToolResult(f"File written: {args.path} ({len(args.content.encode())} bytes)")


class EditFileArgs(PathArgs):
    old_text: str = Field(min_length=1, description="Exact text to replace; must occur exactly once")
    new_text: str = Field(description="Replacement text")


class EditFile(_PathTool):
    name = "edit_file"
    description = "Edit a file by replacing old_text with new_text. The old_text must exist exactly in the file."
    Args = EditFileArgs

    def work(self, path: Path, args: EditFileArgs, ctx: ToolContext) -> ToolResult:  # type: ignore[override]
        if not path.is_file():
            return ToolResult.error(f"file not found: {args.path}")
        content = path.read_text(encoding="utf-8")
        count = content.count(args.old_text)
        if count == 0:
            return ToolResult.error("old_text not found in file. Make sure it matches exactly")
        if count > 1:
            return ToolResult.error(f"old_text appears {count} times. Please provide more context to make it unique")
        atomic_write(path, content.replace(args.old_text, args.new_text, 1))
        return ToolResult(f"File edited: {args.path}")


class AppendFileArgs(PathArgs):
    path: str = Field(description="File path, relative to the workspace; created if missing")
    content: str = Field(description="Text to add at the end of the file")


class AppendFile(_PathTool):
    name = "append_file"
    description = "Append content to the end of a file."
    Args = AppendFileArgs

    def work(self, path: Path, args: AppendFileArgs, ctx: ToolContext) -> ToolResult:  # type: ignore[override]
        path.parent.mkdir(parents=True, exist_ok=True)
        # One O_APPEND write: concurrent appenders never interleave inside it.
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, NEW_FILE_MODE)
        try:
            os.write(fd, args.content.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        return ToolResult(f"Appended to {args.path}")


class ListDirArgs(PathArgs):
    path: str = Field(".", description="Directory path, relative to the workspace")


class ListDir(_PathTool):
    name = "list_dir"
    description = "List files and directories in a path."
    Args = ListDirArgs

    def work(self, path: Path, args: ListDirArgs, ctx: ToolContext) -> ToolResult:  # type: ignore[override]
        if not path.exists():
            return ToolResult.error(f"directory not found: {args.path}")
        entries = sorted(path.iterdir(), key=lambda p: p.name)
        if not entries:
            return ToolResult("(empty directory)")
        cap = _file_setting(ctx, "max_list_entries", DEFAULT_MAX_LIST_ENTRIES)
        lines = [f"DIR:  {p.name}" if p.is_dir() else f"FILE: {p.name}" for p in entries[:cap]]
        if len(entries) > cap:
            lines.append(f"... ({len(entries) - cap} more entries not shown)")
        return ToolResult("\n".join(lines))


FILE_TOOLS: tuple[type[Tool], ...] = (ReadFile, WriteFile, EditFile, AppendFile, ListDir)
