"""Opening files for the file tools so that what is checked is what is used.

The sandbox (``picoora.tools.sandbox``) turns a name into a real, symlink-free path and approves it.
Between that check and the open, another process (an ``exec`` command, a second session) could swap
a directory on the way for a symlink. So every open here walks the approved path from ``/`` one
component at a time with ``O_NOFOLLOW`` relative to the directory opened before it (a component
that has become a symlink fails the walk), and then asks the kernel where the opened directory
really is (``/proc/self/fd``) and has the sandbox approve that.

Only regular files are read or written: a FIFO would block a read forever (files are opened with
``O_NONBLOCK`` so even the open cannot hang), a device or socket is no file to edit. The size is
checked on the open descriptor before anything is read, and a file with more than one hard link is
never written (the other name may be outside the workspace, or a store file).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafeFile(Exception):
    """The path cannot be used safely; the message is meant for the model."""


def _opened_path(fd: int) -> Path:
    return Path(os.readlink(f"/proc/self/fd/{fd}"))


@contextmanager
def open_dir(path: Path, allowed: Callable[[Path], bool], *, create: bool = False) -> Iterator[int]:
    """A descriptor of directory ``path`` (a real path), walked without following any symlink;
    ``create`` makes missing components (0o755)."""
    fd = os.open("/", _DIR_FLAGS)
    try:
        for part in path.parts[1:]:
            try:
                next_fd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(part, 0o755, dir_fd=fd)
                next_fd = os.open(part, _DIR_FLAGS, dir_fd=fd)
                _own_like(next_fd, os.fstat(fd))
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                raise UnsafeFile(f"{path} changed while it was being opened (a symlink or a file on the way)") from None
            os.close(fd)
            fd = next_fd
        if not allowed(_opened_path(fd)):
            raise UnsafeFile(f"access denied: {path} moved outside what the tools may touch")
        yield fd
    finally:
        os.close(fd)


def _regular(fd: int, name: str) -> os.stat_result:
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(name)
    if not stat.S_ISREG(info.st_mode):
        raise UnsafeFile(f"{name} is not a regular file (a FIFO, device or socket); file tools read files only")
    return info


@contextmanager
def open_for_reading(path: Path, allowed: Callable[[Path], bool], max_bytes: int) -> Iterator[int]:
    """A read descriptor of the regular file ``path``, no bigger than ``max_bytes``."""
    with open_dir(path.parent, allowed) as dfd:
        try:
            fd = os.open(path.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # the file itself is now a symlink
                raise UnsafeFile(f"{path.name} changed into a symlink while it was being opened") from None
            raise
    try:
        info = _regular(fd, path.name)
        if info.st_size > max_bytes:
            raise UnsafeFile(
                f"{path.name} is {info.st_size} bytes, more than the {max_bytes} file tools read "
                "(tools.files.max_file_bytes)"
            )
        os.set_blocking(fd, True)
        yield fd
    finally:
        os.close(fd)


def _writable_target(dfd: int, name: str) -> os.stat_result | None:
    """The existing file ``name`` may be replaced or appended to (regular, one link), or None if absent."""
    try:
        info = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        raise UnsafeFile(f"{name} is a symlink; file tools do not write through symlinks")
    if not stat.S_ISREG(info.st_mode):
        raise UnsafeFile(f"{name} is not a regular file; file tools write files only")
    if info.st_nlink > 1:
        raise UnsafeFile(f"{name} has other hard links; file tools do not write to a hard-linked file")
    return info


def replace_file(path: Path, data: bytes, allowed: Callable[[Path], bool], new_mode: int) -> None:
    """Replace ``path`` with ``data`` atomically (temp file, fsync, rename in the same directory),
    keeping its permissions; parent directories are created."""
    with open_dir(path.parent, allowed, create=True) as dfd:
        existing = _writable_target(dfd, path.name)
        mode = stat.S_IMODE(existing.st_mode) if existing else new_mode
        temp = f".{path.name}.{os.urandom(6).hex()}.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dfd)
        try:
            try:
                _write_all(fd, data)
                os.fchmod(fd, mode)
                _own_like(fd, existing or os.fstat(dfd))
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, path.name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            try:
                os.unlink(temp, dir_fd=dfd)
            except FileNotFoundError:
                pass
            raise
        os.fsync(dfd)


def append_to_file(path: Path, data: bytes, allowed: Callable[[Path], bool], new_mode: int) -> None:
    """One ``O_APPEND`` write (concurrent appenders never interleave inside it); created if missing."""
    with open_dir(path.parent, allowed, create=True) as dfd:
        _writable_target(dfd, path.name)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        fd = os.open(path.name, flags, new_mode, dir_fd=dfd)
        folder = os.fstat(dfd)
    try:
        info = _regular(fd, path.name)
        if info.st_size == 0:
            _own_like(fd, folder)  # just made (or empty): the folder's owner's
        if info.st_nlink > 1:
            raise UnsafeFile(f"{path.name} has other hard links; file tools do not write to a hard-linked file")
        _write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _own_like(fd: int, model: os.stat_result) -> None:
    """A root gateway gives what it makes the owner of ``model`` (the file replaced, else its folder): the
    workspace belongs to the user exec runs commands as (``picoora.tools.exec_user``), who must be able to
    change what the file tools wrote."""
    if os.geteuid() == 0 and model.st_uid != 0:
        os.fchown(fd, model.st_uid, model.st_gid)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
