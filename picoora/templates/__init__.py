"""The workspace templates (IDENTITY.md, SOUL.md, ...) and how onboarding installs them.

A file the user edited is never overwritten unless forced. To tell an edit from an untouched older
template, the sha256 of every file written is kept in ``.picoora-templates.json`` in the workspace:
a file whose content still has the recorded hash is ours to update; any other content is the user's.
An edited file that ``force`` replaces is first copied next to it (``USER.md.bak``), so nothing the
user wrote is lost.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

TEMPLATE_DIR = Path(__file__).parent / "workspace"
MANIFEST_NAME = ".picoora-templates.json"

Outcome = Literal["created", "updated", "unchanged", "kept", "overwritten"]


@dataclass
class TemplateResult:
    path: str  # relative to the workspace, "/"-separated
    outcome: Outcome


def template_files() -> dict[str, bytes]:
    """Relative path -> content of every template file."""
    return {
        path.relative_to(TEMPLATE_DIR).as_posix(): path.read_bytes()
        for path in sorted(TEMPLATE_DIR.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def install_workspace(workspace: Path, *, force: bool = False) -> list[TemplateResult]:
    """Write the templates into ``workspace``, keeping the user's edits unless ``force``."""
    from picoora.atomic import atomic_write_bytes

    manifest_path = workspace / MANIFEST_NAME
    manifest = _read_manifest(manifest_path)
    results = []
    for relative, content in template_files().items():
        target = workspace / relative
        current = target.read_bytes() if target.is_file() else None
        if current is None:
            outcome: Outcome = "created"
        elif current == content:
            outcome = "unchanged"
        elif manifest.get(relative) == _digest(current):
            outcome = "updated"  # an older template the user never touched
        elif force:
            outcome = "overwritten"
            atomic_write_bytes(backup_path(target), current)
        else:
            results.append(TemplateResult(relative, "kept"))
            continue
        if outcome != "unchanged":
            atomic_write_bytes(target, content)
        manifest[relative] = _digest(content)
        results.append(TemplateResult(relative, outcome))
    atomic_write_bytes(manifest_path, (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode())
    return results


def backup_path(target: Path) -> Path:
    """``NAME.bak``, or ``NAME.bak.2``, ... when an older backup holds something else (never replaced)."""
    candidate, number = target.with_name(target.name + ".bak"), 1
    while candidate.exists():
        number += 1
        candidate = target.with_name(f"{target.name}.bak.{number}")
    return candidate


def _digest(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def _read_manifest(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # missing or damaged: every differing file then counts as edited
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}
