"""The OS sandbox ``exec`` (and stdio MCP servers) run in: bubblewrap (``bwrap``) namespaces, and which
exec mode is in force.

A command runs as ``bwrap ... prlimit ... sh -c COMMAND`` with new user, PID, mount, IPC, UTS and cgroup
namespaces, and a new network namespace unless ``tools.exec.network`` is on. Inside it:

- every capability is dropped (``--cap-drop ALL``), also when the gateway runs as root: a root
  bwrap otherwise keeps them all, and one call could unmount the covers below, remount ``/``
  read-write and rewrite the host. As root the user namespace is forced (its mounts are locked
  against the inner side) and the system is always read-only;
- the system is mounted read-only (read-write for a user when ``restrict_to_workspace`` is off), the
  workspace read-write, ``/proc/sys`` read-only (bwrap leaves it writable for root: a capability-less
  uid 0 can still write sysctls);
- ``$PICOORA_HOME``, the store's private directory, the config file and every protected path are
  covered by an empty tmpfs (or ``/dev/null`` for a file); so are the user's home (restricted), /tmp
  and /run (sockets of other services). Running as root, uid 0 keeps reading what root owns, so the
  host's secrets that a user could not read (``/etc/shadow``, SSH host keys, ``/root``, ...: see
  :func:`host_secrets`) are covered too. Every tmpfs has a size, so none can fill memory;
- ``/proc`` is the new PID namespace's own, so no other process (the assistant included) can be seen,
  and the environment is a fresh minimal one. bwrap itself is started with that environment, since
  inside the namespace ``/proc/1/environ`` is bwrap's;
- ``--die-with-parent`` and the PID namespace make every process of the command die with it: when
  the command ends (or is killed on timeout) bwrap, the namespace's init, exits, and the kernel kills
  whatever is left, ``setsid`` daemons included. ``--new-session`` keeps the command off our terminal.

Limits on processes, memory, file size and disk written are ``picoora.tools.exec_limits``.

Where bwrap is missing or the kernel refuses namespaces, ``exec`` is off unless the user set
``tools.exec.allow_unsandboxed``; :func:`exec_mode` says which mode is in force and what a command can
reach (``picoora status`` shows it).
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from picoora.config import ExecToolConfig
from picoora.tools.exec_cgroup import enforcement
from picoora.tools.exec_limits import ExecLimits
from picoora.tools.exec_user import HOW_TO_FIX, SWITCH_CAPS, ExecUser, NoExecUser, resolve

BWRAP = "bwrap"
PROBE_TIMEOUT_SECONDS = 5.0
SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Variables a command may inherit: locale only. Everything else (keys, tokens, PICOORA_HOME) stays out.
_KEPT_ENV = ("LANG", "LC_ALL", "LC_CTYPE", "TZ")
_NAMESPACES = ("--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try")
COVER_TMPFS_BYTES = 1024 * 1024  # an empty stand-in needs no room; writes to it are thrown away
RUN_TMPFS_BYTES = 1024 * 1024
SHM_TMPFS_BYTES = 64 * 1024 * 1024  # bwrap's /dev/shm is otherwise a folder of its unsized /dev tmpfs
SERVER_TMP_BYTES = 64 * 1024 * 1024  # a server's /tmp (memory: a tmpfs)
# Where a host keeps files only root may read. Running as root, the entries of these directories that
# others may not read are covered, so a root gateway's command reads no more of them than a user's.
HOST_SECRET_DIRS = ("/etc", "/etc/ssh", "/etc/ssl", "/etc/ssl/private", "/var/lib", "/var/log", "/var/backups",
                    "/var/spool", "/var/mail", "/boot")
HOST_SECRET_PATHS = ("/root",)


def running_as_root() -> bool:
    return os.geteuid() == 0


def _isolation(user: ExecUser | None = None) -> list[str]:
    """Namespaces and capabilities. Switching to ``user`` (a root gateway's commands) needs the host's
    uids, so no user namespace: bwrap keeps only what setpriv needs, and setpriv empties every set. As
    root otherwise the user namespace is forced, not just tried."""
    if user is not None:
        return [*_NAMESPACES, "--cap-drop", "ALL", *(arg for cap in SWITCH_CAPS for arg in ("--cap-add", cap))]
    return ["--unshare-user" if running_as_root() else "--unshare-user-try", *_NAMESPACES, "--cap-drop", "ALL"]


@dataclass(frozen=True)
class Support:
    available: bool
    reason: str  # why not, when not available


@functools.lru_cache(maxsize=1)
def probe() -> Support:
    """Whether bwrap runs here with every namespace we ask for (checked once per process)."""
    binary = shutil.which(BWRAP)
    if binary is None:
        return Support(False, "bubblewrap is not installed (apt-get install bubblewrap)")
    if shutil.which("prlimit") is None:
        return Support(False, "prlimit (util-linux), which sets exec's limits, is not installed")
    argv = [binary, *_isolation(), "--unshare-net", "--die-with-parent", "--new-session",
            "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--", "true"]
    try:
        done = subprocess.run(argv, env=clean_env(Path("/")), stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=PROBE_TIMEOUT_SECONDS, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Support(False, f"bubblewrap could not start: {exc}")
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return Support(False,
                       f"the kernel refused bubblewrap's namespaces ({detail[-1] if detail else done.returncode})")
    return Support(True, "")


@dataclass(frozen=True)
class ExecMode:
    name: str  # "sandboxed", "unsandboxed", "off" (no sandbox and none allowed), "disabled" (config)
    description: str

    @property
    def runs(self) -> bool:
        return self.name in ("sandboxed", "unsandboxed")


def exec_mode(cfg: ExecToolConfig) -> ExecMode:
    """Which way ``exec`` runs commands with this config on this machine, and what a command can reach."""
    if not cfg.enabled:
        return ExecMode("disabled", "off (tools.exec.enabled is false)")
    support = probe()
    limits = ExecLimits.from_config(cfg).describe()
    if support.available:
        network = "network on" if cfg.network else "no network"
        user = command_user(cfg)
        if isinstance(user, NoExecUser):
            return ExecMode("off", f"off: the gateway runs as root and {user}; {HOW_TO_FIX}")
        if user is not None:
            reach = (f"the gateway runs as root, commands as {user.describe()} with no capabilities: they read "
                     "only what that user may read")
        elif running_as_root():
            reach = ("running as root (tools.exec.allow_root_commands): every capability dropped, the system "
                     "read-only, root-only host files (/etc/shadow, /root, ...) covered")
        else:
            reach = f"running as uid {os.geteuid()}: no capabilities, reads what that user may read"
        return ExecMode("sandboxed", f"sandboxed by bubblewrap (writes only the workspace, {network}, cannot see the "
                                     f"config, the store or other processes; {reach}; at most {limits}; "
                                     f"{enforcement()})")
    if cfg.allow_unsandboxed:
        return ExecMode("unsandboxed", f"UNSANDBOXED (tools.exec.allow_unsandboxed): {support.reason}; commands run "
                                       f"as uid {os.geteuid()} and reach all it can, at most {limits}")
    return ExecMode("off", f"off: {support.reason}; or set tools.exec.allow_unsandboxed to run commands without it")


def command_user(cfg: ExecToolConfig) -> ExecUser | NoExecUser | None:
    """Whom a command runs as: None for the gateway's own uid (a user's gateway, or a root one told to
    with ``allow_root_commands``), the unprivileged user under root, or why there is none."""
    if not running_as_root() or cfg.allow_root_commands:
        return None
    try:
        return resolve(cfg)
    except NoExecUser as exc:
        return exc


def clean_env(home: Path) -> dict[str, str]:
    """The whole environment a sandboxed command (and bwrap itself) starts with."""
    env = {name: os.environ[name] for name in _KEPT_ENV if name in os.environ}
    env.update(PATH=SANDBOX_PATH, HOME=str(home), TERM="dumb", SHELL="/bin/sh")
    return env


@dataclass(frozen=True)
class Mounts:
    """What the sandbox shows: ``workspace`` read-write, ``hidden`` paths covered, the rest of the
    system read-only unless ``writable_system``. Paths are real (symlink-free) paths."""

    workspace: Path
    hidden: tuple[Path, ...]
    writable_system: bool
    readable: tuple[Path, ...] = ()  # bound back read-only over the covers (a server's own installation)


def host_secrets() -> list[Path]:
    """Root-only files and folders of the host (not readable by others), for a root gateway to cover."""
    found = [Path(p) for p in HOST_SECRET_PATHS if os.path.lexists(p)]
    for folder in HOST_SECRET_DIRS:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if not entry.is_symlink() and not info.st_mode & stat.S_IROTH:
                found.append(Path(entry.path))
    return found


def bwrap_argv(command: list[str], cwd: Path, mounts: Mounts, *, network: bool, tmp_bytes: int,
               user: ExecUser | None = None) -> list[str]:
    """The full argv that runs ``command`` in the sandbox with ``cwd`` as its directory and a /tmp of
    at most ``tmp_bytes``, as ``user`` when given (a root gateway's commands)."""
    root = running_as_root()
    argv = [BWRAP, *_isolation(user), "--die-with-parent", "--new-session"]
    if not network:
        argv.append("--unshare-net")
    writable_system = mounts.writable_system and not root
    argv += ["--bind" if writable_system else "--ro-bind", "/", "/",
             "--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys", "--dev", "/dev",
             # bwrap cannot size /dev (a tmpfs a user namespace's uid owns): read-only, /dev/shm its own tmpfs.
             *_sized_tmpfs("/dev/shm", SHM_TMPFS_BYTES), "--remount-ro", "/dev",
             "--size", str(RUN_TMPFS_BYTES), "--tmpfs", "/run",
             *_sized_tmpfs("/tmp", tmp_bytes)]
    hidden = list(mounts.hidden)
    if not writable_system:
        hidden += [Path("/home"), Path("/root"), Path.home().resolve()]
    if root and user is None:
        hidden += host_secrets()  # uid 0 reads whatever root owns: cover what we know of
    # Mounts apply in order: what may hold the workspace (home, $PICOORA_HOME) is covered before the
    # workspace is bound over it, what lies inside the workspace (the store's files) after.
    inside = [p for p in hidden if p != mounts.workspace and p.is_relative_to(mounts.workspace)]
    argv += _cover([p for p in hidden if p not in inside])
    for path in mounts.readable:
        argv += [*_open_parents(path), "--ro-bind", str(path), str(path)]
    # Missing only before onboarding.
    argv += [*_open_parents(mounts.workspace), "--bind-try", str(mounts.workspace), str(mounts.workspace)]
    argv += _cover(inside)
    argv += ["--chdir", str(cwd), "--", *(user.switch_argv() if user else []), *command]
    return argv


def _open_parents(path: Path) -> list[str]:
    """The folders leading to ``path``, made passable (0755) where a cover hides them: bwrap makes them
    0700 as root, which an unprivileged ``run_as`` could not pass. Existing folders are left as they are."""
    return [arg for parent in reversed(path.parents[:-1]) for arg in ("--perms", "0755", "--dir", str(parent))]


def _sized_tmpfs(path: str, size: int) -> list[str]:
    """A tmpfs of at most ``size`` bytes that any uid may write (sticky, like /tmp)."""
    return ["--perms", "1777", "--size", str(size), "--tmpfs", path]


def _cover(paths: list[Path]) -> list[str]:
    """Arguments covering each existing path: a small empty tmpfs over a directory, /dev/null over a file."""
    args: list[str] = []
    for path in dict.fromkeys(paths):
        if path.is_dir():
            args += ["--size", str(COVER_TMPFS_BYTES), "--tmpfs", str(path)]
        elif path.exists():
            args += ["--ro-bind", "/dev/null", str(path)]
    return args


def install_prefixes(command: list[str], hidden: tuple[Path, ...]) -> tuple[Path, ...]:
    """What a server's command needs to see, when the sandbox may show it read-only: the installation its
    program's path names (a virtualenv, which may lie under /tmp, a fresh tmpfs in the sandbox), the one that
    resolves to (the interpreter the venv links to), and the folder of each script it is given by path
    (``python ~/mcp/server.py``); never a home folder itself or a folder holding a hidden path (config, store)."""
    found = shutil.which(command[0])
    if found is None:
        return ()
    wanted = []
    for binary in (Path(os.path.abspath(found)), Path(os.path.realpath(found))):
        wanted.append(binary.parent.parent if binary.parent.name == "bin" else binary.parent)
    for argument in command[1:]:
        path = Path(argument).expanduser()
        if path.is_absolute() and path.is_file():
            wanted += [path.parent, Path(os.path.realpath(path)).parent]
    homes = {Path("/"), Path("/root"), Path("/home"), Path.home().resolve()}
    shown = [folder for folder in wanted
             if folder not in homes and folder.parent != Path("/home")
             and not any(h == folder or h.is_relative_to(folder) for h in hidden)]
    return tuple(dict.fromkeys(shown))


def server_argv(command: list[str], workspace: Path, hidden: tuple[Path, ...], *, network: bool,
                user: ExecUser | None = None) -> list[str]:
    """The argv that runs a long-lived server (a stdio MCP server) in the sandbox exec uses: the workspace
    read-write and its directory, the system read-only, the same covers; its own installation readable
    when it lies under a cover (a Python in root's home, say)."""
    mounts = Mounts(workspace, hidden, writable_system=False, readable=install_prefixes(command, hidden))
    cwd = workspace if workspace.is_dir() else Path("/")
    return bwrap_argv(command, cwd, mounts, network=network, tmp_bytes=SERVER_TMP_BYTES, user=user)
