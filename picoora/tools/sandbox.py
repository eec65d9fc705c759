"""Where tools may touch the disk: workspace confinement by real path, and files no tool may touch.

A path is resolved against the workspace with every symlink followed (for a file that does not
exist yet, through its nearest existing ancestor) and compared with the workspace's own real path
component by component, so ``..`` escapes, absolute paths elsewhere, symlinks pointing out and a
sibling directory sharing a prefix (``ws-old`` next to ``ws``) are all refused.

Whatever the workspace setting, the picoora config file and everything else under ``$PICOORA_HOME``
other than a workspace kept there are refused: they hold API keys and passwords (the Go version let
the agent ``cat`` its own config). So is the store's private directory in the workspace
(``picoora.store.layout``: sessions, transcripts, the memory log, the lock), and the old layout's paths
of those (``sessions/``, ``memory/memories.jsonl``, ...): a file written there would look like the
store's own to an old-layout migration. Extra paths to hide come from
``ToolContext.settings.protected_paths`` (a config file given with ``--config``, an Oracle wallet).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from picoora.config import default_config_path, picoora_home
from picoora.store.layout import FileLayout
from picoora.tools.base import ToolContext

OUTSIDE = "access denied: path is outside the workspace"
SYMLINK_OUT = "access denied: symlink resolves outside workspace"
PROTECTED = "access denied: {path} holds picoora's configuration or secrets, or the store's private files"
# The default workspace directory name under $PICOORA_HOME (see picoora.config.workspace_path).
HOME_WORKSPACE_DIR = "workspace"


class SandboxError(Exception):
    """A path a tool may not use; the message is meant for the model."""


def real(path: str | os.PathLike[str]) -> Path:
    """The path with every existing symlink resolved; missing tail components are kept as given."""
    return Path(os.path.realpath(path))


def is_within(path: Path, root: Path) -> bool:
    """Whole-component containment (``/a/bc`` is not within ``/a/b``)."""
    return path == root or path.is_relative_to(root)


@dataclass(frozen=True)
class Sandbox:
    workspace: Path  # real path
    restricted: bool
    home: Path  # real $PICOORA_HOME
    home_workspaces: tuple[Path, ...]  # workspaces inside home: the only part of home a tool may touch
    protected: tuple[Path, ...]  # extra real paths to refuse, with everything under them
    legacy: tuple[Path, ...] = ()  # the old layout's store paths: refused to file tools (exec cannot plant them
    # either: the one-time migration is long done when a tool runs, see picoora.store.layout)

    @classmethod
    def from_context(cls, ctx: ToolContext) -> Sandbox:
        return cls.for_workspace(Path(ctx.workspace), ctx.restrict_to_workspace, ctx.settings.protected_paths)

    @classmethod
    def for_workspace(cls, workspace_path: Path, restricted: bool = True,
                      protected_paths: Sequence[str] = ()) -> Sandbox:
        workspace = real(workspace_path)
        home = real(picoora_home())
        candidates = (workspace, home / HOME_WORKSPACE_DIR)
        home_workspaces = tuple(ws for ws in candidates if ws != home and is_within(ws, home))
        extra = tuple(real(Path(p).expanduser()) for p in protected_paths if p)
        layout = FileLayout(workspace)
        legacy = tuple(real(path) for path in layout.legacy_paths())
        return cls(workspace, restricted, home, home_workspaces, (real(layout.private), *extra), legacy)

    def hidden_paths(self) -> tuple[Path, ...]:
        """What the exec sandbox covers: $PICOORA_HOME (the workspace is bound back over it) and every
        protected path."""
        return (self.home, real(default_config_path()), *self.protected)

    def is_protected(self, path: Path) -> bool:
        """True for a real path holding config or secrets."""
        if any(is_within(path, p) for p in (*self.protected, *self.legacy)):
            return True
        in_home = is_within(path, self.home)
        return in_home and not any(is_within(path, ws) for ws in self.home_workspaces)

    def is_allowed(self, path: Path) -> bool:
        """True when a tool may touch this real path."""
        inside = is_within(path, self.workspace) or not self.restricted
        return inside and not self.is_protected(path)

    def resolve(self, raw: str, base: Path | None = None) -> Path:
        """The real path a tool should use for ``raw`` (relative to ``base`` or the workspace), or SandboxError."""
        given = Path(raw).expanduser()
        if not given.is_absolute():
            given = (base or self.workspace) / given
        resolved = real(given)
        if self.restricted and not is_within(resolved, self.workspace):
            # Lexically inside but really outside: a symlink on the way points out.
            lexical = Path(os.path.normpath(given))
            raise SandboxError(SYMLINK_OUT if is_within(lexical, self.workspace) else OUTSIDE)
        if self.is_protected(resolved):
            raise SandboxError(PROTECTED.format(path=raw))
        return resolved
