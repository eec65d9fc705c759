"""The OS sandbox ``exec`` runs in: bubblewrap (``bwrap``) namespaces, and which exec mode is in force.

A command runs as ``bwrap ... sh -c COMMAND`` with new user (where the kernel allows), PID, mount,
IPC, UTS and cgroup namespaces, and a new network namespace unless ``tools.exec.network`` is on.
Inside it:

- the system is mounted read-only (read-write when ``restrict_to_workspace`` is off), the
  workspace read-write;
- ``$PICOORA_HOME``, the store's private directory, the config file and every protected path are
  covered by an empty tmpfs (or ``/dev/null`` for a file); so are the user's home (restricted), /tmp
  and /run (sockets of other services);
- ``/proc`` is the new PID namespace's own, so no other process (the assistant included) can be seen,
  and the environment is a fresh minimal one. bwrap itself is started with that environment, since
  inside the namespace ``/proc/1/environ`` is bwrap's;
- ``--die-with-parent`` and the PID namespace make every process of the command die with it: when
  the command ends (or is killed on timeout) bwrap, the namespace's init, exits, and the kernel kills
  whatever is left, ``setsid`` daemons included. ``--new-session`` keeps the command off our terminal.

Where bwrap is missing or the kernel refuses namespaces, ``exec`` is off unless the user set
``tools.exec.allow_unsandboxed``; :func:`exec_mode` says which mode is in force (``picoora status``
shows it).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from picoora.config import ExecToolConfig

BWRAP = "bwrap"
PROBE_TIMEOUT_SECONDS = 5.0
SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Variables a command may inherit: locale only. Everything else (keys, tokens, PICOORA_HOME) stays out.
_KEPT_ENV = ("LANG", "LC_ALL", "LC_CTYPE", "TZ")
_NAMESPACES = ("--unshare-user-try", "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try")


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
    argv = [binary, *_NAMESPACES, "--unshare-net", "--die-with-parent", "--new-session",
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
    """Which way ``exec`` runs commands with this config on this machine."""
    if not cfg.enabled:
        return ExecMode("disabled", "off (tools.exec.enabled is false)")
    support = probe()
    if support.available:
        network = "network on" if cfg.network else "no network"
        return ExecMode("sandboxed", f"sandboxed by bubblewrap (own PID, mount, IPC namespaces; {network})")
    if cfg.allow_unsandboxed:
        return ExecMode("unsandboxed", f"UNSANDBOXED (tools.exec.allow_unsandboxed): {support.reason}")
    return ExecMode("off", f"off: {support.reason}; or set tools.exec.allow_unsandboxed to run commands without it")


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


def bwrap_argv(command: str, cwd: Path, mounts: Mounts, *, network: bool) -> list[str]:
    """The full argv that runs ``sh -c command`` in the sandbox with ``cwd`` as its directory."""
    argv = [BWRAP, *_NAMESPACES, "--die-with-parent", "--new-session"]
    if not network:
        argv.append("--unshare-net")
    argv += ["--bind" if mounts.writable_system else "--ro-bind", "/", "/",
             "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/run", "--tmpfs", "/tmp"]
    hidden = list(mounts.hidden)
    if not mounts.writable_system:
        hidden += [Path("/home"), Path("/root"), Path.home().resolve()]
    # Mounts apply in order: what may hold the workspace (home, $PICOORA_HOME) is covered before the
    # workspace is bound over it, what lies inside the workspace (the store's files) after.
    inside = [p for p in hidden if p != mounts.workspace and p.is_relative_to(mounts.workspace)]
    argv += _cover([p for p in hidden if p not in inside])
    argv += ["--bind", str(mounts.workspace), str(mounts.workspace)]
    argv += _cover(inside)
    argv += ["--chdir", str(cwd), "--", "/bin/sh", "-c", command]
    return argv


def _cover(paths: list[Path]) -> list[str]:
    """Arguments covering each existing path: an empty tmpfs over a directory, /dev/null over a file."""
    args: list[str] = []
    for path in dict.fromkeys(paths):
        if path.is_dir():
            args += ["--tmpfs", str(path)]
        elif path.exists():
            args += ["--ro-bind", "/dev/null", str(path)]
    return args
