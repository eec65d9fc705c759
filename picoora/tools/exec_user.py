"""Who a root gateway's commands (``exec`` and stdio MCP servers) run as: an unprivileged host uid.

uid 0 without capabilities still owns every root-only file of the host, so covering a list of folders
could never hide them all (round three read 0600 files from ``/var/lib``, ``/opt``, ``/var/cache``, ...).
Under a root gateway a command therefore runs as ``tools.exec.run_as`` (a user name or a number; default
``nobody``): bubblewrap, started as root, builds the mounts, then ``setpriv`` switches to that uid and gid,
clears the supplementary groups and empties every capability set before the command starts. The kernel's
own permission checks then keep out everything of root's that is not world-readable, wherever it lies.

The workspace is handed to that uid (:func:`hand_over_workspace`: owner of the workspace and of what the
gateway made in it), so a command can write there; the store's private folder and other covered paths
are never touched. Where no such user can be had, a root gateway refuses exec with one line saying how
to fix it, unless ``tools.exec.allow_root_commands`` says to run commands as root anyway.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from picoora.config import ExecToolConfig

SETPRIV = "setpriv"
HOW_TO_FIX = ("create an unprivileged user for them (useradd --system --no-create-home --shell /usr/sbin/nologin "
              "picoora-exec) and set tools.exec.run_as to it, or set tools.exec.allow_root_commands to run them "
              "as root")
# Capabilities bubblewrap keeps until setpriv empties every set: entering the workspace, which belongs to the
# user and may be 0700 (bwrap's --chdir runs as root, after its own capability drop), and the switch itself.
SWITCH_CAPS = ("CAP_DAC_READ_SEARCH", "CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP")
# Walking a huge workspace once is fine; an endless one (a bind loop) must not stall a call.
HAND_OVER_LIMIT = 200_000


@dataclass(frozen=True)
class ExecUser:
    name: str
    uid: int
    gid: int

    def describe(self) -> str:
        return f"uid {self.uid}" if self.name == str(self.uid) else f"uid {self.uid} ({self.name})"

    def switch_argv(self) -> list[str]:
        """The prefix that runs the rest of the argv as this user with no capability and no way back."""
        return [SETPRIV, f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups",
                "--inh-caps=-all", "--bounding-set=-all", "--"]


class NoExecUser(Exception):
    """A root gateway has no unprivileged user to run commands as; the message says why and how to fix it."""


def resolve(cfg: ExecToolConfig) -> ExecUser:
    """The unprivileged user ``tools.exec.run_as`` names, or NoExecUser."""
    wanted = cfg.run_as.strip()
    try:
        entry = pwd.getpwuid(int(wanted)) if wanted.isdigit() else pwd.getpwnam(wanted)
        user = ExecUser(entry.pw_name, entry.pw_uid, entry.pw_gid)
    except KeyError:
        if not wanted.isdigit():
            raise NoExecUser(f"the user tools.exec.run_as names ({wanted!r}) does not exist") from None
        user = ExecUser(wanted, int(wanted), int(wanted))  # a bare uid needs no passwd entry
    if user.uid == 0 or user.gid == 0:
        raise NoExecUser(f"tools.exec.run_as ({wanted!r}) is root")
    if shutil.which(SETPRIV) is None:
        raise NoExecUser("setpriv (util-linux), which switches to tools.exec.run_as, is not installed")
    return user


def hand_over_workspace(workspace: Path, user: ExecUser, keep_out: tuple[Path, ...]) -> None:
    """Make ``user`` the owner of the workspace and of what lies in it, except ``keep_out`` (the store's
    private folder, covered paths): done once, when the workspace is not yet that user's. Symlinks are
    changed themselves, never followed."""
    if not workspace.is_dir() or workspace.stat().st_uid == user.uid:
        return
    for path in _entries(workspace, keep_out):
        os.lchown(path, user.uid, user.gid)
    os.chown(workspace, user.uid, user.gid)  # last: an interrupted hand-over is done again next call


def _entries(workspace: Path, keep_out: tuple[Path, ...]) -> list[Path]:
    """What lies in ``workspace`` outside ``keep_out`` that may change hands, at most HAND_OVER_LIMIT entries:
    folders, symlinks (themselves) and files with one link. A file with others is skipped: a command that
    ran as root before could have linked ``/etc/shadow`` in, and its owner would become the exec user."""
    found: list[Path] = []
    for folder, dirs, files in os.walk(workspace):
        here = Path(folder)
        dirs[:] = [d for d in dirs if here / d not in keep_out]
        paths = (here / name for name in (*dirs, *files))
        found += [path for path in paths if path not in keep_out and _may_change_hands(path)]
        if len(found) >= HAND_OVER_LIMIT:
            break
    return found


def _may_change_hands(path: Path) -> bool:
    try:
        info = path.lstat()
    except OSError:
        return False
    if stat.S_ISDIR(info.st_mode) or stat.S_ISLNK(info.st_mode):
        return True
    return stat.S_ISREG(info.st_mode) and info.st_nlink == 1
