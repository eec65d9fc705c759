"""How this install's ``picoora`` command is typed, for advice printed to the user.

The quick start installs into ``.venv`` without activating it, so ``picoora`` alone may be another
install or nothing at all: advice says ``.venv/bin/picoora`` then, and plain ``picoora`` only when that
is what the shell would run."""

from __future__ import annotations

import os
import shutil
import sys


def picoora_command() -> str:
    """``picoora`` when the shell finds this very install under that name, else how to reach it: the path as
    it was typed, the script beside this interpreter, or ``python -m picoora``."""
    argv0 = sys.argv[0]
    typed = argv0 if os.path.basename(argv0) == "picoora" else ""
    beside = os.path.join(os.path.dirname(sys.executable), "picoora")
    this = typed or (beside if os.access(beside, os.X_OK) else "")
    found = shutil.which("picoora")
    if this and found and os.path.realpath(found) == os.path.realpath(this):
        return "picoora"
    if not this:
        return f"{_short(sys.executable)} -m picoora"
    return _short(this)


def _short(path: str) -> str:
    """``path`` relative to the current folder when it is inside it (``.venv/bin/picoora``), else absolute."""
    full = os.path.abspath(path)
    relative = os.path.relpath(full)
    return relative if not relative.startswith("..") else full
