"""Catches a test that reads the real HOME (a developer's ``~/.picooraclaw``, ``~/.picoora``, dotfiles).

The suite's autouse fixture gives every test a HOME of its own; this guard is the proof that nothing reads
the real one anyway (code that captured the HOME before the fixture ran, a path built from ``pwd``). A
Python audit hook sees every file open and directory listing of the test process; while a test runs, any
of them under the real HOME is recorded, and the fixture fails the test with the paths. Subprocesses get
the test's HOME in their environment.

Python's own installation, the checkout, the temporary folder and Playwright's browsers may live under
the real HOME (pyenv, a clone in ``~/src``, ``~/.cache/ms-playwright``): they are not the user's data, so
reads there are not counted.
"""

from __future__ import annotations

import os
import site
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REAL_HOME = os.path.expanduser("~")  # read when the suite starts, before any fixture replaces HOME
# Playwright finds its browsers under ~/.cache; the tests that drive one are given this real path.
PLAYWRIGHT_BROWSERS = os.environ.get("PLAYWRIGHT_BROWSERS_PATH") or os.path.join(REAL_HOME, ".cache", "ms-playwright")
_EVENTS = frozenset({"open", "os.listdir", "os.scandir", "glob.glob", "os.chdir"})
_REPO = str(Path(__file__).resolve().parent.parent)


def _prefixes(paths: list[str]) -> tuple[str, ...]:
    found = set()
    for path in paths:
        if path:
            found.update({os.path.abspath(path), os.path.realpath(path)})
    return tuple(p.rstrip(os.sep) + os.sep for p in found)


_WATCHED = _prefixes([REAL_HOME])
_EXEMPT = _prefixes([sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, site.getuserbase(),
                     _REPO, tempfile.gettempdir(), PLAYWRIGHT_BROWSERS])
_hits: list[str] | None = None  # a list while a test runs


def _audit(event: str, args: tuple) -> None:
    if _hits is None or event not in _EVENTS or not args:
        return
    path = args[0]
    if path is None or isinstance(path, int):  # a descriptor: its directory was checked when it was opened
        return
    try:
        full = os.path.abspath(os.fsdecode(path)) + os.sep
    except (TypeError, ValueError):
        return
    if full.startswith(_WATCHED) and not full.startswith(_EXEMPT):
        _hits.append(f"{event} {full.rstrip(os.sep)}")


sys.addaudithook(_audit)  # a hook cannot be removed; it records only inside ``watching``


@contextmanager
def watching() -> Iterator[list[str]]:
    """The reads under the real HOME made inside the block."""
    global _hits
    outer, _hits = _hits, []
    try:
        yield _hits
    finally:
        _hits = outer
