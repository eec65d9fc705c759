"""Finding and reading a PicoOraClaw (Go) home: ``~/.picooraclaw`` (or a picoclaw one) with its ``config.json``
and workspace. Reading never fails on bad content: what cannot be read is a problem in the report."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from picoora.migrate.report import Section

HOME_NAMES = (".picooraclaw", ".picoclaw")  # PicoOraClaw's home, then its parent project's (sipeed/picoclaw)
MAX_JSON_BYTES = 20_000_000  # a config, session or cron store larger than this is not read (a broken file)
MAX_TEXT_BYTES = 5_000_000  # a prompt, note or MEMORY.md larger than this is not read


@dataclass
class GoHome:
    root: Path
    workspace: Path
    config: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # what could not be read, for the report


def find_go_home(user_home: Path | None = None) -> Path | None:
    """The first Go home under ``user_home`` (default: the user's) that holds a config or a workspace."""
    base = user_home or Path.home()
    for name in HOME_NAMES:
        candidate = base / name
        if (candidate / "config.json").is_file() or (candidate / "workspace").is_dir():
            return candidate
    return None


def read_go_home(root: Path) -> GoHome:
    """The Go home at ``root``: its config (empty when missing or unreadable) and its workspace folder
    (``agents.defaults.workspace`` when that folder exists, else ``root/workspace`` as Go's default)."""
    home = GoHome(root=root, workspace=root / "workspace")
    config_file = root / "config.json"
    if config_file.is_file():
        data, problem = read_json(config_file)
        if problem:
            home.problems.append(problem)
        elif not isinstance(data, dict):
            home.problems.append(f"{config_file}: not a JSON object; the config was not migrated")
        else:
            home.config = data
    agents = home.config.get("agents")
    defaults = agents.get("defaults") if isinstance(agents, dict) else None
    raw = defaults.get("workspace") if isinstance(defaults, dict) else None
    if isinstance(raw, str) and raw.strip():
        path = configured_workspace(root, raw.strip())
        if path is not None and not path.is_symlink() and path.is_dir():
            home.workspace = path
    return home


def configured_workspace(root: Path, raw: str) -> Path | None:
    """``agents.defaults.workspace`` as the Go version read it on the machine that wrote it: ``~`` is the
    home the Go home lives in (the parent of ``.picooraclaw``), never this process's HOME, and a home
    copied elsewhere (``--from /backup/go``) keeps its own ``~/.picooraclaw/...`` under ``root``.
    None for ``~other_user`` paths, which name a home this run cannot know."""
    if raw.startswith("~") and not (raw == "~" or raw.startswith("~/")):
        return None
    if not raw.startswith("~"):
        return Path(raw)
    parts = Path(raw[1:].lstrip("/")).parts
    if parts and parts[0] in HOME_NAMES:
        return root.joinpath(*parts[1:])
    return root.parent.joinpath(*parts)


def read_json(path: Path) -> tuple[Any, str | None]:
    """(the parsed file, None) or (None, what is wrong with it)."""
    try:
        if path.is_symlink():
            return None, f"{path}: a symbolic link, not followed"
        size = path.stat().st_size
        if size > MAX_JSON_BYTES:
            return None, f"{path}: {size} bytes, larger than {MAX_JSON_BYTES}; not read"
        return json.loads(path.read_text(encoding="utf-8-sig")), None
    except OSError as err:
        return None, f"{path}: cannot be read ({err.strerror or err})"
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        return None, f"{path}: not valid JSON ({err})"


def read_text(path: Path) -> tuple[str | None, str | None]:
    """(the text, None); (None, None) when there is no such file; (None, why) for a link, a file too large
    or one that is not UTF-8 text. Links are never followed: one could bring any file of the machine."""
    if not path.exists() and not path.is_symlink():
        return None, None
    try:
        if path.is_symlink() or not path.is_file():
            return None, "a symbolic link or not a file; not followed"
        if path.stat().st_size > MAX_TEXT_BYTES:
            return None, f"larger than {MAX_TEXT_BYTES} bytes; not read"
        return path.read_text(encoding="utf-8-sig"), None
    except OSError as err:
        return None, f"cannot be read ({err.strerror or err})"
    except UnicodeDecodeError:
        return None, "not UTF-8 text"


def read_listed(path: Path, section: Section) -> str | None:
    """:func:`read_text`, with a file that cannot be used listed in ``section`` as not migrated."""
    text, problem = read_text(path)
    if problem:
        section.skipped(path.name, problem)
    return text
