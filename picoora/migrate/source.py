"""Finding and reading a PicoOraClaw (Go) home: ``~/.picooraclaw`` (or a picoclaw one) with its ``config.json``
and workspace. Reading never fails on bad content: what cannot be read is a problem in the report."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from picoora.safe_fs import UnsafeFile, open_for_reading

if TYPE_CHECKING:
    from picoora.migrate.report import Section

HOME_NAMES = (".picooraclaw", ".picoclaw")  # PicoOraClaw's home, then its parent project's (sipeed/picoclaw)
MAX_JSON_BYTES = 20_000_000  # a config, session or cron store larger than this is not read (a broken file)
MAX_TEXT_BYTES = 5_000_000  # a prompt, note or MEMORY.md larger than this is not read
MAX_JSON_DEPTH = 64  # a Go config, session or job is a few levels deep


@dataclass
class GoHome:
    root: Path
    workspace: Path
    config: dict[str, Any] = field(default_factory=dict)
    config_cut: list[str] = field(default_factory=list)  # config keys nested too deep: left out, the rest read
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
    # The home's own place is the user's choice (links included); below it nothing is followed (read_bytes).
    root = root.resolve()
    home = GoHome(root=root, workspace=root / "workspace")
    config_file = root / "config.json"
    if config_file.is_file():
        config, cut, problem = read_config(config_file)
        if problem:
            home.problems.append(problem)
        else:
            home.config, home.config_cut = config, cut
    agents = home.config.get("agents")
    defaults = agents.get("defaults") if isinstance(agents, dict) else None
    raw = defaults.get("workspace") if isinstance(defaults, dict) else None
    if isinstance(raw, str) and raw.strip():
        path = configured_workspace(root, raw.strip())
        if path is not None and not path.is_symlink() and path.is_dir():
            home.workspace = path.parent.resolve() / path.name
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


def read_bytes(path: Path, max_bytes: int) -> tuple[bytes | None, str | None]:
    """(the content, None); (None, None) when there is no such file; (None, why) for a file too large, not a
    regular file, or reached through a symbolic link at any level: the tools' safe file access walks the
    path from ``/`` without following one (a linked ``memory`` folder could bring any file of the machine)."""
    try:
        with open_for_reading(path, lambda _real: True, max_bytes) as fd, os.fdopen(os.dup(fd), "rb") as file:
            return file.read(max_bytes + 1), None
    except FileNotFoundError:
        return None, None
    except (UnsafeFile, IsADirectoryError, NotADirectoryError) as err:
        return None, _why_unsafe(err, max_bytes)
    except OSError as err:
        return None, f"cannot be read ({err.strerror or err})"


def _why_unsafe(err: Exception, max_bytes: int) -> str:
    if isinstance(err, UnsafeFile) and "bytes, more than" in str(err):
        return f"larger than {max_bytes} bytes; not read"
    return "a symbolic link (at some level of its path) or not a file; not followed"


def read_json(path: Path) -> tuple[Any, str | None]:
    """(the parsed file, None) or (None, what is wrong with it)."""
    raw, problem = read_bytes(path, MAX_JSON_BYTES)
    if raw is None:
        return None, f"{path}: {problem or 'cannot be read (no such file)'}"
    return parse_json(path, raw)


def parse_json(path: Path, raw: bytes) -> tuple[Any, str | None]:
    """JSON no deeper than MAX_JSON_DEPTH: deeper nesting is no config, session or job, and would exhaust
    the recursion of the code that walks it."""
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except RecursionError:
        return None, f"{path}: nested deeper than {MAX_JSON_DEPTH} levels; not read"
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        return None, f"{path}: not valid JSON ({err})"
    if _depth(data) > MAX_JSON_DEPTH:
        return None, f"{path}: nested deeper than {MAX_JSON_DEPTH} levels; not read"
    return data, None


def read_config(path: Path) -> tuple[dict[str, Any], list[str], str | None]:
    """(the config, the dotted keys left out, None) or ({}, [], what is wrong with it). The config is read
    key by key: a key nested deeper than MAX_JSON_DEPTH is left out (and named), not the whole file, since
    one odd section (``devices``) must not cost the provider, keys and channels."""
    raw, problem = read_bytes(path, MAX_JSON_BYTES)
    if raw is None:
        return {}, [], f"{path}: {problem or 'cannot be read (no such file)'}"
    try:
        text = raw.decode("utf-8-sig")
        if not text.lstrip().startswith("{"):
            json.loads(text)  # valid JSON or not: said either way
            return {}, [], f"{path}: not a JSON object; the config was not migrated"
        data, cut = _object_by_key(text)
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        return {}, [], f"{path}: not valid JSON ({err})"
    return data, cut + _prune(data, ()), None


def _after_space(text: str, at: int) -> int:
    while text[at:at + 1] in (" ", "\t", "\n", "\r"):
        at += 1
    return at


def _object_by_key(text: str) -> tuple[dict[str, Any], list[str]]:
    """A JSON object decoded one top-level value at a time; a value too deep for the decoder is skipped."""
    decoder, data, cut = json.JSONDecoder(), dict[str, Any](), list[str]()
    at = _after_space(text, text.index("{") + 1)
    while text[at:at + 1] != "}":
        key, at = decoder.raw_decode(text, at)
        at = _after_space(text, at)
        if not isinstance(key, str) or text[at:at + 1] != ":":
            raise ValueError(f"expected a key and ':' at character {at}")
        at = _after_space(text, at + 1)
        try:
            data[key], at = decoder.raw_decode(text, at)
        except RecursionError:
            data.pop(key, None)
            cut.append(key)
            at = _past_value(text, at)
        at = _after_space(text, at)
        if text[at:at + 1] == ",":
            at = _after_space(text, at + 1)
        elif text[at:at + 1] != "}":
            raise ValueError(f"expected ',' or '}}' at character {at}")
    if text[at + 1:].strip():
        raise ValueError(f"extra data at character {at + 1}")
    return data, cut


def _past_value(text: str, at: int) -> int:
    """Where the array or object starting at ``at`` ends (brackets inside strings do not count)."""
    depth, in_string, i = 0, False, at
    while i < len(text):
        char = text[i]
        if in_string:
            if char == "\\":
                i += 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError("an array or object that never ends")


def _prune(node: dict[str, Any], path: tuple[str, ...]) -> list[str]:
    """Leave out each key whose value nests deeper than MAX_JSON_DEPTH, as close to the top as the Go
    config's own sections go (three levels: ``tools.web.brave``), so its neighbours stay."""
    cut: list[str] = []
    for key, value in list(node.items()):
        where = (*path, str(key))
        if len(path) + 1 + _depth(value) <= MAX_JSON_DEPTH:
            continue
        if isinstance(value, dict) and len(where) < 3:
            cut += _prune(value, where)
        else:
            del node[key]
            cut.append(".".join(where))
    return cut


def _depth(data: Any) -> int:
    """How deeply lists and objects nest in ``data`` (walked without recursion)."""
    deepest, todo = 0, [(data, 1)]
    while todo:
        node, level = todo.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, level)
            if deepest > MAX_JSON_DEPTH:
                return deepest
            todo += [(child, level + 1) for child in (node.values() if isinstance(node, dict) else node)]
    return deepest


def read_text(path: Path) -> tuple[str | None, str | None]:
    """(the text, None); (None, None) when there is no such file; (None, why) for a link, a file too large
    or one that is not UTF-8 text."""
    raw, problem = read_bytes(path, MAX_TEXT_BYTES)
    if raw is None:
        return None, problem
    try:
        return raw.decode("utf-8-sig"), None
    except UnicodeDecodeError:
        return None, "not UTF-8 text"


def read_listed(path: Path, section: Section) -> str | None:
    """:func:`read_text`, with a file that cannot be used listed in ``section`` as not migrated."""
    text, problem = read_text(path)
    if problem:
        section.skipped(path.name, problem)
    return text
