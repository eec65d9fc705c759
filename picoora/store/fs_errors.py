"""File-system failures of the file backend, as ``StoreError`` lines a person can act on.

A full disk, a read-only or vanished workspace, a file where a folder should be: the operating system
says so with an ``OSError`` whose errno tells which, and every store call can meet one. Rather than a
``try`` in each of the backend's forty methods, ``report_os_errors`` wraps the public methods of the
class once and turns what they raise into a ``StoreError`` naming the file and the fix. Opening a
workspace that cannot be used at all is ``UnusableWorkspace``: a setting to change (exit 2), not a
passing failure.
"""

from __future__ import annotations

import errno
import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from picoora.store.base import StoreError

T = TypeVar("T")

_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
_NOT_WRITABLE = {errno.EROFS, errno.EACCES, errno.EPERM}
_WRONG_KIND = {errno.ENOTDIR, errno.EISDIR, errno.EEXIST}


class UnusableWorkspace(StoreError):
    """The configured workspace cannot be created or opened (a file, an impossible path, read-only)."""


def describe_os_error(err: OSError, workspace: Path) -> str:
    """One line: which file, what the system said, what to do about it."""
    where = err.filename or workspace
    reason = err.strerror or str(err)
    if err.errno in _FULL:
        return f"cannot write {where}: the disk is full ({reason}); free some space and try again"
    if err.errno in _NOT_WRITABLE:
        return (f"cannot write {where}: {reason}; make the workspace writable, or set agents.defaults.workspace "
                "to a folder you can write")
    if err.errno in _WRONG_KIND:
        return (f"cannot use {where}: {reason}; a file stands where picoora keeps a folder (or the reverse): "
                "move it away")
    return f"cannot use {where}: {reason}"


def unusable_workspace(err: OSError, workspace: Path) -> UnusableWorkspace:
    reason = err.strerror or str(err)
    return UnusableWorkspace(
        f"the workspace {workspace} cannot be used ({reason}{': ' + str(err.filename) if err.filename else ''}); "
        "set agents.defaults.workspace to a folder picoora can create and write, or fix this one"
    )


def _wrap(method: Callable[..., T], opening: bool) -> Callable[..., T]:
    @functools.wraps(method)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> T:
        try:
            return method(self, *args, **kwargs)
        except OSError as err:
            if opening:
                raise unusable_workspace(err, self.workspace) from None
            raise StoreError(describe_os_error(err, self.workspace)) from None
        except RecursionError:  # json.loads of a document nested thousands deep
            raise StoreError(f"a file in {self.workspace} is nested too deeply to read: move the damaged file "
                             "away (the store keeps its files under .picoora/ there)") from None

    return guarded


def report_os_errors(cls: type[T]) -> type[T]:
    """Class decorator: public methods (and ``__init__``) raise ``StoreError`` instead of ``OSError``."""
    for name, member in list(vars(cls).items()):
        if inspect.isfunction(member) and (name == "__init__" or not name.startswith("_")):
            setattr(cls, name, _wrap(member, opening=name == "__init__"))
    return cls
