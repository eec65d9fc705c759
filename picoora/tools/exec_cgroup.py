"""A cgroup for one ``exec`` command (root only): memory and processes counted for its whole tree.

rlimits are per process: four processes held 3.7 GB under a "1024 MB" ``RLIMIT_AS``. A cgroup counts
every process the command starts, and the pages it puts in a tmpfs (``/tmp``, ``/dev/shm``), together:

- cgroup v2 (one hierarchy): ``memory.max``, ``memory.swap.max`` 0 and ``pids.max`` in one folder, where
  the controllers are enabled at the top (``cgroup.subtree_control``);
- cgroup v1 (a hierarchy per controller, e.g. the hybrid layout): ``memory.limit_in_bytes`` (and
  ``memory.memsw.limit_in_bytes``, so swap is no way round it) and ``pids.max``, a folder in each.

Only root may make one at the top of a hierarchy; a user's gateway falls back to rlimits and the
watchdog (:func:`enforcement` says which, ``picoora status`` shows it). A command is started inside by a
shell that writes itself into each ``cgroup.procs`` and then becomes the command. When the kernel had to
kill a process for memory, the watchdog stops the rest and tells the model which limit it reached.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
from dataclasses import dataclass
from pathlib import Path

CGROUP_PREFIX = "picoora-exec-"
CONTROLLERS = ("memory", "pids")


@dataclass(frozen=True)
class Hierarchy:
    point: Path  # where it is mounted
    v2: bool


def hierarchies() -> dict[str, Hierarchy]:
    """Where each controller of CONTROLLERS can be used, from /proc/self/mounts (v1 preferred per controller
    only where v2 does not offer it: a hybrid machine's v2 usually has none enabled)."""
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return {}
    found: dict[str, Hierarchy] = {}
    for line in mounts:
        fields = line.split()
        if len(fields) < 4:
            continue
        point, kind, options = Path(fields[1]), fields[2], fields[3].split(",")
        if kind == "cgroup":
            for controller in CONTROLLERS:
                if controller in options:
                    found.setdefault(controller, Hierarchy(point, False))
        elif kind == "cgroup2":
            try:
                enabled = (point / "cgroup.subtree_control").read_text().split()
            except OSError:
                continue
            for controller in CONTROLLERS:
                if controller in enabled:
                    found.setdefault(controller, Hierarchy(point, True))
    return found


@functools.lru_cache(maxsize=1)
def usable_controllers() -> tuple[str, ...]:
    """The controllers this gateway can put a command under (made and removed once to be sure)."""
    if os.geteuid() != 0:
        return ()
    trial = CommandCgroup.create(memory_bytes=1 << 30, processes=1024)
    if trial is None:
        return ()
    trial.remove_now()
    return tuple(sorted(trial.controllers))


def enforcement() -> str:
    """Which limits hold for a command's whole tree on this machine, for ``picoora status``."""
    controllers = usable_controllers()
    if set(controllers) == set(CONTROLLERS):
        return "memory and processes counted for the command's whole tree (a cgroup)"
    if controllers:
        return f"{controllers[0]} counted for the whole tree (a cgroup); the rest per process"
    why = "the gateway is not root" if os.geteuid() != 0 else "no cgroup hierarchy root can write"
    return (f"memory per process only ({why}: no cgroup; several processes together may exceed it), "
            "processes by the watchdog")


class CommandCgroup:
    """One folder per hierarchy, holding one command's processes."""

    def __init__(self, folders: dict[str, tuple[Path, Hierarchy]]):
        self.folders = folders  # controller -> (folder, its hierarchy)

    @property
    def controllers(self) -> list[str]:
        return list(self.folders)

    @classmethod
    def create(cls, *, memory_bytes: int, processes: int) -> CommandCgroup | None:
        """A fresh cgroup with these walls, or None where root cannot make one."""
        if os.geteuid() != 0:
            return None
        name = f"{CGROUP_PREFIX}{os.getpid()}-{os.urandom(4).hex()}"
        made: dict[Path, Hierarchy] = {}
        folders: dict[str, tuple[Path, Hierarchy]] = {}
        for controller, hierarchy in hierarchies().items():
            folder = hierarchy.point / name
            try:
                if folder not in made:
                    _remove_orphans(hierarchy.point)
                    folder.mkdir()
                    made[folder] = hierarchy
                _set_walls(folder, hierarchy, controller, memory_bytes, processes)
            except OSError:
                continue
            folders[controller] = (folder, hierarchy)
        unused = [folder for folder in made if folder not in {f for f, _ in folders.values()}]
        for folder in unused:
            with contextlib.suppress(OSError):
                folder.rmdir()
        return cls(folders) if folders else None

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` started inside: a shell writes itself (0) into each cgroup.procs, then becomes ``argv``."""
        procs = list(dict.fromkeys(str(folder / "cgroup.procs") for folder, _ in self.folders.values()))
        script = 'n=$1; shift; i=0; while [ $i -lt "$n" ]; do echo 0 > "$1" || exit 126; shift; i=$((i+1)); done; ' \
                 'exec "$@"'
        return ["/bin/sh", "-c", script, "sh", str(len(procs)), *procs, *argv]

    def processes(self) -> int | None:
        """Processes in it now, or None without the pids controller."""
        if "pids" not in self.folders:
            return None
        try:
            return int((self.folders["pids"][0] / "pids.current").read_text())
        except (OSError, ValueError):
            return 0

    def memory_kills(self) -> int:
        """How many of its processes the kernel killed for the memory limit."""
        if "memory" not in self.folders:
            return 0
        folder, hierarchy = self.folders["memory"]
        source = "memory.events" if hierarchy.v2 else "memory.oom_control"
        try:
            lines = (folder / source).read_text().splitlines()
        except OSError:
            return 0
        counts = dict(line.split()[:2] for line in lines if len(line.split()) >= 2)
        return int(counts.get("oom_kill", "0"))

    async def remove(self) -> None:
        """Kill whatever is left and remove every folder (a cgroup can be removed only once empty)."""
        for _ in range(100):
            if self._try_remove():
                return
            await asyncio.sleep(0.01)

    def remove_now(self) -> None:
        self._try_remove()

    def _try_remove(self) -> bool:
        left = False
        for folder, hierarchy in {f: h for f, h in self.folders.values()}.items():
            try:
                folder.rmdir()
            except FileNotFoundError:
                continue
            except OSError:
                _kill_members(folder, hierarchy)
                left = True
        return not left


def _set_walls(folder: Path, hierarchy: Hierarchy, controller: str, memory_bytes: int, processes: int) -> None:
    if controller == "pids":
        (folder / "pids.max").write_text(str(processes))
    elif hierarchy.v2:
        (folder / "memory.max").write_text(str(memory_bytes))
        with contextlib.suppress(FileNotFoundError):  # no swap accounting: nothing to wall off
            (folder / "memory.swap.max").write_text("0")
    else:
        (folder / "memory.limit_in_bytes").write_text(str(memory_bytes))
        with contextlib.suppress(FileNotFoundError):
            (folder / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))


def _kill_members(folder: Path, hierarchy: Hierarchy) -> None:
    if hierarchy.v2:
        with contextlib.suppress(OSError):
            (folder / "cgroup.kill").write_text("1")
            return
    try:
        members = (folder / "cgroup.procs").read_text().split()
    except OSError:
        return
    for pid in members:
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pid), signal.SIGKILL)


def _remove_orphans(point: Path) -> None:
    """Remove the empty cgroups of picoora processes that died mid-command (a ``kill -9``)."""
    for path in point.glob(f"{CGROUP_PREFIX}*"):
        pid = path.name.removeprefix(CGROUP_PREFIX).split("-")[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            with contextlib.suppress(OSError):
                path.rmdir()
