"""Limits for one ``exec`` call: processes, memory, file size and disk written, and which one ended it.

No single mechanism holds for a user and for root, so there are three layers:

- rlimits, set by ``prlimit`` just before ``sh -c`` (inside the sandbox): ``RLIMIT_AS`` (memory per
  process), ``RLIMIT_FSIZE`` (one file) and ``RLIMIT_NPROC``. Inside bubblewrap's user namespace the
  kernel counts a user's processes per namespace, so the limit is the command's own, not the user's
  whole count (unsandboxed it would be, so it is not set there). uid 0 is exempt from
  ``RLIMIT_NPROC`` whatever its capabilities;
- for root, a pids cgroup where one is writable (cgroup v1 ``pids``, or v2 with the pids controller
  enabled at the top): the kernel's wall on processes that root is not exempt from;
- a watchdog polling while the command runs: the workspace filesystem's free space (no rlimit bounds
  many small files; when it has dropped by the limit, the command's own ``write_bytes`` in /proc decide,
  so another program writing meanwhile does not stop it) and the process count. The count is cheap to
  watch (the cgroup's ``pids.current``, or the machine's task count in ``/proc/loadavg``); only when that
  says the limit may be reached are the command's descendants counted. A command that reaches a limit
  is killed with everything it started, and the model is told which limit and which setting raises it.

The hard walls sit a few processes above ``max_processes``, so a fork bomb is seen reaching the
limit and stopped at once instead of spinning on failed forks until the timeout. Commands run at
``nice`` 10: a few hundred busy processes on two cores otherwise starved the watchdog itself (a fork
bomb took ~2 s to stop instead of ~0.35 s).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from dataclasses import dataclass
from pathlib import Path

from picoora.config import ExecToolConfig

MIB = 1024 * 1024
WATCH_SECONDS = 0.1
WALL_HEADROOM = 8  # the kernel's wall on processes, this far above where the watchdog stops the command
NICENESS = 10  # commands yield the CPU to the assistant: a busy command (a fork bomb) cannot starve the watchdog
CGROUP_PREFIX = "picoora-exec-"
_MEMORY_MARKERS = ("MemoryError", "Cannot allocate memory", "out of memory", "std::bad_alloc",
                   "memory allocation of", "Out of memory")
_FORK_MARKERS = ("Cannot fork", "fork: Resource temporarily unavailable", "fork: retry", "can't fork")


@dataclass(frozen=True)
class ExecLimits:
    processes: int
    memory_bytes: int
    file_bytes: int
    disk_bytes: int

    @classmethod
    def from_config(cls, cfg: ExecToolConfig) -> ExecLimits:
        return cls(cfg.max_processes, cfg.max_memory_mb * MIB, cfg.max_file_mb * MIB, cfg.max_disk_mb * MIB)

    def describe(self) -> str:
        return (f"{self.processes} processes, {self.memory_bytes // MIB} MiB memory per process, "
                f"{self.file_bytes // MIB} MiB per file, {self.disk_bytes // MIB} MiB written per call")

    def prlimit_argv(self, *, own_process_count: bool) -> list[str]:
        """The ``prlimit`` prefix for the command; ``own_process_count`` when the kernel counts the
        command's processes apart from the user's others (a user namespace)."""
        argv = ["nice", "-n", str(NICENESS), "prlimit", f"--as={self.memory_bytes}", f"--fsize={self.file_bytes}"]
        if own_process_count:
            argv.append(f"--nproc={self.processes + WALL_HEADROOM}")
        return [*argv, "--"]


def after_exit_note(returncode: int | None, stderr: str, limits: ExecLimits) -> str:
    """Which rlimit probably ended the command, judged from its exit status and error output, or ''."""
    if returncode in (128 + signal.SIGXFSZ, -signal.SIGXFSZ) or "File size limit exceeded" in stderr:
        return (f"Limit: a file reached the size limit ({limits.file_bytes // MIB} MiB; "
                "tools.exec.max_file_mb raises it)")
    if any(marker in stderr for marker in _MEMORY_MARKERS):
        return (f"Limit: the command may have run out of its memory limit ({limits.memory_bytes // MIB} MiB per "
                "process; tools.exec.max_memory_mb raises it)")
    if any(marker in stderr for marker in _FORK_MARKERS):
        return (f"Limit: the command may have hit the process limit ({limits.processes}; "
                "tools.exec.max_processes raises it)")
    return ""


def _pids_hierarchy() -> tuple[Path, bool] | None:
    """Where root can make a pids cgroup: (the hierarchy's mount point, whether it is cgroup v2)."""
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return None
    for line in mounts:
        fields = line.split()
        if len(fields) < 4:
            continue
        point, kind, options = Path(fields[1]), fields[2], fields[3].split(",")
        if kind == "cgroup" and "pids" in options:
            return point, False
        if kind == "cgroup2":
            try:
                enabled = (point / "cgroup.subtree_control").read_text().split()
            except OSError:
                continue
            if "pids" in enabled:
                return point, True
    return None


class PidsCgroup:
    """A pids cgroup for one command (root only): a hard wall on its processes, and their count."""

    def __init__(self, path: Path, v2: bool):
        self.path = path
        self.v2 = v2

    @classmethod
    def create(cls, limit: int) -> PidsCgroup | None:
        """A fresh cgroup holding at most ``limit`` processes, or None where root cannot make one."""
        if os.geteuid() != 0:
            return None
        found = _pids_hierarchy()
        if found is None:
            return None
        point, v2 = found
        _remove_orphans(point)
        path = point / f"{CGROUP_PREFIX}{os.getpid()}-{os.urandom(4).hex()}"
        try:
            path.mkdir()
            (path / "pids.max").write_text(str(limit))
        except OSError:
            with contextlib.suppress(OSError):
                path.rmdir()
            return None
        return cls(path, v2)

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` started inside the cgroup: a shell moves itself in (writing 0), then becomes ``argv``."""
        return ["/bin/sh", "-c", 'echo 0 > "$0" && exec "$@"', str(self.path / "cgroup.procs"), *argv]

    def current(self) -> int:
        try:
            return int((self.path / "pids.current").read_text())
        except (OSError, ValueError):
            return 0

    async def remove(self) -> None:
        """Kill whatever is left in it and remove it (a cgroup can be removed only once empty)."""
        for _ in range(100):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                self._kill_members()
                await asyncio.sleep(0.01)

    def _kill_members(self) -> None:
        if self.v2:
            with contextlib.suppress(OSError):
                (self.path / "cgroup.kill").write_text("1")
                return
        try:
            members = (self.path / "cgroup.procs").read_text().split()
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


def _machine_tasks() -> int:
    """Every task (thread) on the machine, from /proc/loadavg's ``running/total`` field."""
    try:
        return int(Path("/proc/loadavg").read_text().split()[3].split("/")[1])
    except (OSError, IndexError, ValueError):
        return 0


def descendants(root: int, stop_at: int) -> list[int]:
    """``root`` and its descendants (at most ``stop_at`` of them), from every /proc/<pid>/stat."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_bytes()
        except OSError:
            continue  # gone meanwhile
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    stack = [root]
    while stack and len(found) < stop_at:
        pid = stack.pop()
        found.append(pid)
        stack += children.get(pid, [])
    return found


def written_bytes(root: int) -> int | None:
    """Bytes ``root`` and its descendants sent to storage, or None when the kernel does not say. A process's
    ``write_bytes`` includes the children it reaped, so the live ones cover everything the command wrote."""
    total = 0
    for pid in descendants(root, 1 << 30):
        try:
            lines = Path(f"/proc/{pid}/io").read_text().splitlines()
        except FileNotFoundError:
            continue  # ended meanwhile: its parent's count has it
        except OSError:
            return None
        total += next((int(line.split()[1]) for line in lines if line.startswith("write_bytes:")), 0)
    return total


def _free_bytes(path: Path) -> int:
    info = os.statvfs(path)
    return info.f_bavail * info.f_frsize


class Watchdog:
    """Checks a running command against the limits that no rlimit enforces (or not for root)."""

    def __init__(self, limits: ExecLimits, workspace: Path, cgroup: PidsCgroup | None):
        self.limits = limits
        self.workspace = workspace
        self.cgroup = cgroup
        self.free_at_start = _free_bytes(workspace)
        self.tasks_at_start = _machine_tasks()

    def check(self, pid: int) -> str | None:
        """Why the command ``pid`` must stop now, or None. Blocking (reads /proc): call it in a thread."""
        if self._processes(pid) >= self.limits.processes:
            return (f"it reached the process limit ({self.limits.processes} processes at once; "
                    "tools.exec.max_processes raises it)")
        if self._wrote_too_much(pid):
            return (f"it wrote more than {self.limits.disk_bytes // MIB} MiB to the disk "
                    "(tools.exec.max_disk_mb raises it)")
        return None

    def _wrote_too_much(self, pid: int) -> bool:
        """The filesystem lost ``disk_bytes`` of room since the start, and the command's own writes say it
        was the command (another program writing meanwhile is not counted against it)."""
        dropped = self.free_at_start - _free_bytes(self.workspace)
        if dropped < self.limits.disk_bytes:
            return False
        written = written_bytes(pid)
        if written is None or written >= self.limits.disk_bytes:
            return True
        self.free_at_start -= dropped - written  # someone else's writes: not counted again
        return False

    def _processes(self, pid: int) -> int:
        if self.cgroup is not None:
            return self.cgroup.current()
        if _machine_tasks() - self.tasks_at_start < self.limits.processes:
            return 0  # far from the limit: no need to count
        return len(descendants(pid, self.limits.processes))

